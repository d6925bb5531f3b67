# Whose phone hears what (CONTRACT C6, C15; docs/push.md, "Whose phone hears what"): a device
# token belongs to the customer who signed in on it last; signing out removes the signed-out
# session's device; a phone taken by another customer's sign-in takes the first customer's
# unsent messages with it; at most BankMaxDevices devices per customer, the least recently
# seen dropped. Through a server with BankPush and the fake FCM (t/fake/fcm.py), so what is
# checked is what reached the phone.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(:DEFAULT);
use Bank::Webhook;
use Bank::Push;
use Bank::SignIn qw($CLIENT_KEY);

my $fake = fake_start();
my $srv  = push_server($fake, 'BankPushAttempts 3');

# Signs $c in on $device (at $path): the bearer token.
sub sign_in_on {
    my ($c, $device, $path) = @_;
    my $res = json_request('POST', $path || '/auth/sign_in',
        headers => { Authorization => "Bearer $CLIENT_KEY" },
        body    => { email => $c->{email}, password => $c->{password}, deviceToken => $device });
    is($res->code, 200, "sign-in on $device: 200") or diag($res->content);
    return (decode_body($res) // {})->{body}{token}{token};
}

sub sign_out {
    my ($token, $what) = @_;
    my $res = json_request('POST', '/auth/sign_out', headers => { Authorization => "Bearer $token" });
    is($res->code, 200, "$what: sign-out 200") or diag($res->content);
}

# The customers holding $device, sorted.
sub holders {
    my ($device) = @_;
    return join ',', sort split /\n/,
      db_value("SELECT customer_id FROM devices WHERE device_token = '$device'");
}

sub devices_of {
    my ($c) = @_;
    return join ',', sort split /\n/,
      db_value("SELECT device_token FROM devices WHERE customer_id = '$c->{id}'");
}

# A notice for $c's wallet, delivered to the push server: its reference.
sub notice_for {
    my ($c, %o) = @_;
    my $n   = notice(walletId => $c->{wallet}, %o);
    my $res = $srv->request(delivery($n));
    is($res->code, 200, 'notice answered 200') or diag($res->content);
    return $n->{data}{transactionReference};
}

# Every message the fake FCM got for $device, as text.
sub heard { return join "\n", map { JSON::PP->new->canonical->encode($_->{message}) } fake_calls($fake, $_[0]) }

my $bob   = customer_with_devices(0);
my $alice = customer_with_devices(0);
my $u     = unique();

# --- the finding: Bob signs out, Alice signs in on the same phone -------------------------
my $phone = "shared-phone-$u";
my $tb    = sign_in_on($bob, $phone);
is(holders($phone), $bob->{id}, "Bob's sign-in records the phone as his");
sign_out($tb, 'Bob');
is(holders($phone), '', "Bob's sign-out removes the phone he signed in on");
sign_in_on($alice, $phone);
is(holders($phone), $alice->{id}, "Alice's sign-in records the phone as hers");
my $secret = notice_for($bob, amount => 777000, receiverAccountName => 'BOB SECRET RECIPIENT');
is(scalar(outbox_rows($secret)), 0, "a notice for Bob's wallet: no message for any phone");
my $hers = notice_for($alice, amount => 4200, receiverAccountName => 'ALICE RECIPIENT');
ok(wait_for(5, sub { fake_calls($fake, $phone) }), "Alice's notice reaches the phone");
sleep 1;
unlike(heard($phone), qr/BOB SECRET|777000/, "nothing of Bob's reaches the phone");
like(heard($phone), qr/ALICE RECIPIENT/, "the phone heard Alice's payment");

# --- no sign-out: Alice's sign-in takes the phone from Bob --------------------------------
my $phone2 = "second-phone-$u";
sign_in_on($bob, $phone2);
sign_in_on($alice, $phone2);
is(holders($phone2), $alice->{id}, 'a phone signed in on by another customer is theirs alone');
my $r2 = notice_for($bob, receiverAccountName => 'BOB AGAIN');
is(scalar(outbox_rows($r2)), 0, "Bob's next notice has no message for the phone he lost");
sleep 1;
unlike(heard($phone2), qr/BOB AGAIN/, 'the phone never heard it');

# --- a message waiting for its retry goes with the phone ----------------------------------
my $phone3 = "third-phone-$u";
sign_in_on($bob, $phone3);
fake_control($fake, { token => $phone3, answers => [{ status => 503, retryAfter => '30' }] });
my $r3 = notice_for($bob, receiverAccountName => 'BOB WAITING');
ok(wait_for(5, sub { fake_calls($fake, $phone3) }), "Bob's message was tried once (503)");
ok(wait_for(5, sub { my ($r) = outbox_rows($r3); $r->{attempts} == 1 && $r->{state} eq 'pending' }),
    'it waits for its retry');
sign_in_on($alice, $phone3);
my ($row3) = outbox_rows($r3);
is($row3->{state}, 'unregistered', "Alice's sign-in on the phone: Bob's waiting message is unregistered");
like($row3->{last_error}, qr/the device left the customer/, 'and says why');
fake_control($fake, { token => $phone3, answers => [] });

# --- signing out one session leaves the phones of the others ------------------------------
my ($pa, $pb) = ("phone-a-$u", "phone-b-$u");
my $t1 = sign_in_on($bob, $pa);
my $t2 = sign_in_on($bob, $pb);
my $t3 = sign_in_on($bob, $pb);    # the same phone again: the newer session holds it
sign_out($t1, 'the session on phone A');
is(holders($pa), '', 'phone A goes with its session');
is(holders($pb), $bob->{id}, 'phone B stays');
sign_out($t2, "phone B's older session");
is(holders($pb), $bob->{id}, 'phone B stays while its newer session lives');
sign_out($t3, "phone B's newer session");
is(holders($pb), '', 'phone B goes with its last session');

# --- a token revoked by bankctl takes its phone too ---------------------------------------
my $carol = customer_with_devices(0);
sign_in_on($carol, "carol-phone-$u");
bankctl('token', 'revoke', '--email', $carol->{email});
is(devices_of($carol), '', "bankctl token revoke: the customer's phones go with the tokens");

# --- BankMaxDevices: 10 by default, the least recently seen dropped -----------------------
my $dave = customer_with_devices(0);
sign_in_on($dave, "dave-$u-$_") for map { sprintf '%02d', $_ } 1 .. 11;
my @kept = split /,/, devices_of($dave);
is(scalar @kept, 10, 'eleven phones: ten kept (BankMaxDevices default)');
ok(!(grep { $_ eq "dave-$u-01" } @kept), 'the first one, seen least recently, is dropped');
sign_in_on($dave, "dave-$u-02");    # seen again: now the newest
sign_in_on($dave, "dave-$u-12");
@kept = split /,/, devices_of($dave);
ok((grep { $_ eq "dave-$u-02" } @kept) && !(grep { $_ eq "dave-$u-03" } @kept),
    'a phone signed in on again is kept; the next least recent goes');

# per Location: /tight/sign_in has BankMaxDevices 2
my $erin = customer_with_devices(0);
sign_in_on($erin, "erin-$u-$_", '/tight/sign_in') for 1 .. 3;
is(devices_of($erin), "erin-$u-2,erin-$u-3", 'BankMaxDevices 2 per Location: the two seen last');

done_testing();
