# BankPushSpareCPU: while the machine's CPUs have less idle time than the directive's share,
# the push sender sends a few messages per round (bank_push_lean_rounds_total counts those
# rounds) and every message still goes out; with BankPushSpareCPU 0 it never holds back
# (docs/push.md, "Under a flood"). The CPUs are kept busy by spinning processes, one per
# CPU and one more, for the length of each case.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Webhook;
use Bank::Push;

my $fake = fake_start(delay => 0.05);

sub cpus {
    open(my $fh, '<', '/proc/cpuinfo') or return 2;
    my $n = grep { /^processor\s*:/ } <$fh>;
    return $n || 2;
}

# Spinning processes: busy CPUs for as long as they run.
sub spin_start {
    my @pids;
    for (0 .. cpus()) {
        my $pid = fork();
        die "fork: $!" unless defined $pid;
        if (!$pid) { 1 while 1; exit 0 }
        push @pids, $pid;
    }
    return @pids;
}

sub spin_stop { kill 'KILL', @_; waitpid($_, 0) for @_ }

# Notices for $count customers' single devices, one every 200 ms; the messages that reached
# FCM within $secs.
sub send_spread {
    my ($srv, $count, $secs) = @_;
    my @c = map { customer_with_devices(1) } 1 .. $count;
    for my $c (@c) {
        my $res = $srv->request(delivery(notice(walletId => $c->{wallet})));
        is($res->code, 200, 'notice answered 200') or diag($res->content);
        select undef, undef, undef, 0.2;
    }
    my @tokens = map { $_->{tokens}[0] } @c;
    wait_for($secs, sub { (grep { fake_calls($fake, $_) } @tokens) == @tokens });
    return scalar(grep { fake_calls($fake, $_) } @tokens);
}

for my $case ([100, 'held back: the CPUs are never all idle'], [0, 'never held back']) {
    my ($share, $what) = @$case;
    my $srv = push_server($fake, "BankPushSpareCPU $share");
    my $before = server_metric($srv, 'bank_push_lean_rounds_total');
    is($before, 0, "BankPushSpareCPU $share: no lean round before any message");
    sleep 1;    # the sender's first reading of the CPUs is behind it
    my @spin = spin_start();
    my $got = eval { send_spread($srv, 12, 30) };
    my $err = $@;
    spin_stop(@spin);
    die $err if $err;
    is($got, 12, "BankPushSpareCPU $share, CPUs busy: every message reached FCM");
    my $lean = server_metric($srv, 'bank_push_lean_rounds_total');
    if ($share) {
        cmp_ok($lean, '>', 0, "BankPushSpareCPU $share: $what (lean rounds counted)");
    } else {
        is($lean, 0, "BankPushSpareCPU $share: $what (no lean round)");
    }
    $srv->stop;
}

fake_stop($fake);
done_testing();
