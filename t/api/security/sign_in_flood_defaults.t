# A sign-in flood against the default verification bound (docs/configuration.md,
# BankPasswordVerifyConcurrency): with the MPM, processes and threads the dev server ships
# (its MPM lines, read from conf/dev-httpd.conf.in, the same as docs/deployment.md's) and the
# defaults derived from them and from the CPUs, a sign-in among
# 64, 200 or 1,000 concurrent ones is answered within 2 s, or refused with 503 and
# Retry-After; the flood's own sign-ins too. Nothing waits 20 s.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Cwd qw(getcwd);
use Bank::Test qw(:DEFAULT slurp runs_processes);
use Bank::Flood qw(flood);
use Bank::SignIn qw(hash_majority);
use Bank::Servers qw(start_server);

chomp(my $cpus = `nproc`);
$cpus ||= 1;
# The dev server's MPM settings as shipped, and the server-wide bound and the wait at their
# defaults (the CPU count and 1000 ms: the suite's own configuration sets 1 and 20000);
# /plain/sign_in sets no bound of its own.
my $mpm_names = qr/StartServers|ServerLimit|ThreadLimit|ThreadsPerChild|MaxRequestWorkers|MinSpareThreads|MaxSpareThreads|AsyncRequestWorkerFactor/;
my $dev       = slurp(getcwd() . '/conf/dev-httpd.conf.in');
my ($mpm_kind) = $dev =~ /^LoadModule mpm_(\w+)_module /m;
my @mpm       = $dev =~ /^((?:$mpm_names)\s+\d+)\s*$/mg;
my %mpm       = map { split ' ' } @mpm;
cmp_ok($mpm{ThreadsPerChild} // 0, '>=', 256, "the shipped MPM settings read: $mpm_kind; " . join('; ', @mpm));
my $two = start_server(mpm => $mpm_kind, extra => join("\n", @mpm, <<"CONF"));
BankPasswordVerifyServerConcurrency $cpus
BankPasswordVerifyMaxWait 1000
CONF
# The settings are in effect: StartServers processes, each with its ThreadsPerChild request
# threads (the parent's other child, mod_cgid's daemon, has one).
{
    chomp(my $ppid = slurp($two->{pidfile}));
    runs_processes($ppid, $mpm{StartServers}, $mpm{ThreadsPerChild}, 'the dev server\'s settings');
    like(slurp("/proc/$ppid/maps"), qr{/mod_mpm_\Q$mpm_kind\E\.so$}m, "the $mpm_kind MPM runs");
}
my $c   = new_customer();
my $tag = unique();

sub quantile {
    my ($q, @v) = @_;
    @v = sort { $a <=> $b } @v;
    return $v[int($q * $#v + 0.5)];
}

for my $n (64, 200, 1000) {
    my $r = flood($two->port, $n, sub { ("flood-$tag-$n-$_[0]\@example.com", 'wrong-password') },
        [$c->{email}, $c->{password}], path => '/plain/sign_in');
    my @f = @{ $r->{flood} };
    my %by;
    $by{ $_->{status} }++ for @f;
    my @secs = map { $_->{secs} } @f;
    diag(sprintf "%4d connections: %s; flood p50 %.2f p99 %.2f max %.2f s; the customer: %s in %.2f s",
        $n, join(', ', map { "$_ x $by{$_}" } sort keys %by), quantile(0.5, @secs),
        quantile(0.99, @secs), quantile(1, @secs), $r->{legit}{status}, $r->{legit}{secs});

    my $l = $r->{legit};
    ok($l->{status} == 200 || ($l->{status} == 503 && defined $l->{retry_after}),
        "$n connections: the customer gets 200, or 503 with Retry-After (got $l->{status})");
    cmp_ok($l->{secs}, '<', 2, "$n connections: the customer's answer within 2 s");
    is(scalar(grep { $_->{status} != 400 && $_->{status} != 503 } @f), 0,
        "$n connections: every flood sign-in answered 400 (verified) or 503");
    is(scalar(grep { $_->{status} == 503 && !defined $_->{retry_after} } @f), 0,
        "$n connections: every 503 has Retry-After");
    cmp_ok(quantile(0.99, @secs), '<', 2, "$n connections: 99% of the flood answered within 2 s");
    cmp_ok(quantile(1, map { $_->{secs} } grep { $_->{status} == 400 } @f) // 0, '<', 2.5,
        "$n connections: every verified sign-in of the flood answered within 2.5 s");
}

$two->stop;

# BankPasswordVerifyMaxWait: a queue of 1,000 per process behind one verification at a time
# in the whole server (the suite's BankPasswordVerifyServerConcurrency 1), 40 sign-ins, fewer
# than the server's threads: the ones that did not start computing within 500 ms are refused
# then (the queue itself is never full), and none waits much longer.
# The hash an unknown e-mail is verified against follows the stored hashes (the suite's
# BankPasswordDummyRefresh 1): make AdonisJS's scrypt default the most common, so these
# verifications cost what the queue is sized for, whatever earlier tests stored.
my $imported = hash_majority('$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$IDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit8aQeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA');
{
    my $three = start_server(extra => "BankPasswordVerifyMaxWait 500\n");
    my $mark  = $three->error_log_mark;
    my $r     = flood($three->port, 40,
        sub { ("deep-$tag-$_[0]\@example.com", 'wrong-password') }, [$c->{email}, $c->{password}],
        path => '/deep/sign_in');
    my @all = (@{ $r->{flood} }, $r->{legit});
    my %by;
    $by{ $_->{status} }++ for @all;
    my @refused = map { $_->{secs} } grep { $_->{status} == 503 } @all;
    diag(sprintf '40 sign-ins, queue 1000, wait 500 ms: %s; slowest %.2f s, first 503 after %.2f s',
        join(', ', map { "$_ x $by{$_}" } sort keys %by), quantile(1, map { $_->{secs} } @all),
        quantile(0, @refused) // -1);
    cmp_ok(scalar @refused, '>=', 1, 'wait 500 ms: the sign-ins that waited past it are refused');
    cmp_ok(quantile(0, @refused) // 0, '>=', 0.45, 'wait 500 ms: refused once it passed, not before');
    is(scalar(grep { $_->{status} == 503 && !defined $_->{retry_after} } @all), 0,
        'wait 500 ms: every 503 has Retry-After');
    is(scalar(grep { $_->{status} != 400 && $_->{status} != 503 && $_->{status} != 200 } @all), 0,
        'wait 500 ms: every sign-in answered 200, 400 or 503');
    cmp_ok(quantile(1, map { $_->{secs} } @all), '<', 1.5, 'wait 500 ms: every answer within 1.5 s');
    like($three->error_log_since($mark), qr/BANK0511: sign-in refused: .*could not start within 500 ms/,
        'the refusal is logged (BANK0511)');
    $three->stop;
}

db_exec("DELETE FROM customers WHERE email LIKE '$imported.%'");
done_testing();
