# A flood of sign-ins cannot take the server's memory or threads (docs/configuration.md,
# BankPasswordVerifyConcurrency): on /flood/sign_in each process verifies one password at a
# time with one more waiting; the sign-ins beyond that are answered at once with 503
# E_UNAVAILABLE and Retry-After, nothing verified and no failure counted, and the others get
# their usual answers (200 for the right password, 400 for an unknown e-mail).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::SignIn;
use Bank::Servers qw(main_server concurrent);

my $server = main_server();
my $c      = new_customer();
my $tag    = unique();
# Half right passwords, half unknown e-mails (each its own throttle key: never 429).
my @jobs = map {
    my @req = $_ % 2
      ? sign_in_req($c->{email}, $c->{password}, '/flood/sign_in')
      : sign_in_req("flood-$tag-$_\@example.com", 'whatever-password', '/flood/sign_in');
    [$server, @req]
} 1 .. 16;
my $mark = $server->error_log_mark;
my @res  = concurrent(@jobs);
my %by   = map { $_ => [] } qw(200 400 503 other);
push @{ $by{ exists $by{ $_->code } ? $_->code : 'other' } }, $_ for @res;
diag('answers: ' . join ',', map { $_->code } @res);

is(scalar @{ $by{other} }, 0, 'sixteen concurrent sign-ins: every answer is 200, 400 or 503');
cmp_ok(scalar @{ $by{503} }, '>=', 1, 'the sign-ins beyond the bound are refused with 503');
cmp_ok(scalar(@{ $by{200} }) + scalar(@{ $by{400} }), '>=', 2,
    'the sign-ins within the bound are verified (200 or 400)');
for my $r (@{ $by{503} }) {
    assert_error($r, 503, 'E_UNAVAILABLE', 'a sign-in over the bound');
    is($r->header('Retry-After'), '1', 'the 503 says when to retry (Retry-After: 1)');
}
is(scalar(grep { $_->code == 200 && decode_body($_)->{body}{token}{token} } @{ $by{200} }),
    scalar @{ $by{200} }, 'every 200 carries a token');
# A refused sign-in was not verified, so it counted no failure: throttle rows exist only for
# the unknown e-mails that were answered 400.
is(db_value("SELECT count(*) FROM sign_in_attempts WHERE email LIKE 'flood-$tag-%'"),
    scalar @{ $by{400} }, 'failures counted only for the sign-ins that were verified');
like($server->error_log_since($mark), qr/BANK0511: sign-in refused: every password verification/,
    'the refusal is logged (BANK0511)');

# The same sign-ins one at a time: nothing is refused once the flood is over.
my $after = sign_in($c->{email}, $c->{password}, '/flood/sign_in');
is($after->code, 200, 'after the flood a sign-in on the same Location succeeds');

done_testing();
