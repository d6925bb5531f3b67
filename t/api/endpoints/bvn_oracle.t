# No timing oracle with an identity provider (docs/security.md, docs/identity.md): a BVN
# another customer holds is judged on the kept record without a call, and its answer is held
# for one of the provider's latest answer times, so that a wrong date of birth for a taken
# BVN, an unknown BVN and a BVN the provider knows but no customer here holds get the same
# status, body and headers in overlapping times. The fake provider answers in about 100 ms
# (/fake/wait100, plus its CGI start); 50 requests per case, interleaved so that the load of
# the machine falls on the three alike.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Time::HiRes ();
use Bank::Test;
use Bank::BvnTest;

my $dir  = $ENV{BANK_TEST_ROOT};
my $path = '/dojah/wait100/onboarding/bvn';
my $n    = 50;

sub fake_identity {
    my ($bvn, $dob) = @_;
    open my $f, '>', "$dir/fake-ids/$bvn" or die "fake-ids: $!";
    print $f "Ada||Obi|$dob\n";
    close $f;
}

sub hits {
    open my $f, '<', "$dir/fake-hits" or die "fake-hits: $!";
    return scalar grep { /^wait100 / } <$f>;
}

sub quantile {
    my ($q, @v) = @_;
    @v = sort { $a <=> $b } @v;
    return $v[int($q * $#v + 0.5)];
}

# The holder: verified with their BVN through the provider, which keeps the record.
my $holder = verifiable(no_record => 1);
fake_identity($holder->{bvn}, $holder->{dob});
is(bvn_post($holder, path => $path)->code, 200, 'the holder is verified through the provider');

# Three strangers, each with a wrong date of birth for: the holder's BVN (taken), a BVN
# nobody has (unknown), a BVN the provider knows but nobody here holds (elsewhere).
my $elsewhere = next_bvn();
fake_identity($elsewhere, '1971-07-07');
my %case = (
    taken     => [verifiable(no_record => 1), $holder->{bvn}],
    unknown   => [verifiable(no_record => 1), next_bvn()],
    elsewhere => [verifiable(no_record => 1), $elsewhere],
);
my @order = qw(unknown elsewhere taken);
my (%took, %res);
my $hits = hits();
for my $i (1 .. $n) {
    for my $k (@order) {
        my ($v, $bvn) = @{ $case{$k} };
        my $t0  = Time::HiRes::time();
        my $res = bvn_post($v, path => $path, bvn => $bvn, dob => '1960-01-01');
        push @{ $took{$k} }, Time::HiRes::time() - $t0;
        push @{ $res{$k} },  $res;
    }
}
is(hits(), $hits + 2 * $n, 'the provider was called for the unknown BVN and the one known '
      . 'elsewhere only: the taken BVN costs no call');

# The same answer, request for request.
my $headers = sub {
    my ($r) = @_;
    return join "\n", map { "$_: " . $r->header($_) }
      sort grep { !/^(?:Date|Client-.*)$/i } $r->header_field_names;
};
for my $k (@order) {
    my @codes = map { $_->code } @{ $res{$k} };
    is(scalar(grep { $_ == 422 } @codes), $n, "$k: every answer is 422");
}
my $same = 0;
for my $i (0 .. $n - 1) {
    my ($u, $e, $t) = map { $res{$_}[$i] } @order;
    if ($u->content ne $t->content || $e->content ne $t->content
        || $headers->($u) ne $headers->($t) || $headers->($e) ne $headers->($t)) {
        diag("request $i differs:");
        diag($headers->($_) . "\n" . $_->content) for $u, $e, $t;
        next;
    }
    $same++;
}
is($same, $n, 'every request: the same body and headers in the three cases');
is($res{taken}[0]->header('X-RateLimit-Remaining'), 999, 'the first answer: 999 left');
is($res{taken}[-1]->header('X-RateLimit-Remaining'), 1000 - $n, "the last answer: @{[1000 - $n]} left");

# The times: the taken BVN's against each of the others.
my %ms = map {
    my $k = $_;
    ($k => { map { $_ => 1000 * quantile($_, @{ $took{$k} }) } 0, 0.1, 0.5, 0.9, 1 })
} @order;
diag(sprintf '%-9s min %6.1f p10 %6.1f median %6.1f p90 %6.1f max %6.1f ms', $_,
    @{ $ms{$_} }{0, 0.1, 0.5, 0.9, 1}) for @order;
for my $k (qw(unknown elsewhere)) {
    my ($t, $o) = ($ms{taken}, $ms{$k});
    my $tol = 0.3 * $o->{0.5} > 30 ? 0.3 * $o->{0.5} : 30;
    cmp_ok(abs($t->{0.5} - $o->{0.5}), '<=', $tol,
        "taken vs $k: medians within 30% (or 30 ms)");
    ok($t->{0} <= $o->{1} && $o->{0} <= $t->{1}, "taken vs $k: the ranges overlap");
    cmp_ok($t->{0.1}, '>=', 0.6 * $o->{0.1}, "taken vs $k: no fast tail (p10 at least 60% of the other's)");
}

done_testing();
