# No request waits without bound on PostgreSQL (BankDatabaseTimeout, docs/configuration.md):
# a primary whose synchronous standby is gone (every commit waits for it), a lock another
# session holds, a server that stopped answering (its processes stopped with SIGSTOP) and a
# server in recovery (a standby reached for a write). Writes answer 503 E_UNAVAILABLE with
# Retry-After within the bound and the log says why; reads that need no write answer 200 (a
# token's last_used_at is written without waiting for the standby or a lock); a client's retry
# after such a 503 is safe (a notice, a BVN onboarding, a sign-in); a connection that reached
# a server in recovery is dropped. Under seconds of concurrent load on a server of few
# threads with the standby gone, every answer still comes within the bound: stuck commits do
# not use up the threads.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use LWP::UserAgent ();
use POSIX ();
use Time::HiRes ();
use Bank::Test;
use Bank::Test qw(token_id);
use Bank::Servers qw(require_pgsql concurrent one_process);
use Bank::Webhook;
use Bank::SignIn;
use Bank::Ha;

require_pgsql('builds a PostgreSQL primary and a synchronous standby');

my $BOUND = 2;    # BankDatabaseTimeout of the servers below
my $SLACK = 2.5;  # what the answer may take beyond it (the guard's 1.5 s grace, a loaded machine)

my $ha = Bank::Ha->new;
is($ha->wait_sync('a'), 'sync', 'the standby replicates synchronously');
my ($s) = $ha->servers(1, extra => "BankDatabaseTimeout $BOUND\n");

my @customers = map {
    my $email = "wait$_-" . time . "$$\@example.com";
    $ha->bankctl_ok('customer', 'add', '--email', $email, '--password', 'pw-wait-1', '--first',
        'Ada', '--last', 'Obi', '--phone', '+2348012345678');
    { email => $email, token => $ha->bankctl_ok('token', 'issue', '--email', $email) }
} 1 .. 4;
my $token = $customers[0]{token};
$ha->bankctl_ok('bvn', 'add', '--bvn', '22299900021', '--dob', '1991-02-03', '--first', 'Ada',
    '--last', 'Obi');

sub timed {
    my (@req) = @_;
    my $t0  = Time::HiRes::time();
    my $res = $s->request(@req);
    return ($res, Time::HiRes::time() - $t0);
}

sub banks { return (GET => '/misc/payment_banks', headers => { Authorization => "Bearer $_[0]" }) }

sub unavailable_within {
    my ($name, $res, $took) = @_;
    assert_error($res, 503, 'E_UNAVAILABLE', $name);
    like($res->header('Retry-After') // '', qr/^\d+$/, "$name: Retry-After");
    cmp_ok($took, '<=', $BOUND + $SLACK, "$name: answered within the bound ($took s)");
}

is($s->request(delivery(notice()))->code, 200, 'before: a notice is stored');
is($s->request(banks($token))->code, 200, 'before: the bank list');

# --- the synchronous standby is gone: every commit waits for it ----------------------------
my $id = token_id($token);
$ha->sql('a', "UPDATE auth_access_tokens SET last_used_at = NULL WHERE id = $id");
$ha->pgcluster(stop => 'b');
my $mark = $s->error_log_mark;

my $n = notice();
my ($res, $took) = timed(delivery($n));
unavailable_within('standby gone: a notice', $res, $took);
like($s->error_log_since($mark), qr/synchronous replication/,
    'the log says the commit waited for synchronous replication');

($res, $took) = timed(banks($token));
is($res->code, 200, 'standby gone: the bank list answers 200');
cmp_ok($took, '<', $BOUND, "standby gone: without waiting for the bound ($took s)");
my $recorded = '';
for (1 .. 50) {    # by the process's writer of uses, within about a second
    last if ($recorded = $ha->sql('a', "SELECT last_used_at IS NOT NULL FROM auth_access_tokens WHERE id = $id")) eq 't';
    select undef, undef, undef, 0.1;
}
is($recorded, 't', 'and the token\'s use was recorded on the primary (not waiting for the standby)');

my $bvn_req = [POST => '/onboarding/bvn', headers => { Authorization => "Bearer $token" },
    body => { bvn_number => '22299900021', date_of_birth => '1991-02-03' }];
($res, $took) = timed(@$bvn_req);
unavailable_within('standby gone: BVN onboarding', $res, $took);

# Writes stuck at once do not keep reads from being answered.
my @jobs = ((map { [$s, delivery(notice())] } 1 .. 10), (map { [$s, banks($token)] } 1 .. 6));
my $t0   = Time::HiRes::time();
my @all  = concurrent(@jobs);
my $all  = Time::HiRes::time() - $t0;
is(scalar(grep { $_->code == 503 } @all[0 .. 9]), 10, '10 notices at once: all 503');
is(scalar(grep { $_->code == 200 } @all[10 .. 15]), 6, 'and 6 bank lists beside them: all 200');
cmp_ok($all, '<=', $BOUND + 2 * $SLACK, "all answered within the bound ($all s)");

# A sign-in: its token cannot be confirmed, so it is not handed out.
my $signer = $customers[3];
my $sql_tokens = "SELECT count(*) FROM auth_access_tokens t JOIN customers c"
  . " ON c.id = t.tokenable_id WHERE c.email = '$signer->{email}'";
my $tokens_before = $ha->sql('a', $sql_tokens);
($res, $took) = timed(sign_in_req($signer->{email}, 'pw-wait-1'));
unavailable_within('standby gone: sign-in', $res, $took);
unlike($res->content, qr/oat_/, 'standby gone: no token in the answer');

# Sustained load on a server of few threads: 16 request loops of notices and bank lists for
# 5 s, on 8 threads. Until the first commit gives up (one bound), the notices that came with
# it wait for it and may hold every thread, so a request that waited for a thread meanwhile
# may take two bounds; from then on one commit at a time tries the database, the other
# notices are refused at once, and every answer comes within the bound: notices 503 with
# Retry-After, bank lists 200.
{
    my ($few) = $ha->servers(1, extra => "BankDatabaseTimeout $BOUND\n" . one_process(8));
    my $load = $ha->load([$few], token => $customers[0]{token}, workers => 16, timeout => 30);
    my $t_load = Time::HiRes::time();
    Time::HiRes::sleep(5);
    my @a = $ha->stop_load($load);
    my @steady = grep { $_->{start} >= $t_load + $BOUND + 1 } @a;
    my ($steady_slowest) = sort { $b <=> $a } map { $_->{end} - $_->{start} } @steady;
    my @hooks = grep { $_->{kind} eq 'webhook' } @a;
    my @reads = grep { $_->{kind} eq 'banks' } @a;
    my ($slowest) = sort { $b <=> $a } map { $_->{end} - $_->{start} } @a;
    diag(sprintf 'standby gone, 16 loops on 8 threads for 5 s: %d notices (%s), %d bank lists'
          . ' (%s), slowest answer %.2f s, from %d s on %.2f s', scalar @hooks,
        join(', ', map { my $c = $_; "$c x " . grep { $_->{status} == $c } @hooks } 200, 503),
        scalar @reads,
        join(', ', map { my $c = $_; "$c x " . grep { $_->{status} == $c } @reads } 200, 503),
        $slowest // -1, $BOUND + 1, $steady_slowest // -1);
    cmp_ok(scalar @hooks, '>=', 16, 'under load: notices sent (' . @hooks . ')');
    cmp_ok(scalar @reads, '>=', 16, 'under load: bank lists sent (' . @reads . ')');
    is(scalar(grep { !($_->{status} == 503 && $_->{code} eq 'E_UNAVAILABLE'
        && $_->{retry_after} =~ /^\d+$/) } @hooks), 0,
        'under load: every notice 503 E_UNAVAILABLE with Retry-After');
    is(scalar(grep { $_->{status} != 200 } @reads), 0, 'under load: every bank list 200');
    cmp_ok($slowest // 99, '<=', 2 * $BOUND + $SLACK,
        'under load: every answer within two bounds (the first commit\'s, then its own)');
    cmp_ok(scalar @steady, '>=', 32, 'under load: answers once the first commit gave up (' . @steady . ')');
    cmp_ok($steady_slowest // 99, '<=', $BOUND + $SLACK,
        'under load: from then on every answer within the bound');
    $few->stop;
}

# The standby back: the client's retries are safe.
$ha->pgcluster(start => 'b');
is($ha->wait_sync('a'), 'sync', 'the standby is back');
$res = $s->request(delivery($n));
is($res->code, 200, 'the partner\'s retry of the notice: 200');
is(decode_body($res)->{body}{duplicate}, JSON::PP::true(),
    'as a duplicate: the first delivery had committed on the primary');
is($ha->sql('a', "SELECT count(*) FROM payment_notices WHERE transaction_reference"
      . " = '$n->{data}{transactionReference}'"), 1, 'stored once');
$res = $s->request(@$bvn_req);
is($res->code, 200, 'the customer\'s retry of BVN onboarding: 200');
is(decode_body($res)->{message}, 'BVN already verified', 'with the account made by the first');
is($ha->sql('a', "SELECT count(*) FROM accounts a JOIN auth_access_tokens t"
      . " ON t.tokenable_id = a.customer_id WHERE t.id = $id"), 1, 'one account');
$res = $s->request(sign_in_req($signer->{email}, 'pw-wait-1'));
is($res->code, 200, 'the customer\'s retry of the sign-in: 200');
my $new = (decode_body($res) // {})->{body}{token}{token};
ok($new, 'with a token');
is($s->request(banks($new))->code, 200, 'which works');
is($ha->sql('a', $sql_tokens), $tokens_before + 2,
    'the refused sign-in\'s token stayed on the primary, never handed out, beside the new one');

# --- a lock held by another session ---------------------------------------------------------
my $t2  = $customers[1]{token};
my $id2 = token_id($t2);
$ha->sql('a', "UPDATE auth_access_tokens SET last_used_at = NULL WHERE id = $id2");
my $holder = $ha->hold('a', $BOUND + 4, "SELECT 1 FROM auth_access_tokens WHERE id = $id2 FOR UPDATE");
$mark = $s->error_log_mark;
($res, $took) = timed(banks($t2));
is($res->code, 200, 'row locked: the bank list answers 200 (its use is recorded later)');
cmp_ok($took, '<', $BOUND, "without waiting for the lock ($took s)");
($res, $took) = timed(POST => '/auth/sign_out', headers => { Authorization => "Bearer $t2" });
unavailable_within('row locked: sign-out', $res, $took);
like($s->error_log_since($mark), qr/BANK0203: .*canceling statement due to lock timeout/,
    'the log says a lock was waited for');
waitpid $holder, 0;
is($s->request(POST => '/auth/sign_out', headers => { Authorization => "Bearer $t2" })->code,
    200, 'the lock gone: the sign-out\'s retry answers 200');

# --- a server that stopped answering --------------------------------------------------------
my @pids = $ha->processes('a');
ok(@pids > 1, 'the primary\'s processes (' . @pids . ')');
$mark = $s->error_log_mark;
kill 'STOP', @pids;
($res, $took) = eval { timed(delivery(notice())) };
kill 'CONT', @pids;
unavailable_within('server stopped: a notice', $res, $took);
like($s->error_log_since($mark), qr/did not answer/, 'the log says the server did not answer');
my $ok = 0;
for (1 .. 20) {
    last if ($ok = $s->request(delivery(notice()))->code == 200);
    Time::HiRes::sleep(0.25);
}
ok($ok, 'the server answering again: notices are stored');

# --- a write that reaches a server in recovery ----------------------------------------------
my $conninfo = sprintf 'host=%s port=5432 dbname=bank user=bank connect_timeout=2', $ha->dir('b');
my ($r) = do {
    local $ENV{BANK_DBPARAMS} = $conninfo;
    Bank::Servers::start_server(extra => "BankDatabaseTimeout $BOUND\n");
};
# One kept-alive client connection: the read and the writes reach the same httpd process, and
# so the same pool of database connections.
my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
is($r->request(banks($customers[2]{token}), ua => $ua)->code, 200,
    'a server on the standby: reads answer');
my $app = q{SELECT pid FROM pg_stat_activity WHERE application_name = 'mod_bank_test'};
my %before = map { $_ => 1 } split /\n/, $ha->sql('b', $app, 'postgres');
ok(%before, 'its connections to the standby (' . keys(%before) . ')');
$mark = $r->error_log_mark;
for my $i (1 .. 4) {
    my $w = $r->request(delivery(notice()), ua => $ua);
    assert_error($w, 503, 'E_UNAVAILABLE', "write $i on a server in recovery");
    like($w->header('Retry-After') // '', qr/^\d+$/, "write $i on a server in recovery: Retry-After");
}
like($r->error_log_since($mark), qr/read-only/, 'the log says the server is read-only');
my %after = map { $_ => 1 } split /\n/, $ha->sql('b', $app, 'postgres');
ok(scalar(grep { !$after{$_} } keys %before), 'a connection that met it was dropped, not reused')
  or diag('before: ' . join(' ', sort keys %before) . '; after: ' . join(' ', sort keys %after));
$r->stop;
$s->stop;
done_testing();
