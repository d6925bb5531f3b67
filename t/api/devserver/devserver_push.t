# The dev server and push notifications (docs/push.md, "The dev server"): without
# BANK_PUSH_FCM_* it says push is off; with BANK_PUSH_FCM_PROJECT, BANK_PUSH_FCM_URL and
# BANK_PUSH_FCM_CREDENTIALS (a service-account file whose token_uri is the fake's) it says
# push is on, and the demo customer, signed in from two devices and onboarded, gets one
# message per device for a matching notice, and nothing more for the same notice again.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(:DEFAULT slurp);
use Bank::Push;
use Bank::DevServer;

my $d = dev_server(db => 'sqlite3',
    env => { map { $_ => undef } qw(BANK_PUSH_FCM_PROJECT BANK_PUSH_FCM_URL BANK_PUSH_FCM_CREDENTIALS) });
my ($top, $run, $port, $url) = @$d{qw(top run port url)};

my $out = dev_start();
is($?, 0, 'dev server without push: started') or diag($out);
like($out, qr/^Push notifications: off \(BANK_PUSH_FCM_PROJECT and BANK_PUSH_FCM_CREDENTIALS/m,
    'the banner says push is off');
unlike(slurp("$run/httpd.conf"), qr/^BankPush/m, 'no BankPush in its httpd.conf');
dev_stop();

my $fake = fake_start();
local $ENV{BANK_PUSH_FCM_PROJECT} = $PROJECT;
$out = dev_start();
isnt($?, 0, 'a project without credentials stops the start');
like($out, qr/BANK_PUSH_FCM_PROJECT needs BANK_PUSH_FCM_CREDENTIALS/, 'and says why');

local $ENV{BANK_PUSH_FCM_URL}         = $fake->{url};
local $ENV{BANK_PUSH_FCM_CREDENTIALS} = $fake->{credentials};
$out = dev_start();
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
dev_stop();
fake_stop($fake);
done_testing();
