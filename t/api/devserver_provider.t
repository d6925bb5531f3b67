# The dev server with an identity provider (docs/operations.md, docs/identity.md):
# BANK_BVN_PROVIDER, BANK_BVN_PROVIDER_URL, BANK_BVN_PROVIDER_APP_ID and
# BANK_BVN_PROVIDER_KEY configure it, no demo BVN records are loaded, and the demo customer
# verifies through the provider (here the suite's fake, t/fake/idp.cgi, on the test server).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Cwd qw(getcwd);
use Bank::Test qw(:DEFAULT free_port slurp);

my $top  = getcwd();    # run-tests runs the suite from the checkout
my $dir  = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
my $run  = "$dir/run";
my $port = free_port();
my $fake = 'http://127.0.0.1:' . Apache::Test::vars('port') . '/fake/ok';

local $ENV{PORT}                     = $port;
local $ENV{BANK_RUN_DIR}             = $run;
local $ENV{BANK_DB}                  = 'sqlite3';
local $ENV{BANK_BVN_PROVIDER}        = 'bogus';
delete local $ENV{BANK_PG_PARAMS};

my $out = `'$top/scripts/devserver' start 2>&1`;
isnt($?, 0, 'an unknown BANK_BVN_PROVIDER stops the start');
like($out, qr/BANK_BVN_PROVIDER=bogus is not supported \(table, dojah or prembly\)/, 'and says why');

$ENV{BANK_BVN_PROVIDER} = 'prembly';
$out = `'$top/scripts/devserver' start 2>&1`;
isnt($?, 0, 'a provider without credentials stops the start');
like($out, qr/needs BANK_BVN_PROVIDER_APP_ID and BANK_BVN_PROVIDER_KEY/, 'and says why');

local $ENV{BANK_BVN_PROVIDER_URL}    = $fake;
local $ENV{BANK_BVN_PROVIDER_APP_ID} = 'test-app-id';
local $ENV{BANK_BVN_PROVIDER_KEY}    = 'test-idp-secret-1';
$out = `'$top/scripts/devserver' start 2>&1`;
my $started = is($?, 0, 'dev server with prembly: started') or diag($out);
# BANK_RUN_DIR given again: the file's local values are gone by the time END runs
END { system("BANK_RUN_DIR='$run' '$top/scripts/devserver' stop >/dev/null 2>&1") if $run && -e "$run/httpd.pid" }

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
    system("'$top/scripts/devserver' stop >/dev/null 2>&1");
}

done_testing();
