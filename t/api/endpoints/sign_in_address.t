# BankSignInAddressThrottle (docs/configuration.md): failed sign-ins per client IP, whatever
# the e-mail, counted in the database. /spray/sign_in has `20 300`; the rest of the test
# server a budget out of the way. Past it, 429 with Retry-After and the X-RateLimit headers
# for that IP, any e-mail, right password or not; a success does not refill it. Throttle
# rows are pruned by time on failures too, so a flood of random e-mails stays bounded.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::SignIn;
use Bank::Servers qw(main_server concurrent);

my $SPRAY = '/spray/sign_in';

sub address_count {
    return db_value("SELECT failures FROM throttle_counts WHERE scope = 'address'"
          . " AND subject = '127.0.0.1'");
}
sub reset_address { db_exec("DELETE FROM throttle_counts WHERE scope = 'address'") }

sub is_spray_429 { is_429($_[0], $_[1], 300, 20) }

# --- one address spraying random e-mails: twenty failures, then 429 for any e-mail -------------
reset_address();
my $tag = 'spray' . unique();
my $known = new_customer();
for my $i (1 .. 20) {
    my $r = sign_in("$tag-$i\@example.com", 'guess', $SPRAY);
    is($r->code, 400, "random e-mail $i: 400") or diag($r->content);
    # the smaller of the two budgets: the e-mail's 4 of 5 left, the address's 20 - $i of 20
    my ($limit, $left) = 20 - $i < 4 ? (20, 20 - $i) : (5, 4);
    is($r->header('X-RateLimit-Remaining') . '/' . $r->header('X-RateLimit-Limit'),
        "$left/$limit", "random e-mail $i: X-RateLimit-Remaining $left of $limit");
}
is(address_count(), 20, 'twenty failures counted for 127.0.0.1 in throttle_counts');
is_spray_429(sign_in("$tag-21\@example.com", 'guess', $SPRAY), 'the 21st random e-mail');
is_spray_429(sign_in($known->{email}, $known->{password}, $SPRAY),
    'a right password from the throttled address');
is(db_value("SELECT count(*) FROM auth_access_tokens WHERE tokenable_id = '$known->{id}'"), 0,
    'no token issued to the throttled address');
# the flood: forty more random e-mails add no throttle row and no count
sign_in("$tag-x$_\@example.com", 'guess', $SPRAY) for 1 .. 40;
is(db_value("SELECT count(*) FROM sign_in_attempts WHERE email LIKE '$tag-%'"), 20,
    'sixty random e-mails from one address: twenty sign_in_attempts rows');
is(address_count(), 20, 'throttled attempts are not counted');
# another Location with a larger budget shares the count but not the limit
is(sign_in($known->{email}, $known->{password})->code, 200,
    'the same address under a larger budget still signs in');

# --- a success does not refill the address budget ---------------------------------------------
reset_address();
sign_in("$tag-s$_\@example.com", 'guess', $SPRAY) for 1 .. 3;
is(sign_in($known->{email}, $known->{password}, $SPRAY)->code, 200, 'a success under the budget');
is(address_count(), 3, 'the address count stays after a success');

# --- concurrent failures from one address: exactly the budget is answered 400 ---------------
reset_address();
my $server = main_server();
my @res = concurrent(map { [$server, sign_in_req("$tag-c$_\@example.com", 'guess', $SPRAY)] } 1 .. 30);
my %n;
$n{ $_->code }++ for @res;
# 503: refused unverified and uncounted by the default verification bound (its queue is per
# process, and how the 30 connections spread over the processes varies), so the budget
# decides among the others: exactly 20 answered 400 when 20 or more were verified, all of
# them otherwise; never more than the budget.
my $refused = $n{503} // 0;
my $want = 30 - $refused < 20 ? 30 - $refused : 20;
is($n{400} // 0, $want, "thirty random e-mails at once: the budget's 400s ($want with $refused refused by the bound)")
  or diag(join ',', %n);
is($n{429} // 0, 30 - $refused - $want, 'thirty random e-mails at once: 429 for the rest')
  or diag(join ',', %n);
is(($n{400} // 0) + ($n{429} // 0) + $refused, 30, 'thirty random e-mails at once: no other answer')
  or diag(join ',', %n);

# --- rows are pruned by time on a failure, not only after a success ---------------------------
reset_address();
my $old = iso_ago(2 * 86400);
db_exec("INSERT INTO sign_in_attempts (email, ip, failures, window_start) VALUES"
      . " ('$tag-old1\@example.com', '192.0.2.1', 3, '$old'),"
      . " ('$tag-old2\@example.com', '192.0.2.2', 1, '$old')");
db_exec("INSERT INTO throttle_counts (scope, subject, failures, window_start) VALUES"
      . " ('address', '192.0.2.1', 7, '$old')");
is(sign_in("$tag-p\@example.com", 'guess')->code, 400, 'a failure');
is(db_value("SELECT count(*) FROM sign_in_attempts WHERE email LIKE '$tag-old%'"), 0,
    'a failure prunes sign_in_attempts rows expired for a day');
is(db_value("SELECT count(*) FROM throttle_counts WHERE subject = '192.0.2.1'"), 0,
    'a failure prunes address rows expired for a day');
is(db_value("SELECT count(*) FROM sign_in_attempts WHERE email = '$tag-p\@example.com'"), 1,
    'the current row stays');

done_testing();
