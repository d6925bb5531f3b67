# PostgreSQL high availability (docs/deployment.md, "High availability"): a primary and a
# synchronous standby built by scripts/pgcluster, two httpd servers on the multi-host
# conninfo (target_session_attrs=read-write), request loops of notices and bank lists on
# both. A planned switchover (the primary stopped cleanly, the standby promoted), then the
# old primary rebuilt as the new one's standby, then a crash (the primary's postmaster
# killed with SIGKILL) and a promotion. Each time: every acknowledged notice is on the new
# primary; the gap answers only 503 E_UNAVAILABLE with Retry-After, never a hang, a 500 or a
# reset connection, and none slower than BankDatabaseTimeout allows; from 5 s after the
# promotion every answer is 200 on every httpd process of both servers (their access log
# names the process of each answer), with no restart; afterwards every endpoint answers 200
# on both.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Time::HiRes ();
use Bank::Test qw(:DEFAULT slurp);
use Bank::Servers qw(require_pgsql);
use Bank::Webhook;
use Bank::SignIn;
use Bank::Ha;

require_pgsql('builds a PostgreSQL primary and a synchronous standby');

my $ha = Bank::Ha->new;
is($ha->wait_sync('a'), 'sync',
    'the standby replicates synchronously');

# A customer with a token, and a BVN record, made on the primary before anything fails.
my $pw    = 'ha-password-1';
my $email = 'ha-' . time . "$$\@example.com";
$ha->bankctl_ok('customer', 'add', '--email', $email, '--password', $pw, '--first', 'Ada',
    '--last', 'Obi', '--phone', '+2348012345678');
my $token = $ha->bankctl_ok('token', 'issue', '--email', $email);
$ha->bankctl_ok('bvn', 'add', '--bvn', '22299900011', '--dob', '1990-04-12', '--first', 'Ada',
    '--last', 'Obi');

# The servers' BankDatabaseTimeout (the default): an answer that needs the database comes
# within about it plus 1.5 s (docs/configuration.md); $SLACK for a loaded machine.
my $BOUND = 5;
my $SLACK = 2.5;
# Each answer's start (ms), the server's port, the httpd process and the status.
my $pids_log = "$ENV{BANK_TEST_ROOT}/ha/pids_log";
my @servers  = $ha->servers(2, extra => <<"CONF");
BankDatabaseTimeout $BOUND
LogFormat "%{begin:msec}t %{local}p %P %>s" bank_pids
CustomLog "$pids_log" bank_pids
CONF
is($_->request(GET => '/misc/payment_banks', headers => { Authorization => "Bearer $token" })
      ->code, 200, 'a server on the multi-host conninfo answers')
  for @servers;

# Loops for $before seconds, then $event->() (returns the promotion's time), then $after
# seconds more; checks the answers and returns them.
sub through {
    my ($name, $event, %o) = @_;
    my $load = $ha->load(\@servers, token => $token, workers => 8);
    Time::HiRes::sleep(2);
    my $t_event = Time::HiRes::time();
    my $t_promoted = $event->();
    Time::HiRes::sleep($o{after} // 8);
    my $t_stop = Time::HiRes::time();
    my @a = $ha->stop_load($load);

    my @before = grep { $_->{end} < $t_event } @a;
    my @late   = grep { $_->{start} >= $t_promoted + 5 } @a;
    my @bad    = grep { $_->{status} != 200 && !($_->{status} == 503 && $_->{origin} eq 'server'
          && $_->{code} eq 'E_UNAVAILABLE' && $_->{retry_after} =~ /^\d+$/) } @a;
    my @gap    = grep { $_->{status} == 503 } @a;
    my ($last_gap) = map { $_->{start} - $t_promoted } grep { $_->{status} != 200 } reverse @a;
    my $slowest = 0;
    $slowest = $_->{end} - $_->{start} > $slowest ? $_->{end} - $_->{start} : $slowest for @a;
    diag(sprintf '%s: %d answers, %d before, %d x 503 in the gap, promotion %.2f s after the'
          . ' event, the last 503 asked %.2f s after the promotion, slowest answer %.2f s, %d'
          . ' answers from 5 s after the promotion',
        $name, scalar @a, scalar @before, scalar @gap, $t_promoted - $t_event, $last_gap // 0,
        $slowest, scalar @late);
    cmp_ok($slowest, '<=', $BOUND + $SLACK, "$name: the slowest answer within the bound");
    ok(@before > 20, "$name: the loops ran before it (" . @before . ' answers)');
    is(scalar(grep { $_->{status} != 200 } @before), 0, "$name: all 200 before it");
    is(scalar @bad, 0, "$name: every other answer is 503 E_UNAVAILABLE with Retry-After")
      or diag(join "\n", map { "$_->{kind} $_->{status} $_->{code} $_->{origin}" } @bad[0 .. ($#bad > 9 ? 9 : $#bad)]);
    ok(@late > 20, "$name: answers from 5 s after the promotion on (" . @late . ')');
    is(scalar(grep { $_->{status} != 200 } @late), 0,
        "$name: every answer from 5 s after the promotion is 200, on both servers");
    for my $s (0, 1) {
        ok(scalar(grep { $_->{server} == $s && $_->{status} == 200 } @late),
            "$name: server " . ($s + 1) . ' answered 200 after the promotion');
    }

    # Every httpd process of each server that answered from 5 s after the promotion on
    # answered only 200, and each server answered from more than one process: none kept a
    # dead connection or a stale state of its own.
    my (%seen, %not_ok);
    for (split /\n/, slurp($pids_log)) {
        my ($ms, $port, $pid, $status) = split / /;
        next if $ms / 1000 < $t_promoted + 5 || $ms / 1000 > $t_stop;
        $seen{$port}{$pid}++;
        $not_ok{$port}{$pid}++ if $status != 200;
    }
    for my $i (0, 1) {
        my $port = $servers[$i]->port;
        my @pids = sort keys %{ $seen{$port} // {} };
        diag(sprintf '%s, server %d: answers from 5 s after the promotion by processes %s',
            $name, $i + 1, join(', ', map { "$_ ($seen{$port}{$_})" } @pids));
        cmp_ok(scalar @pids, '>', 1, "$name, server " . ($i + 1)
              . ': more than one httpd process answered from 5 s after the promotion');
        is(join(' ', grep { $not_ok{$port}{$_} } @pids), '', "$name, server " . ($i + 1)
              . ': every one of them answered 200 only');
    }

    # Every notice answered 200 is on the new primary.
    my $primary = $ha->{primary};
    my %stored  = map { $_ => 1 } split /\n/,
      $ha->sql($primary, 'SELECT transaction_reference FROM payment_notices');
    my @acked   = map { $_->{ref} } grep { $_->{kind} eq 'webhook' && $_->{status} == 200 } @a;
    my @missing = grep { !$stored{$_} } @acked;
    ok(@acked > 20, "$name: notices acknowledged (" . @acked . ')');
    is(scalar @missing, 0, "$name: every acknowledged notice is on the new primary")
      or diag("missing: @missing[0 .. ($#missing > 9 ? 9 : $#missing)]");
    return @a;
}

sub promote {
    my ($node) = @_;
    $ha->pgcluster(promote => $node);
    $ha->{primary} = $node;
    return Time::HiRes::time();
}

# Every endpoint on both servers, after the event: sign-in, BVN, bank list, webhook.
sub endpoints {
    my ($name, $bvn_expect) = @_;
    for my $i (0, 1) {
        my $s = $servers[$i];
        my $n = "$name, server " . ($i + 1);
        my $si = $s->request(sign_in_req($email, $pw));
        is($si->code, 200, "$n: sign-in") or diag($si->content);
        my $b = $s->request(POST => '/onboarding/bvn',
            headers => { Authorization => "Bearer $token" },
            body    => { bvn_number => '22299900011', date_of_birth => '1990-04-12' });
        is($b->code, 200, "$n: BVN onboarding") or diag($b->content);
        is($s->request(GET => '/misc/payment_banks',
            headers => { Authorization => "Bearer $token" })->code, 200, "$n: bank list");
        is($s->request(delivery(notice()))->code, 200, "$n: webhook");
    }
}

# --- a planned switchover: the primary stopped cleanly, the standby promoted ----------------
through('switchover', sub {
    $ha->pgcluster(stop => 'a');
    return promote('b');
});
endpoints('after the switchover');

# The old primary comes back as the new one's synchronous standby (a fresh copy).
$ha->pgcluster(remove => 'a');
$ha->pgcluster(standby => 'a', $ha->dir('b'));
$ha->pgcluster(sync => 'b', 'a');
is($ha->wait_sync('b'), 'sync',
    'the old primary follows the new one synchronously');

# --- a crash: the primary's postmaster killed, the standby promoted a second later ---------
through('failover', sub {
    $ha->pgcluster(kill => 'b');
    Time::HiRes::sleep(1);
    return promote('a');
});
endpoints('after the failover');

$_->stop for @servers;
done_testing();
