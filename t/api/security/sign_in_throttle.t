# BankSignInThrottle (docs/configuration.md): failed sign-ins per (lower-cased e-mail, client IP),
# counted in the database, checked before the password, 429 with Retry-After and the
# X-RateLimit headers; a success clears the count. The test server has `5 60`;
# /tight/sign_in has `2 2`. Sign-ins at the same moment: t/api/endpoints/sign_in_concurrent.t.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::SignIn;

# --- five failures are answered 400, the sixth 429, even with the right password ----------
my $c = new_customer(email => 'Throttle.' . unique() . '@Example.com');
my $lc = lc $c->{email};
for my $i (1 .. 5) {
    my $r = sign_in($c->{email}, "wrong-$i");
    assert_error($r, 400, 'E_INVALID_CREDENTIALS', "failure $i");
    is($r->header('X-RateLimit-Limit'), 5, "failure $i: X-RateLimit-Limit");
    is($r->header('X-RateLimit-Remaining'), 5 - $i, "failure $i: X-RateLimit-Remaining");
}
is(attempts_row($lc), '5|127.0.0.1', 'counted in sign_in_attempts per lower-cased e-mail and IP');
is_429(sign_in($c->{email}, 'wrong-6'), 'sixth wrong password', 60);
my $ra = is_429(sign_in($c->{email}, $c->{password}), 'right password while throttled', 60);
is(attempts_row($lc), '5|127.0.0.1', 'throttled attempts are not verified or counted');
is(db_value("SELECT count(*) FROM auth_access_tokens WHERE tokenable_id = '$c->{id}'"), 0,
    'no token issued while throttled');
is_429(sign_in(uc $c->{email}, $c->{password}), 'the same e-mail in another case', 60);

# Retry-After is what is left of the window: started 50 s ago, about 10 s remain.
db_exec("UPDATE sign_in_attempts SET window_start = '${\ iso_ago(50)}' WHERE email = '$lc'");
my $left = is_429(sign_in($c->{email}, $c->{password}), 'window started 50 s ago', 60);
ok($left >= 9 && $left <= 11, 'Retry-After counts down with the window') or diag($left);

# Once the window has passed, the right password signs in and clears the count.
db_exec("UPDATE sign_in_attempts SET window_start = '${\ iso_ago(61)}' WHERE email = '$lc'");
is(sign_in($c->{email}, $c->{password})->code, 200, 'window expired: the right password signs in');
is(attempts_row($lc), '', 'a success deletes the row');

# --- a success in the middle resets the count ---------------------------------------------
sign_in($c->{email}, 'wrong') for 1 .. 4;
is(attempts_row($lc), '4|127.0.0.1', 'four failures counted');
is(sign_in($c->{email}, $c->{password})->code, 200, 'the fifth attempt, right, signs in');
is(attempts_row($lc), '', 'the count is cleared');
my $after = sign_in($c->{email}, 'wrong');
is($after->header('X-RateLimit-Remaining'), 4, 'after a success the full allowance is back');

# --- an expired window with failures left over starts a new one at 1 ----------------------
db_exec("UPDATE sign_in_attempts SET failures = 9, window_start = '${\ iso_ago(120)}' WHERE email = '$lc'");
my $fresh = sign_in($c->{email}, 'wrong');
is($fresh->code, 400, 'expired window: not throttled');
is($fresh->header('X-RateLimit-Remaining'), 4, 'expired window: counting starts again');
my $failures = db_value("SELECT failures FROM sign_in_attempts WHERE email = '$lc'");
my $start    = db_time("SELECT window_start FROM sign_in_attempts WHERE email = '$lc'");
is($failures, 1, 'expired window: failures reset to 1');
ok($start gt iso_ago(10), 'expired window: the new window starts now') or diag($start);

# --- unknown e-mails are throttled the same way -------------------------------------------
my $ghost = 'ghost-' . unique() . '@example.com';
assert_error(sign_in($ghost, 'x'), 400, 'E_INVALID_CREDENTIALS', "unknown e-mail $_") for 1 .. 5;
is_429(sign_in($ghost, 'x'), 'sixth attempt for an unknown e-mail', 60);

# --- the count lives in the database: what another server wrote counts here ---------------
my $d = new_customer();
my $dl = lc $d->{email};
db_exec("INSERT INTO sign_in_attempts (email, ip, failures, window_start) VALUES"
      . " ('$dl', '127.0.0.1', 5, '${\ iso_ago(1)}')");
is_429(sign_in($d->{email}, $d->{password}), 'a count written by another process', 60);
db_exec("UPDATE sign_in_attempts SET ip = '192.0.2.7' WHERE email = '$dl'");
is(sign_in($d->{email}, $d->{password})->code, 200, 'failures from another IP do not count here');
is(db_value("SELECT failures FROM sign_in_attempts WHERE email = '$dl' AND ip = '192.0.2.7'"), 5,
    "a success clears only this client's count");

# --- the window ends in real time (/tight/sign_in: BankSignInThrottle 2 2) ----------------
my $t = new_customer();
my $r1 = sign_in($t->{email}, 'wrong', '/tight/sign_in');
is($r1->header('X-RateLimit-Limit'), 2, 'per-Location throttle: X-RateLimit-Limit 2');
is($r1->header('X-RateLimit-Remaining'), 1, 'per-Location throttle: one left');
sign_in($t->{email}, 'wrong', '/tight/sign_in');
my $r3 = sign_in($t->{email}, $t->{password}, '/tight/sign_in');
is($r3->code, 429, 'per-Location throttle: third attempt 429');
ok(($r3->header('Retry-After') // 0) >= 1 && $r3->header('Retry-After') <= 2,
    'per-Location throttle: Retry-After within 2 s');
sleep 3;
is(sign_in($t->{email}, $t->{password}, '/tight/sign_in')->code, 200,
    'per-Location throttle: after the window, the right password signs in');

# --- old rows are pruned after a success --------------------------------------------------
db_exec("INSERT INTO sign_in_attempts (email, ip, failures, window_start) VALUES"
      . " ('stale-${\ unique()}\@example.com', '127.0.0.1', 3, '${\ iso_ago(2 * 86400)}')");
is(sign_in($t->{email}, $t->{password})->code, 200, 'a success');
is(db_value("SELECT count(*) FROM sign_in_attempts WHERE window_start < '${\ iso_ago(86400)}'"), 0,
    'rows older than a day are pruned');

done_testing();
