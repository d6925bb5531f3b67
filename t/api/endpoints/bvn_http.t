# POST /onboarding/bvn: the HTTP-level error paths (docs/api.md): method, media
# type, body size, JSON, bearer token and ability, and an unreachable database.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Bank::Test;
use Bank::BvnTest;

my $mark = error_log_mark();
my $v    = verifiable();
my %auth = (Authorization => "Bearer $v->{token}");
my $good = { bvn_number => $v->{bvn}, date_of_birth => $v->{dob} };

# --- 405 with Allow ------------------------------------------------------------------------
for my $m (qw(GET HEAD PUT DELETE PATCH OPTIONS)) {
    my $r = json_request($m, '/onboarding/bvn', headers => \%auth,
        $m =~ /GET|HEAD|OPTIONS/ ? () : (body => $good));
    is($r->code, 405, "$m: 405");
    is($r->header('Allow'), 'POST', "$m: Allow: POST");
    assert_error($r, 405, 'E_METHOD_NOT_ALLOWED', $m) unless $m eq 'HEAD';
}

# --- 415 -------------------------------------------------------------------------------------
my $r = json_request('POST', '/onboarding/bvn', headers => \%auth, body => '{}',
    content_type => 'text/plain');
assert_error($r, 415, 'E_UNSUPPORTED_MEDIA_TYPE', 'text/plain');
$r = json_request('POST', '/onboarding/bvn', headers => \%auth, body => '{}', content_type => undef);
assert_error($r, 415, 'E_UNSUPPORTED_MEDIA_TYPE', 'no Content-Type');
$r = json_request('POST', '/onboarding/bvn', headers => \%auth, body => $good,
    content_type => 'application/x-www-form-urlencoded');
assert_error($r, 415, 'E_UNSUPPORTED_MEDIA_TYPE', 'form body');

# --- 400 E_INVALID_JSON ------------------------------------------------------------------------
my @bad = (
    'not JSON'         => 'bvn_number=1',
    'truncated'        => '{"bvn_number": "1',
    'array'            => '["bvn_number"]',
    'string'           => '"22212345678"',
    'invalid UTF-8'    => qq({"bvn_number": "\xff\xfe", "date_of_birth": "1990-01-01"}),
    'trailing garbage' => '{"bvn_number": "1"} x',
    'nested too deep'  => '{"a":' x 17 . '1' . '}' x 17,
);
while (my ($name, $body) = splice @bad, 0, 2) {
    assert_error(json_request('POST', '/onboarding/bvn', headers => \%auth, body => $body),
        400, 'E_INVALID_JSON', $name);
}

# --- 413 ---------------------------------------------------------------------------------------------
$r = json_request('POST', '/onboarding/bvn', headers => \%auth,
    body => { %$good, pad => 'x' x 70000 });
assert_error($r, 413, 'E_PAYLOAD_TOO_LARGE', 'body over BankMaxBody');
is($r->header('Connection'), 'close', '413: connection closed');

# --- 401 with WWW-Authenticate ---------------------------------------------------------------------
my @tokens = (
    'no token'     => undef,
    'not bearer'   => "Basic $v->{token}",
    'garbage'      => 'Bearer garbage',
    'wrong secret' => 'Bearer ' . substr($v->{token}, 0, -3) . 'AAA',
);
while (my ($name, $h) = splice @tokens, 0, 2) {
    my $res = json_request('POST', '/onboarding/bvn',
        headers => defined $h ? { Authorization => $h } : {}, body => $good);
    assert_error($res, 401, 'E_UNAUTHORIZED_ACCESS', $name);
    is($res->header('WWW-Authenticate'), 'Bearer realm="mod_bank", error="invalid_token"',
        "$name: WWW-Authenticate");
}
# The token is checked before the body is read: without one, whatever the body, 401 (the
# 415, 400 and 413 above come only with a valid token).
my @unread = (
    'text/plain body'      => [body => '{}', content_type => 'text/plain'],
    'malformed JSON'       => [body => '{'],
    'not an object'        => [body => '["bvn_number"]'],
    'body over the limit'  => [body => { %$good, pad => 'x' x 70000 }],
    'oversized text/plain' => [body => 'x' x 70000, content_type => 'text/plain'],
);
while (my ($name, $req) = splice @unread, 0, 2) {
    for my $t (['no token', {}], ['garbage token', { Authorization => 'Bearer garbage' }]) {
        my $res = json_request('POST', '/onboarding/bvn', headers => $t->[1], @$req);
        assert_error($res, 401, 'E_UNAUTHORIZED_ACCESS', "$t->[0], $name");
        is($res->header('WWW-Authenticate'), 'Bearer realm="mod_bank", error="invalid_token"',
            "$t->[0], $name: WWW-Authenticate");
    }
}
# httpd throws the unread body away after the 401: the connection stays usable.
{
    require LWP::UserAgent;
    my $ka = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
    my @ports;
    for my $body ({ %$good, pad => 'x' x 70000 }, $good) {
        my $res = json_request('POST', '/onboarding/bvn', body => $body, ua => $ka);
        assert_error($res, 401, 'E_UNAUTHORIZED_ACCESS', 'no token, kept-alive connection');
        push @ports, map { $_->sockport } $ka->conn_cache->get_connections;
    }
    is(scalar @ports, 2, 'kept-alive: the connection was kept after each 401');
    is($ports[0], $ports[1], 'kept-alive: the next request used the same connection');
}
# A chunked body over the limit is not read either (and with the token it is 413).
for my $t (['no token', {}, 401, 'E_UNAUTHORIZED_ACCESS'],
    ['token', \%auth, 413, 'E_PAYLOAD_TOO_LARGE'])
{
    require HTTP::Request;
    my @parts = ('{"pad":"', ('x' x 8192) x 9, '"}');
    my $req = HTTP::Request->new(POST => Apache::TestRequest::resolve_url('/onboarding/bvn'),
        [%{ $t->[1] }, 'Content-Type' => 'application/json'], sub { return shift @parts });
    my $res = Apache::TestRequest::user_agent()->request($req);
    assert_error($res, $t->[2], $t->[3], "$t->[0], chunked body over the limit");
}

my $rv = verifiable();
bankctl('token', 'revoke', '--email', $rv->{c}{email});
assert_error(bvn_post($rv), 401, 'E_UNAUTHORIZED_ACCESS', 'revoked token');
is(customer_row($rv->{c}{id}), '|', 'revoked token: customer unchanged');

my $ex = verifiable();
my ($b64) = $ex->{token} =~ /^oat_([^.]+)\./;
$b64 =~ tr{-_}{+/};
require MIME::Base64;
my $tid = MIME::Base64::decode_base64($b64 . '=' x ((4 - length($b64) % 4) % 4));
db_exec("UPDATE auth_access_tokens SET expires_at = '2020-01-01T00:00:00.000Z' WHERE id = $tid");
assert_error(bvn_post($ex), 401, 'E_UNAUTHORIZED_ACCESS', 'expired token');
is(account_count($ex->{c}{id}), 0, 'expired token: no account');

# --- 403 without onboarding:bvn ----------------------------------------------------------------------
my $fb = verifiable(abilities => 'banks:read');
assert_error(bvn_post($fb), 403, 'E_FORBIDDEN', 'token without onboarding:bvn');
is(customer_row($fb->{c}{id}), '|', '403: customer unchanged');
# ...also before the body: a token without the ability gets 403 whatever it sent.
assert_error(bvn_post($fb, body => '{'), 403, 'E_FORBIDDEN',
    'without onboarding:bvn, malformed JSON');
assert_error(json_request(bvn_req($fb, body => '{}'), content_type => 'text/plain'), 403,
    'E_FORBIDDEN', 'without onboarding:bvn, text/plain');
assert_error(bvn_post($fb, body => { pad => 'x' x 70000 }), 403, 'E_FORBIDDEN',
    'without onboarding:bvn, body over the limit');
my $fb2 = issue_token($fb->{c}{email}, '--abilities', 'banks:read,onboarding:bvn');
is(bvn_post($fb, token => $fb2)->code, 200, 'onboarding:bvn among other abilities: 200');

# --- 503 when the database cannot be reached ---------------------------------------------------------
Apache::TestRequest::module('bank_nodb');
$r = json_request('POST', '/onboarding/bvn', headers => \%auth, body => $good);
assert_error($r, 503, 'E_UNAVAILABLE', 'database unreachable');
like($r->header('Retry-After') // '', qr/^\d+$/, 'database unreachable: Retry-After');
unlike($r->content, qr{missing-dir|sqlite|/tmp}i, 'database unreachable: no internals');
Apache::TestRequest::module('default');

# No BVN in the error log, whatever the request's fate.
my $log   = error_log_since($mark);
my @leaks = grep { index($log, $_) >= 0 } used_bvns();
like($log, qr/BANK0301: bearer refused/, 'log: the refusals were logged');
is(scalar @leaks, 0, 'log: no BVN in any line') or diag("leaked: @leaks");

done_testing();
