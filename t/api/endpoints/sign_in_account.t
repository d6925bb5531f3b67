# BankSignInAccountThrottle (docs/configuration.md; CONTRACT C6): failed sign-ins per e-mail
# from every address together, counted in the database. /account/sign_in has `6 300`. Wrong
# passwords for one account from rotated addresses (127.0.0.2 upwards, each far from its own
# budgets) reach it; then every sign-in with that e-mail, from any address, right password or
# not, is 429 with Retry-After and the X-RateLimit headers, and the password is not checked;
# another e-mail from the same addresses is not; the e-mail's case makes no other account; an
# unknown e-mail is counted the same.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use LWP::UserAgent;
use Bank::Test;
use Bank::SignIn;

my $PATH = '/account/sign_in';

# A sign-in from the loopback address 127.0.0.$n.
sub sign_in_from {
    my ($n, $email, $password) = @_;
    my $ua = LWP::UserAgent->new(local_address => "127.0.0.$n", timeout => 30);
    return json_request(sign_in_req($email, $password, $PATH), ua => $ua);
}

sub is_account_429 { is_429($_[0], $_[1], 300, 6) }

sub account_count {
    my ($email) = @_;
    return db_value("SELECT failures FROM throttle_counts WHERE scope = 'account'"
          . " AND subject = '" . lc($email) . "'");
}

my $c     = new_customer();
my $other = new_customer();
my $mark  = error_log_mark();
for my $n (2 .. 7) {
    my $r = sign_in_from($n, $c->{email}, 'guess');
    is($r->code, 400, "wrong password from 127.0.0.$n: 400") or diag($r->content);
    # the smallest budget: the pair's 4 of 5 left, or the account's 6 - failures of 6
    my ($left, $limit) = 7 - $n < 4 ? (7 - $n, 6) : (4, 5);
    is($r->header('X-RateLimit-Remaining') . '/' . $r->header('X-RateLimit-Limit'), "$left/$limit",
        "from 127.0.0.$n: X-RateLimit-Remaining $left of $limit");
}
is(account_count($c->{email}), 6, 'six failures counted for the account, from six addresses');
is_account_429(sign_in_from(8, $c->{email}, 'guess'), 'a seventh address, wrong password');
is_account_429(sign_in_from(9, $c->{email}, $c->{password}), 'the right password from a new address');
is_account_429(sign_in_from(9, uc $c->{email}, $c->{password}), 'the e-mail in capitals');
is(account_count($c->{email}), 6, 'refused unverified: nothing more counted');
like(error_log_since($mark), qr/BANK0512: sign-in throttled \(account\): failure 6 of this e-mail/,
    'logged as BANK0512');
unlike(error_log_since($mark), qr/\Q$c->{email}\E/i, 'the e-mail is not logged');
my $ok = sign_in_from(9, $other->{email}, $other->{password});
is($ok->code, 200, 'another account from the same addresses: 200') or diag($ok->content);

# an unknown e-mail is counted the same: its answers tell nothing about whether it exists
my $ghost = 'ghost' . unique() . '@example.com';
is(sign_in_from($_, $ghost, 'guess')->code, 400, "an unknown e-mail from 127.0.0.$_: 400") for 10 .. 15;
is_account_429(sign_in_from(16, $ghost, 'guess'), 'an unknown e-mail past the budget');

done_testing();
