# The webhook under concurrency (docs/api.md): copies of one notice arriving at the same
# moment on different processes store it once; a writer holding SQLite's lock delays a
# delivery without failing it; and a bounded load test (loopback only) of 2,000 deliveries
# from 16 concurrent senders, a quarter of them repeats. Senders are forked perl processes,
# each with its own LWP::UserAgent, all stopped by a deadline.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use List::Util qw(shuffle);
use LWP::UserAgent ();
use POSIX ();
use Time::HiRes qw(time sleep);
use Bank::Test;
use Bank::Webhook;

my $url  = Apache::TestRequest::resolve_url('/webhook/partner');
my $mark = error_log_mark();

# Runs one sender per job list, all released at once after each has connected. Returns the
# answers as [code, reference, body] and the seconds from release to the last answer.
# Senders stop at $limit seconds; any still running later are killed.
sub send_all {
    my ($limit, @lists) = @_;
    my $dir = "$ENV{BANK_TEST_ROOT}/senders.$$";
    mkdir $dir;
    pipe(my $gate_r, my $gate_w) or die "pipe: $!";
    pipe(my $ready_r, my $ready_w) or die "pipe: $!";
    my @pids;
    for my $i (0 .. $#lists) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            close $gate_w;
            close $ready_r;
            sender($lists[$i], "$dir/$i", $gate_r, $ready_w, $limit);
            POSIX::_exit(0);
        }
        push @pids, $pid;
    }
    close $gate_r;
    close $ready_w;
    my $ready = 0;
    while ($ready < @lists && sysread($ready_r, my $buf, 64)) { $ready += length $buf }
    my $t0 = time;
    close $gate_w;    # every sender reads EOF at the same moment
    my %left = map { $_ => 1 } @pids;
    while (%left && time - $t0 < $limit + 15) {
        my $pid = waitpid(-1, POSIX::WNOHANG());
        if ($pid > 0) { delete $left{$pid} } else { sleep 0.01 }
    }
    my $elapsed = time - $t0;
    kill 'KILL', keys %left;    # only our own senders, past the deadline
    waitpid($_, 0) for keys %left;
    my @answers;
    for my $i (0 .. $#lists) {
        open my $fh, '<', "$dir/$i" or next;
        push @answers, map { chomp; [split /\t/, $_, 3] } <$fh>;
        unlink "$dir/$i";
    }
    rmdir $dir;
    return (\@answers, $elapsed);
}

sub sender {
    my ($jobs, $file, $gate, $ready, $limit) = @_;
    my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
    $ua->get($url);    # connect first (405): the gate then releases requests, not handshakes
    syswrite $ready, '1';
    sysread $gate, my $buf, 1;
    my $deadline = time + $limit;
    open my $out, '>', $file or POSIX::_exit(1);
    for my $text (@$jobs) {
        last if time > $deadline;
        my ($ref) = $text =~ /"transactionReference":"([^"]+)"/;
        my $res = $ua->post($url, 'Content-Type' => 'application/json',
            Authorization => "Bearer $SECRET_NEW", Content => $text);
        (my $body = $res->content) =~ s/[\r\n\t]/ /g;
        print $out join("\t", $res->code, $ref, $body), "\n";
    }
    close $out;
}

sub duplicate_flags {
    my ($answers) = @_;
    return map { $_->[2] =~ /"duplicate":(true|false)/ ? $1 : 'none' } @$answers;
}

# --- copies of one notice at the same moment ------------------------------------------------
my %pids;
# At least five rounds, and more (up to fifteen) until the copies have reached two processes:
# which process accepts a connection is the kernel's choice, and a busy machine can hand a
# whole round to one.
for (my $round = 1; $round <= 5 || (keys %pids < 2 && $round <= 15); $round++) {
    my $n   = notice();
    my $ref = $n->{data}{transactionReference};
    my ($answers) = send_all(30, map { [notice_json($n)] } 1 .. 8);
    is(scalar @$answers, 8, "concurrent copies $round: eight answers");
    is(scalar(grep { $_->[0] == 200 } @$answers), 8, "concurrent copies $round: all 200");
    my @flags = duplicate_flags($answers);
    is(scalar(grep { $_ eq 'false' } @flags), 1, "concurrent copies $round: one duplicate:false");
    is(scalar(grep { $_ eq 'true' } @flags),  7, "concurrent copies $round: seven duplicate:true");
    is(stored_count($ref), 1, "concurrent copies $round: one row");
    my $log = error_log_since($mark);
    $pids{$1}++ for $log =~ /\[pid (\d+)[^\]]*\][^\n]*BANK0705: payment notice [^\n]*\Q$ref\E,/g;
}
diag(sprintf 'concurrent copies were answered by %d httpd processes', scalar keys %pids);
cmp_ok(scalar keys %pids, '>=', 2, 'concurrent copies reached more than one process');

# --- a writer holding the lock delays a delivery, it does not fail it ------------------------
SKIP: {
    skip 'SQLite lock test', 4 unless $ENV{BANK_DBDRIVER} eq 'sqlite3';
    my @as  = $> == 0 ? ('runuser', '-u', 'nobody', '--') : ();
    my $db  = $ENV{BANK_DBPARAMS};
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        { exec 'sh', '-c',
            "(echo 'BEGIN IMMEDIATE;'; sleep 3; echo 'ROLLBACK;') | @as sqlite3 -cmd '.timeout 10000' '$db' >/dev/null" }
        POSIX::_exit(1);
    }
    my $locked = 0;
    # the holder waits for the lock itself (.timeout), so a probe that briefly holds it
    # cannot make the holder give up; probe for up to 10 s on a loaded machine
    for (1 .. 1000) {
        last if $locked = `@as sqlite3 -cmd '.timeout 0' '$db' 'BEGIN IMMEDIATE;' 2>&1` =~ /locked/;
        sleep 0.01;
    }
    ok($locked, 'lock holder holds the write lock');
    my $n  = notice();
    my $t0 = time;
    my $r  = deliver($n);
    my $waited = time - $t0;
    waitpid($pid, 0);
    is($r->code, 200, 'delivery while locked: 200 once the lock is released');
    cmp_ok($waited, '>', 0.2, 'delivery while locked: it waited for the lock');
    is(stored_count($n->{data}{transactionReference}), 1, 'delivery while locked: stored');
}

# --- load: 2,000 deliveries, 16 senders, a quarter repeats -------------------------------------
my $run      = unique();
my @distinct = map { notice_json(notice(transactionReference => "TRF-LOAD-$run-$_")) } 1 .. 1500;
my @all      = shuffle(@distinct, map { $distinct[int rand @distinct] } 1 .. 500);
my @lists;
push @{ $lists[$_ % 16] }, $all[$_] for 0 .. $#all;
my $load_mark = error_log_mark();
my ($answers, $elapsed) = send_all(120, @lists);

is(scalar @$answers, 2000, 'load: every delivery answered before the deadline');
my @not_ok = grep { $_->[0] != 200 } @$answers;
is(scalar @not_ok, 0, 'load: every answer 200') or diag(join "\n", map { "@$_" } @not_ok[0 .. 4]);
my @flags = duplicate_flags($answers);
is(scalar(grep { $_ eq 'false' } @flags), 1500, 'load: 1,500 answers duplicate:false');
is(scalar(grep { $_ eq 'true' } @flags),  500,  'load: 500 answers duplicate:true');
my %first;
$first{ $answers->[$_][1] } += $flags[$_] eq 'false' for 0 .. $#flags;
is(scalar(grep { $_ != 1 } values %first), 0, 'load: each notice stored by exactly one answer');
is(db_value("SELECT count(*) FROM payment_notices WHERE transaction_reference LIKE 'TRF-LOAD-$run-%'"),
    1500, 'load: the table holds exactly the distinct notices');
is(db_value("SELECT count(DISTINCT transaction_reference) FROM payment_notices"
          . " WHERE transaction_reference LIKE 'TRF-LOAD-$run-%'"), 1500, 'load: no notice twice');
is(scalar(grep { $_->[2] =~ /locked/i } @$answers), 0, 'load: no "database is locked" answered');
unlike(error_log_since($load_mark), qr/database is locked|BANK0203/i,
    'load: no database error in the error log');
diag(sprintf 'webhook load: %d deliveries from 16 senders in %.2f s: %.0f deliveries/s',
    scalar @$answers, $elapsed, @$answers / ($elapsed || 1));

# --- commits of different processes take turns ------------------------------------------------
# Every commit of that load ran inside the server's commit turn (BANK0711 when taken, BANK0708
# when committed, both logged by the leading thread before it gives the turn back), and no
# two overlapped in time, whichever processes led them.
{
    my (%open, @turns, $outside, %pids);
    for (split /\n/, error_log_since($load_mark)) {
        next unless /^\[\w+ \w+ (\d+) (\d+):(\d+):(\d+\.\d+) \d+\] .*\[pid (\d+):tid (\d+)\].*BANK07(11|08)/;
        my ($t, $who, $what) = ((($1 * 24 + $2) * 60 + $3) * 60 + $4, "$5:$6", $7);
        if ($what eq '11') { $open{$who} = $t; next }
        if (!defined $open{$who}) { $outside++; next }
        push @turns, [delete $open{$who}, $t];
        $pids{ (split /:/, $who)[0] }++;
    }
    @turns = sort { $a->[0] <=> $b->[0] } @turns;
    my $overlaps = grep { $turns[$_][0] < $turns[$_ - 1][1] } 1 .. $#turns;
    diag(sprintf 'turns: %d commits by %d processes', scalar @turns, scalar keys %pids);
    cmp_ok(scalar @turns, '>', 0, 'turns: the load committed inside commit turns');
    is($outside // 0, 0, 'turns: no commit outside a turn');
    cmp_ok(scalar keys %pids, '>=', 2, 'turns: commits led by more than one process');
    is($overlaps, 0, 'turns: no two commits at the same time');
}

# --- an httpd child killed with SIGKILL mid-load --------------------------------------------
# Group commit answers 200 only after the commit: a child killed with its transaction open
# takes its notices' answers with it (the senders see the connection close) and the database
# rolls the transaction back, so every notice that was answered 200 is stored.
{
    my $krun = unique();
    my @jobs = map { notice_json(notice(transactionReference => "TRF-KILL-$krun-$_")) } 1 .. 1200;
    my @kl;
    push @{ $kl[$_ % 12] }, $jobs[$_] for 0 .. $#jobs;
    my $pidfile = Apache::Test::vars('t_pid_file');
    my $killer  = fork // die "fork: $!";
    if (!$killer) {
        my $killed = 0;
        for my $at (0.3, 0.6, 0.9) {
            sleep $at - ($at > 0.3 ? 0.3 : 0);
            open my $fh, '<', $pidfile or POSIX::_exit(0);
            chomp(my $ppid = <$fh> // '');
            my @kids = grep { /^\d+$/ } map { s/\s+//gr } `ps -o pid= --ppid $ppid`;
            $killed += kill 'KILL', $kids[rand @kids] if @kids;    # only this test's httpd
        }
        open my $out, '>', "$ENV{BANK_TEST_ROOT}/killed.$$" or POSIX::_exit(1);
        print $out $killed;
        close $out;
        POSIX::_exit(0);
    }
    my ($answers) = send_all(120, @kl);
    waitpid $killer, 0;    # (send_all may have reaped it)
    open my $kf, '<', "$ENV{BANK_TEST_ROOT}/killed.$killer" or die "killer: $!";
    cmp_ok(<$kf> // 0, '>', 0, 'kill: httpd children were killed with SIGKILL during the load');
    my %stored = map { $_ => 1 } split /\n/, db_value("SELECT transaction_reference FROM"
          . " payment_notices WHERE transaction_reference LIKE 'TRF-KILL-$krun-%'");
    my @ok = grep { $_->[0] == 200 } @$answers;
    diag(sprintf 'kill: %d of %d deliveries answered 200, %d stored', scalar @ok,
        scalar @$answers, scalar keys %stored);
    cmp_ok(scalar @ok, '>', 0, 'kill: deliveries went on around the killed children');
    is(scalar(grep { !$stored{ $_->[1] } } @ok), 0, 'kill: every notice answered 200 is stored');
    is(scalar(grep { $_->[0] != 200 && $_->[0] != 500 } @$answers), 0,
        'kill: the others lost their connection (500 from the client), none another answer');
}

is_deeply([secrets_in_log($SECRET_OLD, $SECRET_NEW, $HMAC_KEY)], [],
    'error log holds no webhook secret or key');
done_testing();
