# A sign-in flood against the default verification bound (docs/configuration.md,
# BankPasswordVerifyConcurrency): with the processes and threads the dev server ships
# (conf/dev-httpd.conf.in: 4 processes of 16 threads) and the defaults derived from them and
# from the CPUs, a sign-in among 64, 200 or 1,000 concurrent ones is answered within 2 s, or
# refused with 503 and Retry-After; the flood's own sign-ins too. Nothing waits 20 s.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Flood qw(flood);
use Bank::Servers qw(start_server);

chomp(my $cpus = `nproc`);
$cpus ||= 1;
# The dev server's MPM settings, and the server-wide bound at its default (the CPU count:
# the suite's own configuration sets 1).
my $two = start_server(extra => <<"CONF");
StartServers 2
ServerLimit 4
ThreadsPerChild 16
MaxRequestWorkers 64
MinSpareThreads 25
MaxSpareThreads 75
BankPasswordVerifyServerConcurrency $cpus
CONF
my $c   = new_customer();
my $tag = unique();

sub quantile {
    my ($q, @v) = @_;
    @v = sort { $a <=> $b } @v;
    return $v[int($q * $#v + 0.5)];
}

for my $n (64, 200, 1000) {
    my $r = flood($two->port, $n, sub { ("flood-$tag-$n-$_[0]\@example.com", 'wrong-password') },
        [$c->{email}, $c->{password}]);
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

# A queue of 1,000 per process behind one verification at a time in the whole server: the
# sign-ins that did not start computing within a second are refused then, none waits longer.
{
    my $mark = error_log_mark();
    my $r = flood(Apache::Test::vars('port'), 60,
        sub { ("deep-$tag-$_[0]\@example.com", 'wrong-password') }, [$c->{email}, $c->{password}],
        path => '/deep/sign_in');
    my @all = (@{ $r->{flood} }, $r->{legit});
    my %by;
    $by{ $_->{status} }++ for @all;
    diag(sprintf '60 sign-ins, queue 1000: %s; slowest %.2f s', join(', ',
        map { "$_ x $by{$_}" } sort keys %by), quantile(1, map { $_->{secs} } @all));
    cmp_ok($by{503} // 0, '>=', 1, 'queue 1000: the sign-ins that waited past the bound are refused');
    is(scalar(grep { $_->{status} == 503 && !defined $_->{retry_after} } @all), 0,
        'queue 1000: every 503 has Retry-After');
    is(scalar(grep { $_->{status} != 400 && $_->{status} != 503 && $_->{status} != 200 } @all), 0,
        'queue 1000: every sign-in answered 200, 400 or 503');
    cmp_ok(quantile(1, map { $_->{secs} } @all), '<', 2, 'queue 1000: every answer within 2 s');
    like(error_log_since($mark), qr/BANK0511: sign-in refused: .*could not start within 1000 ms/,
        'the refusal is logged (BANK0511)');
}

done_testing();
