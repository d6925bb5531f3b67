# Concurrent sign-ins. Twenty at once for one customer each get their own working token.
# The throttle holds however many run at once (BankSignInThrottle 5 60): of concurrent wrong
# passwords exactly five are answered 400 and every other 429, each verified one is counted;
# a right password verified while the limit was reached answers 429 and issues nothing.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Bank::Test;
use Bank::SignIn;
use Bank::Servers qw(main_server concurrent);

my $server = main_server();

# A sign-in job for Bank::Servers::concurrent.
sub job {
    my ($email, $password, $device) = @_;
    my ($method, $path, %o) = sign_in_req($email, $password);
    $o{body}{deviceToken} = $device if $device;
    return [$server, $method, $path, %o];
}

sub tokens_of { return db_value("SELECT count(*) FROM auth_access_tokens WHERE tokenable_id = '$_[0]'") }

# --- twenty right passwords at once: twenty distinct working tokens -----------------------
my $c = new_customer();
my @res = concurrent(map { job($c->{email}, $c->{password}, "dev-$_") } 1 .. 20);
is(scalar(grep { $_->code == 200 } @res), 20, 'twenty concurrent sign-ins: all 200')
  or diag(join ', ', map { $_->code } @res);
my %tokens = map { ((decode_body($_) // {})->{body}{token}{token} // '') => 1 } @res;
delete $tokens{''};
is(scalar keys %tokens, 20, 'twenty concurrent sign-ins: twenty distinct tokens');
my $working = grep {
    Apache::TestRequest::GET('/misc/payment_banks', Authorization => "Bearer $_")->code == 200
} keys %tokens;
is($working, 20, 'each of the twenty tokens opens /misc/payment_banks');
is(tokens_of($c->{id}), 20, 'twenty tokens stored');
# each sign-in keeps the customer's 10 devices seen last (BankMaxDevices), counted exactly
# however many run at once (on PostgreSQL a lock on the customer puts them in order)
is(db_value("SELECT count(*) FROM devices WHERE customer_id = '$c->{id}'"), 10,
    'twenty devices signed in on at once: ten kept (BankMaxDevices)');

# --- forty wrong passwords at once: exactly five say "wrong" -------------------------------
# Each request that passes the cheap check before the password (fewer than five failures
# counted) is verified and counted by the one atomic upsert; the upsert's count decides: the
# first five 400, the rest 429. Requests that reach the check once five are counted get 429
# without being verified or counted (BANK0502): with forty requests and thirty server
# threads some always do, so the stored count is forty less those, read from the log.
my $w    = new_customer();
my $wl   = lc $w->{email};
my $mark = $server->error_log_mark;
my @bad  = concurrent(map { job($w->{email}, "wrong-$_") } 1 .. 40);
my @refused   = grep { $_->code == 400 } @bad;
my @throttled = grep { $_->code == 429 } @bad;
is(scalar @refused, 5, 'forty concurrent wrong passwords: exactly five answered 400')
  or diag(join ', ', map { $_->code } @bad);
is(scalar @throttled, 35, 'forty concurrent wrong passwords: all the others 429');
is(join(',', sort map { $_->header('X-RateLimit-Remaining') // '' } @refused), '0,1,2,3,4',
    'the five 400s are failures 1 to 5 of the window (X-RateLimit-Remaining 4 to 0)');
assert_error($_, 400, 'E_INVALID_CREDENTIALS', 'concurrent 400') for @refused;
is_429($_, 'concurrent 429', 60) for @throttled;
my $n = sign_in_outcomes(40, [$server, $mark]);
is($n->{refused}, 5, 'the log: five wrong passwords refused');
is($n->{unchecked} + $n->{over}, 35,
    'the log: every 429 either not verified (BANK0502) or counted over the limit (BANK0509)');
my $stored = db_value("SELECT failures FROM sign_in_attempts WHERE email = '$wl'");
is($stored, 40 - $n->{unchecked}, 'every verified attempt counted: forty less those not verified');
is($stored, 5 + $n->{over}, 'the five 400s and every 429 after verification counted');
diag("forty at once: $n->{over} verified and answered 429, $n->{unchecked} not verified");

# --- made certain: the limit reached while a password is verified --------------------------
# Another database session holds, uncommitted, five failures of this client (and, for the
# right password on PostgreSQL, the device row the sign-in writes); it commits after 1 s
# (on SQLite its write lock keeps the sign-in's writes waiting). The sign-in's check before
# the password sees no failure (not yet committed) and verifies the password; its next
# write waits, and when it goes on the five failures have been counted in the meantime.
sub late_sign_in {
    my ($c, $password, @hold) = @_;
    my $lc   = lc $c->{email};
    my $mark = $server->error_log_mark;
    my $holder = hold_then_commit(1, @hold,
        "INSERT INTO sign_in_attempts (email, ip, failures, window_start)"
          . " VALUES ('$lc', '127.0.0.1', 5, '${\ iso_ago(0)}')");
    my $res = sign_in($c->{email}, $password);
    waitpid $holder, 0;
    is($?, 0, 'the other session held five failures, then committed them');
    return ($res, sign_in_outcomes(1, [$server, $mark]));
}

# A wrong password: counted as the sixth failure, 429 instead of 400.
my $lw = new_customer();
my ($wrong6, $lwn) = late_sign_in($lw, 'wrong');
is_429($wrong6, 'wrong password counted over the limit', 60);
is($lwn->{over}, 1, 'found by the count after the password (BANK0509), not the check before')
  or diag($lwn->{text});
is(attempts_row(lc $lw->{email}), '6|127.0.0.1', 'the sixth failure is counted');

# A right password: 429, and its transaction rolled back: no token, device untouched.
my $h    = new_customer();
my $seen = '2001-02-03T04:05:06.000Z';
my ($late, $hn) = late_sign_in($h, $h->{password},
    "INSERT INTO devices (customer_id, device_token, created_at, last_seen_at)"
      . " VALUES ('$h->{id}', 'throttle-device', '$seen', '$seen')");
is_429($late, 'right password, limit reached while it was verified', 60);
like($hn->{text}, qr/BANK0510: sign-in throttled: right password, but 5 failures/,
    'found by the check at the end of the transaction (BANK0510), not the one before');
is($hn->{unchecked}, 0, 'the check before the password had let it through');
is(tokens_of($h->{id}), 0, 'no token issued');
is(db_time("SELECT last_seen_at FROM devices WHERE customer_id = '$h->{id}'"), $seen,
    'the device was not touched (the transaction rolled back)');
is(attempts_row(lc $h->{email}), '5|127.0.0.1', 'the failures were not cleared');

# --- ten wrong passwords and the right one, at once -----------------------------------------
# The right one answers 200 only if fewer than five failures had been counted when its
# transaction read and cleared them (the log says how many); then the wrong ones counted
# before it are 400s of the old window and those after it start a new one. If it answers
# 429, five failures were counted first: exactly five 400s and nothing issued.
my $m  = new_customer();
my $ml = lc $m->{email};
$mark = $server->error_log_mark;
my ($right, @wrong) = concurrent(job($m->{email}, $m->{password}),
    map { job($m->{email}, "wrong-$_") } 1 .. 10);
my $wrong400 = grep { $_->code == 400 } @wrong;
is(scalar(grep { $_->code == 400 || $_->code == 429 } @wrong), 10,
    'ten wrong and one right at once: each wrong one 400 or 429');
ok($right->code == 200 || $right->code == 429, 'the right one answers 200 or 429')
  or diag($right->code);
$n = sign_in_outcomes(11, [$server, $mark]);
if ($right->code == 200) {
    my ($before) = $n->{text} =~ /BANK0507: customer \Q$m->{id}\E signed in, token id \d+ \((\d+) failures/;
    ok(defined $before && $before < 5, 'answered 200: fewer than five failures counted before it')
      or diag($before // 'no BANK0507 line');
    my $after = db_value("SELECT failures FROM sign_in_attempts WHERE email = '$ml'") || 0;
    is($wrong400, ($before // 0) + ($after < 5 ? $after : 5),
        'answered 200: the 400s are those counted before it and the first five after it');
    is(tokens_of($m->{id}), 1, 'answered 200: one token issued');
    diag("ten wrong and one right: right 200 after ${\ ($before // '?')} failures, $after after it");
} else {
    is_429($right, 'the right one, after five failures', 60);
    is($wrong400, 5, 'answered 429: exactly five wrong ones answered 400');
    is(tokens_of($m->{id}), 0, 'answered 429: no token issued');
    diag('ten wrong and one right: right 429');
}

done_testing();
