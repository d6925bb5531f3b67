package Bank::SignIn;
# Helpers for the sign-in throttle tests (t/api/sign_in_throttle.t, t/api/pg_servers.t):
# a sign-in as a request that any server can send, and the checks of a 429.
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use Apache::Test qw(-withtestmore);
use Bank::Test;

our @EXPORT = qw(sign_in_req sign_in is_429 attempts_row $CLIENT_KEY);

our $CLIENT_KEY = 'test-client-key-1';

# (METHOD, path, options) of a sign-in: for json_request, a server's request() or
# Bank::Servers::concurrent.
sub sign_in_req {
    my ($email, $password, $path) = @_;
    return ('POST', $path || '/auth/sign_in',
        headers => { Authorization => "Bearer $CLIENT_KEY" },
        body    => { email => $email, password => $password, deviceToken => 'throttle-device' });
}

# A sign-in against the test server.
sub sign_in { return json_request(sign_in_req(@_)) }

# failures|ip of the throttle row of a lower-cased e-mail ('' when there is none).
sub attempts_row {
    my ($email) = @_;
    return db_value("SELECT failures || '|' || ip FROM sign_in_attempts WHERE email = '$email'");
}

# Checks a throttled answer (the test server's BankSignInThrottle is `5 60`: $max_wait 60
# also checks X-RateLimit-Limit 5); returns its Retry-After.
sub is_429 {
    my ($res, $name, $max_wait) = @_;
    assert_error($res, 429, 'E_TOO_MANY_REQUESTS', $name);
    my $ra = $res->header('Retry-After') // '';
    like($ra, qr/^\d+$/, "$name: Retry-After in seconds");
    ok($ra >= 1 && $ra <= $max_wait, "$name: Retry-After within the window (1..$max_wait)")
      or diag("Retry-After: $ra");
    is($res->header('X-RateLimit-Limit'), 5, "$name: X-RateLimit-Limit") if $max_wait == 60;
    is($res->header('X-RateLimit-Remaining'), 0, "$name: X-RateLimit-Remaining 0");
    return $ra;
}

1;
