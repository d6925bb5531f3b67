# The per-process cache of verified tokens (docs/configuration.md, BankTokenCacheSeconds):
# with 0 (the test server's default) a revoked token is refused at once; on /cached/banks
# (2 seconds) a token verified once is answered from the cache on the same process without
# the database, so a revocation takes effect there within the delay, and never later.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use LWP::UserAgent ();
use Time::HiRes qw(time sleep);
use Bank::Test;

my $base = Apache::TestRequest::resolve_url('');
$base =~ s{/$}{};

# One keep-alive connection: its requests reach the same httpd process.
sub conn { return LWP::UserAgent->new(keep_alive => 1, timeout => 30) }
sub get  { my ($ua, $path, $token) = @_; return $ua->get("$base$path", Authorization => "Bearer $token") }

# --- 0: a revoked token is refused on the next request ---------------------------------------
{
    my $c  = new_customer();
    my $t  = issue_token($c->{email});
    my $ua = conn();
    is(get($ua, '/misc/payment_banks', $t)->code, 200, 'cache off: the token works');
    bankctl('token', 'revoke', '--email', $c->{email});
    my $r = get($ua, '/misc/payment_banks', $t);
    assert_error($r, 401, 'E_UNAUTHORIZED_ACCESS', 'cache off: revoked token, same connection');
}

# --- 2 seconds: cached on the process that verified it, refused within the delay -----------
# The revocation and the request after it must fit in the delay for the cached answer to be
# seen: on a machine too busy for that, the round is tried again (up to five times).
{
    my ($t, $ua, $revoked, $first, $within);
    for my $try (1 .. 5) {
        my $c = new_customer();
        $t  = issue_token($c->{email});
        $ua = conn();
        is(get($ua, '/cached/banks', $t)->code, 200, "cache 2 s: the token works (try $try)");
        $revoked = time;
        bankctl('token', 'revoke', '--email', $c->{email});
        $first  = get($ua, '/cached/banks', $t);
        $within = time - $revoked < 1.5;
        last if $within;
        diag("try $try: the revocation and the request took over 1.5 s");
    }
    ok($within, 'cache 2 s: a revocation and a request within the delay');
    is($first->code, 200, 'cache 2 s: the revoked token still works on the process that '
          . 'verified it, within the delay (no database read)');
    # every request after the delay, on this connection and on new ones, is refused
    sleep 2.1 - (time - $revoked) if time - $revoked < 2.1;
    assert_error(get($ua, '/cached/banks', $t), 401, 'E_UNAUTHORIZED_ACCESS',
        'cache 2 s: refused once the delay has passed, same connection');
    my @later = map { get(conn(), '/cached/banks', $t)->code } 1 .. 6;
    is(scalar(grep { $_ != 401 } @later), 0, 'cache 2 s: refused on new connections too')
      or diag("@later");
}

# --- an unknown token is never cached: refused every time ---------------------------------
{
    my $ua = conn();
    is(get($ua, '/cached/banks', 'oat_MTIzNDU2.bm90LWEtdG9rZW4')->code, 401,
        'cache 2 s: an unknown token is refused') for 1 .. 2;
}

# --- a token with the wrong secret for a cached id is refused --------------------------------
{
    my $c  = new_customer();
    my $t  = issue_token($c->{email});
    my $ua = conn();
    is(get($ua, '/cached/banks', $t)->code, 200, 'cache 2 s: a token verified and cached');
    (my $forged = $t) =~ s/\.(.)/'.' . ($1 eq 'A' ? 'B' : 'A')/e;
    assert_error(get($ua, '/cached/banks', $forged), 401, 'E_UNAUTHORIZED_ACCESS',
        'cache 2 s: the same id with another secret is refused');
}
# --- sign-out: the process that answers it forgets the token at once -------------------------
{
    my $c  = new_customer();
    my $t  = issue_token($c->{email});
    my $ua = conn();
    is(get($ua, '/cached/banks', $t)->code, 200, 'cache 2 s: a token verified and cached');
    my $out = $ua->post("$base/auth/sign_out", Authorization => "Bearer $t");
    is($out->code, 200, 'sign-out on the same connection (the same process)');
    assert_error(get($ua, '/cached/banks', $t), 401, 'E_UNAUTHORIZED_ACCESS',
        'cache 2 s: after its sign-out the token is refused at once on that process');
}
done_testing();
