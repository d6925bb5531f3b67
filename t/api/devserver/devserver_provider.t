# The dev server with an identity provider (docs/operations.md, docs/identity.md):
# BANK_BVN_PROVIDER, BANK_BVN_PROVIDER_URL, BANK_BVN_PROVIDER_APP_ID and
# BANK_BVN_PROVIDER_KEY configure it, no demo BVN records are loaded, and the demo customer
# verifies through the provider (here the suite's fake, t/fake/idp.cgi, on the test server).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(:DEFAULT slurp);
use Bank::DevServer;

my $d = dev_server(db => 'sqlite3', env => { BANK_BVN_PROVIDER => 'bogus' });
my ($top, $run, $port) = @$d{qw(top run port)};
my $fake = 'http://127.0.0.1:' . Apache::Test::vars('port') . '/fake/ok';

my $out = dev_start();
isnt($?, 0, 'an unknown BANK_BVN_PROVIDER stops the start');
like($out, qr/BANK_BVN_PROVIDER=bogus is not supported \(table, dojah or prembly\)/, 'and says why');

$ENV{BANK_BVN_PROVIDER} = 'prembly';
$out = dev_start();
isnt($?, 0, 'a provider without credentials stops the start');
like($out, qr/needs BANK_BVN_PROVIDER_APP_ID and BANK_BVN_PROVIDER_KEY/, 'and says why');

local $ENV{BANK_BVN_PROVIDER_URL}    = $fake;
local $ENV{BANK_BVN_PROVIDER_APP_ID} = 'test-app-id';
local $ENV{BANK_BVN_PROVIDER_KEY}    = 'test-idp-secret-1';
$out = dev_start();
my $started = is($?, 0, 'dev server with prembly: started') or diag($out);

if ($started) {
    my $conf = slurp("$run/httpd.conf");
    like($conf, qr/^BankBvnProvider prembly \Q$fake\E$/m, 'httpd.conf: BankBvnProvider');
    like($conf, qr/^BankBvnProviderCredentials "test-app-id" "test-idp-secret-1"$/m,
        'httpd.conf: BankBvnProviderCredentials');
    like($out, qr/Verify a BVN: asks prembly \(\Q$fake\E\)/, 'the banner says who is asked');
    my $ctl = "BANK_RUN_DIR='$run' '$top/scripts/bankctl'";
    is(`sqlite3 '$run/bank.db' 'SELECT count(*) FROM bvn_records'`,
        "0\n", 'no demo BVN records loaded');

    # The demo customer (Ada Obi), known to the fake provider under a fresh BVN.
    my $bvn = sprintf '%06d%05d', $$ % 1000000, 99999;
    open my $f, '>', "$ENV{BANK_TEST_ROOT}/fake-ids/$bvn" or die $!;
    print $f "Ada||Obi|1990-04-12\n";
    close $f;
    chomp(my $token = `$ctl token issue --email demo\@example.com`);
    my $res = json_request('POST', "http://127.0.0.1:$port/onboarding/bvn",
        headers => { Authorization => "Bearer $token" },
        body    => { bvn_number => $bvn, date_of_birth => '1990-04-12' });
    is($res->code, 200, 'the demo customer verifies through the provider') or diag($res->content);
    is((decode_body($res) || {})->{message}, 'BVN verified successfully', 'first success');
    like(`$ctl bvn show --bvn $bvn`, qr/"source":"prembly"/,
        'the match is kept with its source (bankctl decrypts the record)');
    dev_stop();
}

done_testing();
