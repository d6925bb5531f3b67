# POST /onboarding/bvn under concurrency and failure (docs/api.md): ten identical
# requests at once open ONE account and all answer with it; a failure halfway through the
# transaction leaves nothing behind, and a retry then succeeds.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Bank::Test;
use Bank::BvnTest;
use Bank::Servers qw(pg_hold);
use POSIX ();
use Time::HiRes ();

my $mark = error_log_mark();

# Holds the lock the opening transaction needs for $secs seconds in the background, so that
# every request checks the customer (unverified) before any can open the account: SQLite's
# write lock (BEGIN IMMEDIATE), or on PostgreSQL the customer's row.
sub hold_lock {
    my ($v, $secs) = @_;
    return pg_hold($secs, "SELECT 1 FROM customers WHERE id = '$v->{c}{id}' FOR UPDATE")
      if $ENV{BANK_DBDRIVER} eq 'pgsql';
    my $pid = fork // die "fork: $!";
    return $pid if $pid;
    my $runas = $> == 0 ? 'runuser -u nobody -- ' : '';
    exec('sh', '-c', "(echo 'BEGIN IMMEDIATE;'; sleep $secs; echo 'COMMIT;')"
          . " | ${runas}sqlite3 -cmd '.timeout 10000' $ENV{BANK_DBPARAMS}") or POSIX::_exit(1);
}

# Forks $n children that wait on one pipe, then all send the same request at once.
# Returns ([status, message, accountId] per child, seconds until the last answer).
# $used: mark the token as just used, so no request stops to record its use (a write that
# would line the requests up before they reach the account).
sub race {
    my ($v, $n, $hold, $used) = @_;
    if ($used) {
        my @t = gmtime;
        my $now = sprintf '%04d-%02d-%02dT%02d:%02d:%02d.000Z', $t[5] + 1900, $t[4] + 1,
          @t[3, 2, 1, 0];
        db_exec("UPDATE auth_access_tokens SET last_used_at = '$now'"
              . " WHERE tokenable_id = '$v->{c}{id}'");
    }
    pipe(my $gate_r, my $gate_w) or die "pipe: $!";
    pipe(my $out_r,  my $out_w)  or die "pipe: $!";
    # One request first, so the children inherit LWP's lazily loaded modules instead of
    # each loading them after the gate.
    Apache::TestRequest::GET('/index.html');
    my @pids;
    for (1 .. $n) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            close $gate_w;
            close $out_r;
            # Everything but the request itself is ready before the gate opens.
            my $ua = Apache::TestRequest::user_agent(reset => 1, keep_alive => 0);
            require HTTP::Request;
            my $req = HTTP::Request->new(POST => Apache::TestRequest::resolve_url('/onboarding/bvn'),
                [Authorization => "Bearer $v->{token}", 'Content-Type' => 'application/json'],
                qq({"bvn_number":"$v->{bvn}","date_of_birth":"$v->{dob}"}));
            sysread $gate_r, my $x, 1;    # returns when the parent closes the gate
            my $res = $ua->request($req);
            my $d   = decode_body($res) || {};
            my $acc = eval { $d->{body}{customer}{account}{accountId} } // '-';
            my $line = join("\t", $res->code, $d->{message} // $d->{code} // '-', $acc,
                Time::HiRes::time()) . "\n";
            syswrite $out_w, $line;    # one short write: atomic on a pipe
            POSIX::_exit(0);
        }
        push @pids, $pid;
    }
    close $gate_r;
    close $out_w;
    my $locker = $hold ? hold_lock($v, $hold) : undef;
    Time::HiRes::sleep(0.3);    # let every child reach the gate (and the locker its lock)
    my $t0 = Time::HiRes::time();
    close $gate_w;
    my @lines = <$out_r>;
    waitpid $_, 0 for @pids;
    if ($locker) {
        waitpid $locker, 0;
        is($?, 0, 'the lock was held and released');
    }
    my @r = map { chomp; [split /\t/] } @lines;
    my $span = (sort { $b <=> $a } map { $_->[3] - $t0 } @r)[0] // 0;
    diag(sprintf '%d requests answered within %.0f ms', scalar @r, $span * 1000);
    return (\@r, $span);
}

# --- ten at once: twice as they come, twice with every request past the first check -------
# Round 1 also records the token's first use (a write) while the account is being opened.
# A request of one httpd process must never wait on SQLite for a lock its own process
# holds: that stalled answers by 10 s and more (busy_timeout) before the data layer's writer lock (bank_db.c).
for my $round (1 .. 4) {
    my $forced  = $round > 2;
    my $v       = verifiable();
    my $serials = next_serial();
    my ($r, $span) = race($v, 10, $forced ? 2 : 0, $round > 1);
    cmp_ok($span, '<', ($forced ? 2 : 0) + 5, "race $round: no request stalled");
    is(scalar @$r, 10, "race $round: ten answers");
    is(scalar(grep { $_->[0] == 200 } @$r), 10, "race $round: all 200")
      or diag(join "\n", map { "@$_" } @$r);
    my %ids = map { $_->[2] => 1 } @$r;
    is(scalar keys %ids, 1, "race $round: one accountId in all answers");
    my $db_id = db_value("SELECT id FROM accounts WHERE customer_id = '$v->{c}{id}'");
    is((keys %ids)[0], $db_id, "race $round: it is the stored account");
    is(scalar(grep { $_->[1] eq 'BVN verified successfully' } @$r), 1,
        "race $round: one answer opened it");
    is(scalar(grep { $_->[1] eq 'BVN already verified' } @$r), 9,
        "race $round: nine found it open");
    is(account_count($v->{c}{id}), 1, "race $round: one account in the database");
    is(next_serial(), $serials + 1, "race $round: one serial used");
    my $log = error_log_since($mark);
    my $in  = () = $log =~ /BANK0606: customer \Q$v->{c}{id}\E: not verified yet/g;
    diag("race $round: $in of 10 requests found the customer unverified and raced to open");
}

# --- a failure halfway leaves nothing ---------------------------------------------------------
# Another customer already holds the account number the next serial produces: the account
# insert fails after the customer row and the serial were written in the same transaction.
my $v      = verifiable();
my $serial = next_serial();
my $number = nuban('999', $serial);
my $holder = new_customer();
my $obst   = uuid4();
my $now    = '2026-01-01T00:00:00.000Z';
db_exec("INSERT INTO accounts (id, customer_id, status, bank_name, bank_account_id, account_name,"
      . " account_number, created_at, updated_at) VALUES ('$obst', '$holder->{id}', 'bvn_verified',"
      . " 'x', 'obstacle-$obst', 'OBSTACLE', '$number', '$now', '$now')");
my $res = bvn_post($v);
ok($res->code == 500 || $res->code == 503, 'halfway: 500 or 503') or diag($res->code);
my $e = assert_error($res, $res->code, $res->code == 500 ? 'E_INTERNAL' : 'E_UNAVAILABLE',
    'halfway');
unlike($res->content, qr/UNIQUE|constraint|accounts|account_number|sqlite/i,
    'halfway: no internals in the answer');
is(customer_row($v->{c}{id}), '|', 'halfway: customer not verified, no referral code');
is(account_count($v->{c}{id}), 0, 'halfway: no account');
is(next_serial(), $serial, 'halfway: the serial was rolled back too')
  if $ENV{BANK_DBDRIVER} eq 'sqlite3';

db_exec("DELETE FROM accounts WHERE id = '$obst'");
my $retry = bvn_post($v);
is($retry->code, 200, 'halfway: a retry succeeds once the obstacle is gone');
my $d = decode_body($retry) || {};
is($d->{message}, 'BVN verified successfully', 'halfway: the retry is the first success');
is($d->{body}{customer}{account}{details}{accountNumber}, $number,
    'halfway: the retry gets the serial the failure gave back')
  if $ENV{BANK_DBDRIVER} eq 'sqlite3';
is(account_count($v->{c}{id}), 1, 'halfway: one account after the retry');

# --- logged, without the BVN -------------------------------------------------------------------
my $log = '';
for (1 .. 20) {
    $log = error_log_since($mark);
    last if $log =~ /BANK0203/ && $log =~ /BANK0608/;
    select undef, undef, undef, 0.1;
}
like($log, qr/BANK0608: BVN onboarding of customer \Q$v->{c}{id}\E: opening the account \(account\) failed: /,
    'halfway: the failure is logged with its step');
like($log, qr/BANK0203: BVN onboarding: /, 'halfway: and the request answered 503 or 500 says so');
my @leaks = grep { index($log, $_) >= 0 } used_bvns();
is(scalar @leaks, 0, 'log: no BVN in any line') or diag("leaked: @leaks");

done_testing();
