# The dev server and push notifications (docs/push.md, "The dev server"): without
# BANK_PUSH_FCM_* it says push is off; with BANK_PUSH_FCM_PROJECT, BANK_PUSH_FCM_URL and
# BANK_PUSH_FCM_CREDENTIALS (a service-account file whose token_uri is the fake's) it says
# push is on, and the demo customer, signed in from two devices and onboarded, gets one
# message per device for a matching notice, and nothing more for the same notice again.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Cwd qw(getcwd);
use Bank::Test qw(:DEFAULT free_port slurp);
use Bank::Push;

my $top  = getcwd();    # run-tests runs the suite from the checkout
my $dir  = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
my $run  = "$dir/run";
my $port = free_port();
my $url  = "http://127.0.0.1:$port";

local $ENV{PORT}         = $port;
local $ENV{BANK_RUN_DIR} = $run;
local $ENV{BANK_DB}      = 'sqlite3';
delete local $ENV{BANK_PG_PARAMS};
delete local $ENV{$_} for qw(BANK_PUSH_FCM_PROJECT BANK_PUSH_FCM_URL BANK_PUSH_FCM_CREDENTIALS);
# BANK_RUN_DIR given again: the file's local values are gone by the time END runs
END { system("BANK_RUN_DIR='$run' '$top/scripts/devserver' stop >/dev/null 2>&1") if $run && -e "$run/httpd.pid" }

my $out = `'$top/scripts/devserver' start 2>&1`;
is($?, 0, 'dev server without push: started') or diag($out);
like($out, qr/^Push notifications: off \(BANK_PUSH_FCM_PROJECT and BANK_PUSH_FCM_CREDENTIALS/m,
    'the banner says push is off');
unlike(slurp("$run/httpd.conf"), qr/^BankPush/m, 'no BankPush in its httpd.conf');
system("'$top/scripts/devserver' stop >/dev/null 2>&1");

my $fake = fake_start();
local $ENV{BANK_PUSH_FCM_PROJECT} = $PROJECT;
$out = `'$top/scripts/devserver' start 2>&1`;
isnt($?, 0, 'a project without credentials stops the start');
like($out, qr/BANK_PUSH_FCM_PROJECT needs BANK_PUSH_FCM_CREDENTIALS/, 'and says why');

local $ENV{BANK_PUSH_FCM_URL}         = $fake->{url};
local $ENV{BANK_PUSH_FCM_CREDENTIALS} = $fake->{credentials};
$out = `'$top/scripts/devserver' start 2>&1`;
my $started = is($?, 0, 'dev server with push: started') or diag($out);
like($out, qr/^Push notifications: on, FCM project \Q$PROJECT\E at \Q$fake->{url}\E/m,
    'the banner says push is on, and where');
SKIP: {
    skip 'the dev server did not start', 8 unless $started;
    my $ctl = "BANK_RUN_DIR='$run' '$top/scripts/bankctl'";
    my @devices = map { "dev-device-$$-$_" } 1 .. 2;
    for my $d (@devices) {
        my $res = json_request('POST', "$url/auth/sign_in",
            headers => { Authorization => 'Bearer dev-client-key' },
            body => { email => 'demo@example.com', password => 'demo-password', deviceToken => $d });
        is($res->code, 200, "signed in from $d");
    }
    chomp(my $token = `$ctl token issue --email demo\@example.com`);
    my $res = json_request('POST', "$url/onboarding/bvn", headers => { Authorization => "Bearer $token" },
        body => { bvn_number => '22212345678', date_of_birth => '1990-04-12' });
    is($res->code, 200, 'the demo customer is onboarded') or diag($res->content);
    my $wallet = (decode_body($res) // {})->{body}{customer}{account}{details}{accountId} // '';
    my %n = (service => 'payments', type => 'fund_transfer', data => { amount => 5000,
        charges => 10.75, currency => 'NGN', narration => 'Dev', receiverAccountName => 'ADA OBI',
        receiverAccountNumber => '0000000019', receiverBankCode => '999', sessionId => '1',
        statusCode => 'T100', statusMessage => 'Transaction successful',
        transactionReference => "TRF-DEV-$$", walletId => $wallet });
    for my $round (1, 2) {
        $res = json_request('POST', "$url/webhook/partner",
            headers => { Authorization => 'Bearer dev-webhook-secret' }, body => \%n);
        is($res->code, 200, "notice $round answered 200");
        sleep 2 if $round == 2;
    }
    ok(wait_for(2, sub { (grep { fake_calls($fake, $_) } @devices) == 2 }),
        'one message per device');
    is(scalar(map { fake_calls($fake, $_) } @devices), 2, 'the repeated notice sent nothing more');
}
system("'$top/scripts/devserver' stop >/dev/null 2>&1");
fake_stop($fake);
done_testing();
