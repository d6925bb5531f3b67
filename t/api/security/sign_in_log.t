# No password, token or client key in any log line (docs/api.md), with the suite's
# LogLevel bank:trace8: sign in well, badly, throttled and with a wrong key, then read the log.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use MIME::Base64 qw(decode_base64);
use Bank::Test;

my @keys = ('test-client-key-1', 'test-client-key-2');

sub sign_in {
    my ($key, %body) = @_;
    return json_request('POST', '/auth/sign_in', headers => { Authorization => "Bearer $key" },
        body => { deviceToken => 'log-device', %body });
}

my $mark = error_log_mark();
my $c = new_customer(password => 'Log-Secret-' . unique());
my (@secrets, @tokens);    # [what, value]
push @secrets, ['the password', $c->{password}], map { ['client key', $_] } @keys;

for my $key (@keys) {
    my $r = sign_in($key, email => $c->{email}, password => $c->{password});
    is($r->code, 200, "good sign-in with $key");
    push @tokens, decode_body($r)->{body}{token}{token};
}
for my $i (1 .. 6) {    # five refused, then throttled
    my $wrong = "Wrong-Secret-$i-" . unique();
    push @secrets, ['a wrong password', $wrong];
    my $r = sign_in($keys[0], email => $c->{email}, password => $wrong);
    is($r->code, $i <= 5 ? 400 : 429, "bad sign-in $i");
}
my $unknown_pw = 'Unknown-Secret-' . unique();
push @secrets, ['the password for an unknown e-mail', $unknown_pw];
is(sign_in($keys[0], email => 'nobody-' . unique() . '@example.com', password => $unknown_pw)->code,
    400, 'unknown e-mail');
my $bad_key = 'Bad-Client-Key-' . unique();
push @secrets, ['the wrong client key', $bad_key];
is(sign_in($bad_key, email => $c->{email}, password => $c->{password})->code, 401, 'wrong client key');
is(Apache::TestRequest::GET('/misc/payment_banks', Authorization => "Bearer $tokens[0]")->code, 200,
    'a token in use');

# Every form a token takes: whole, its secret part encoded and decoded.
for my $t (@tokens) {
    my ($id, $enc) = $t =~ /^oat_([^.]+)\.(.+)$/;
    (my $std = $enc) =~ tr{-_}{+/};
    push @secrets, ['a token', $t], ['a token secret (base64url)', $enc],
      ['a token secret', decode_base64($std . '=' x ((4 - length($std) % 4) % 4))];
}

my $log = '';
for (1 .. 20) {    # the last lines may land a moment after the answers
    $log = error_log_since($mark);
    last if $log =~ /BANK0501/ && $log =~ /BANK0502/;
    select undef, undef, undef, 0.1;
}
# The log is not empty: the sign-in lines are there, so the search below searched something.
like($log, qr/BANK0507: customer \Q$c->{id}\E signed in/, 'log: success logged');
like($log, qr/BANK0503: sign-in refused: wrong password/, 'log: wrong password logged');
like($log, qr/BANK0503: sign-in refused: unknown e-mail/, 'log: unknown e-mail logged');
like($log, qr/BANK0502: sign-in throttled/, 'log: throttling logged');
like($log, qr/BANK0501: sign-in refused: no valid client key/, 'log: wrong client key logged');
for my $s (@secrets) {
    ok(index($log, $s->[1]) < 0, "log: not $s->[0]");
}
unlike($log, qr/oat_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{10}/, 'log: nothing shaped like a token');

done_testing();
