# The per-process cache of verified tokens (docs/configuration.md, BankTokenCacheSeconds):
# with 0 (the test server's default) a revoked token is refused at once; on /cached/banks
# (2 seconds) a token verified once is answered from the cache on the same process, and a
# revocation still reaches it through the revocation feed well within a second.
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

# --- 2 seconds: cached, yet a revocation is refused at once on the process that cached it ---
# The process reads the revocation feed before answering from its cache when its last read
# is 200 ms old; t/api/endpoints/token_revocation.t shows every process of every server refusing
# within 1 s and that the token was answered from the caches.
{
    my $c  = new_customer();
    my $t  = issue_token($c->{email});
    my $ua = conn();
    is(get($ua, '/cached/banks', $t)->code, 200, 'cache 2 s: the token works') for 1 .. 2;
    my $revoked = time;
    bankctl('token', 'revoke', '--email', $c->{email});
    my $done = time;
    sleep 0.25 - (time - $done) if time - $done < 0.25;
    assert_error(get($ua, '/cached/banks', $t), 401, 'E_UNAUTHORIZED_ACCESS',
        'cache 2 s: a revoked token is refused on the process that verified it, well within the delay');
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
