# POST /auth/sign_out (docs/api.md): the bearer token the request carries is revoked (its row
# deleted, as AdonisJS's invalidateToken does) and refused everywhere from then on; the
# customer's other tokens stay valid. Every error path.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use MIME::Base64 qw(decode_base64);
use Bank::Test qw(:DEFAULT raw);
use Bank::BvnTest qw(bvn_post);
use Bank::Servers qw(main_server concurrent);

my $PATH = '/auth/sign_out';

sub sign_out {
    my ($token, %o) = @_;
    return json_request($o{method} // 'POST', $o{path} // $PATH,
        headers => { defined $token ? (Authorization => "Bearer $token") : (), %{ $o{headers} || {} } },
        exists $o{body} ? (body => $o{body}) : (), %{ $o{extra} || {} });
}

# The database id of a token (oat_<base64url id>.<secret>).
sub token_id {
    my ($t) = @_;
    my ($b) = $t =~ /^oat_([^.]+)\./ or die "not a token: $t";
    $b =~ tr{-_}{+/};
    return decode_base64($b . '=' x ((4 - length($b) % 4) % 4));
}

sub token_rows { return db_value("SELECT count(*) FROM auth_access_tokens WHERE id = $_[0]") }

sub is_401 {
    my ($res, $name) = @_;
    assert_error($res, 401, 'E_UNAUTHORIZED_ACCESS', $name);
    is($res->header('WWW-Authenticate'), 'Bearer realm="mod_bank", error="invalid_token"',
        "$name: WWW-Authenticate");
}

# --- a signed-in customer signs out ------------------------------------------------------------
my $c  = new_customer();
my $in = json_request('POST', '/auth/sign_in',
    headers => { Authorization => 'Bearer test-client-key-1' },
    body    => { email => $c->{email}, password => $c->{password}, deviceToken => 'dev-signout' });
is($in->code, 200, 'signed in') or diag($in->as_string);
my $token = decode_body($in)->{body}{token}{token};
my $other = issue_token($c->{email});    # another device's token of the same customer
my $id    = token_id($token);
is(GET('/misc/payment_banks', Authorization => "Bearer $token")->code, 200, 'the token works');
is(token_rows($id), 1, 'its row is stored');

my $mark = error_log_mark();
my $res  = sign_out($token);
is($res->code, 200, 'sign-out: 200');
like($res->header('Content-Type') // '', qr{^application/json; charset=utf-8$}, 'sign-out: JSON');
is($res->header('Cache-Control'), 'no-store', 'sign-out: Cache-Control no-store');
is($res->content, '{"body":{"revoked":true}}', 'sign-out: {"body": {"revoked": true}}');
is(token_rows($id), 0, 'the token row is deleted');

# Refused everywhere from then on.
is_401(GET('/misc/payment_banks', Authorization => "Bearer $token"), 'revoked token: bank list');
is_401(bvn_post({ token => $token }, bvn => '12345678901', dob => '1990-04-12'), 'revoked token: BVN');
is_401(sign_out($token), 'revoked token: sign-out again');
is(GET('/misc/payment_banks', Authorization => "Bearer $other")->code, 200,
    'the customer\'s other token stays valid');

my $log = '';
for (1 .. 20) {    # the log line may land a moment after the answer
    $log = error_log_since($mark);
    last if $log =~ /BANK1001/;
    select undef, undef, undef, 0.1;
}
like($log, qr/BANK1001: customer \Q$c->{id}\E signed out, token id \Q$id\E revoked/,
    'logged with the customer and the token id');
my ($secret) = $token =~ /\.(.+)$/;
unlike(error_log_since(0), qr/\Q$secret\E/, 'the token never appears in the error log');

# --- the same token signed out several times at once: revoked, never a 5xx ----------------------
my $twice = issue_token($c->{email});
my @all   = concurrent(map { [main_server(), POST => $PATH, headers => { Authorization => "Bearer $twice" }] } 1 .. 6);
is(scalar(grep { $_->code == 200 } @all) + scalar(grep { $_->code == 401 } @all), 6,
    'six sign-outs at once: each 200 or 401') or diag(join ' ', map { $_->code } @all);
ok((grep { $_->code == 200 } @all), 'at least one 200');
is(token_rows(token_id($twice)), 0, 'the token is revoked');

# --- any token may revoke itself, whatever its abilities -----------------------------------
my $narrow = issue_token($c->{email}, '--abilities', 'banks:read');
is(sign_out($narrow)->code, 200, 'a token with only banks:read signs out');
is_401(GET('/misc/payment_banks', Authorization => "Bearer $narrow"), 'and is refused after');

# --- a body of any media type is read and ignored: no 415 ------------------------------------------
for my $case (['a JSON body', body => { all => 1 }],
    ['a body that is no JSON', body => 'not json', extra => { content_type => 'text/plain' }],
    ['a body at BankMaxBody', body => 'x' x 65_536, extra => { content_type => 'application/octet-stream' }])
{
    my ($name, %o) = @$case;
    my $t = issue_token($c->{email});
    my $r = sign_out($t, %o);
    is($r->code, 200, "$name: ignored, 200");
    is(token_rows(token_id($t)), 0, "$name: revoked");
}
{
    my $t = issue_token($c->{email});
    my $r = sign_out($t, body => 'x' x 100_000, extra => { content_type => 'application/octet-stream' });
    assert_error($r, 413, 'E_PAYLOAD_TOO_LARGE', 'a body over BankMaxBody');
    is(token_rows(token_id($t)), 1, 'a body over BankMaxBody: nothing revoked');
    # the body is read before the token is looked at
    assert_error(sign_out('oat_MQ.unknown', body => 'x' x 100_000,
        extra => { content_type => 'application/octet-stream' }), 413, 'E_PAYLOAD_TOO_LARGE',
        'a body over BankMaxBody with an unknown token');
}

# --- 401: missing, malformed, unknown, revoked, expired -------------------------------------------
is_401(sign_out(undef), 'no Authorization');
is_401(sign_out(undef, headers => { Authorization => "Basic $token" }), 'not Bearer');
is_401(sign_out('oat_not-a-token'), 'malformed token');
is_401(sign_out('oat_OTk5OTk5OQ.c2VjcmV0c2VjcmV0c2VjcmV0'), 'unknown token id');
my $rv = issue_token($c->{email});
my $wrong = $rv =~ s/\.(.)/'.' . ($1 eq 'A' ? 'B' : 'A')/er;
is_401(sign_out($wrong), 'right id, wrong secret');
is(token_rows(token_id($rv)), 1, 'a wrong secret revokes nothing');
my $c2 = new_customer();
my $t2 = issue_token($c2->{email});
bankctl('token', 'revoke', '--email', $c2->{email});
is_401(sign_out($t2), 'revoked by bankctl');
my $t3 = issue_token($c2->{email}, '--ttl', 60);
db_exec("UPDATE auth_access_tokens SET expires_at = '2020-01-01T00:00:00.000Z' WHERE id = " . token_id($t3));
is_401(sign_out($t3), 'expired token');

# --- a body is read to its end and ignored; one that cannot be read revokes nothing ----------
{
    my $hp = Apache::TestRequest::hostport();
    Apache::TestRequest::module('bank_slow');
    my $slow_hp = Apache::TestRequest::hostport();
    Apache::TestRequest::module('default');
    my $head = sub {
        my ($host, $tok, @h) = @_;
        return join "\r\n", "POST $PATH HTTP/1.1", "Host: $host", "Authorization: Bearer $tok", @h, '', '';
    };
    my $kept = issue_token($c->{email});
    my $kid  = token_id($kept);
    for my $bad ("zz\r\n{}\r\n0\r\n\r\n", "5\r\n{}\r\n0\r\n\r\n") {
        my $name = 'malformed chunk ' . ($bad =~ /^zz/ ? 'size' : 'data');
        my $res  = raw($hp, $head->($hp, $kept, 'Content-Type: application/json',
            'Transfer-Encoding: chunked') . $bad);
        assert_error($res, 400, 'E_BAD_REQUEST', $name);
        is($res->header('Connection') // '', 'close', "$name: Connection: close");
        is(token_rows($kid), 1, "$name: the token is not revoked");
    }
    my $res = raw($hp, $head->($hp, $kept, 'Content-Type: application/json',
        'Content-Length: 70000', 'Connection: close') . '{');
    assert_error($res, 413, 'E_PAYLOAD_TOO_LARGE', 'body over BankMaxBody');
    is(token_rows($kid), 1, 'body over BankMaxBody: the token is not revoked');
    $res = raw($hp, $head->($hp, $kept, 'Transfer-Encoding: chunked', 'Connection: close')
          . join('', map { sprintf("%x\r\n%s\r\n", 8192, 'x' x 8192) } 1 .. 9) . "0\r\n\r\n");
    assert_error($res, 413, 'E_PAYLOAD_TOO_LARGE', 'chunked body over BankMaxBody');
    is(token_rows($kid), 1, 'chunked body over BankMaxBody: the token is not revoked');
    $res = raw($slow_hp, $head->($slow_hp, $kept, 'Content-Type: application/json',
        'Content-Length: 20') . '{"a":');
    assert_error($res, 408, 'E_REQUEST_TIMEOUT', 'stalled body');
    is($res->header('Connection') // '', 'close', 'stalled body: Connection: close');
    is(token_rows($kid), 1, 'stalled body: the token is not revoked');
    is(GET('/misc/payment_banks', Authorization => "Bearer $kept")->code, 200,
        'after the failed sign-outs the token still works');
    # a body that arrives whole is ignored, whatever it is
    $res = raw($hp, $head->($hp, $kept, 'Content-Type: text/plain', 'Content-Length: 9',
        'Connection: close') . 'not json!');
    is($res->code, 200, 'a body that is not JSON: 200');
    is($res->content, '{"body":{"revoked":true}}', 'a body that is not JSON: revoked');
    is(token_rows($kid), 0, 'a body that is not JSON: the row is deleted');
}

# --- 405, 404, 503 -------------------------------------------------------------------------------------
my $live = issue_token($c->{email});
for my $m (qw(GET PUT DELETE PATCH OPTIONS)) {
    my $r = sign_out($live, method => $m);
    assert_error($r, 405, 'E_METHOD_NOT_ALLOWED', "$m");
    is($r->header('Allow'), 'POST', "$m: Allow: POST");
}
my $head = sign_out($live, method => 'HEAD');
is($head->code, 405, 'HEAD: 405');
is($head->header('Allow'), 'POST', 'HEAD: Allow: POST');
is(token_rows(token_id($live)), 1, 'no other method revokes the token');
assert_error(sign_out($live, path => "$PATH/x"), 404, 'E_ROUTE_NOT_FOUND', 'a path below it');
is(token_rows(token_id($live)), 1, 'nor does a path below it');

Apache::TestRequest::module('bank_nodb');
my $down = sign_out($live);
assert_error($down, 503, 'E_UNAVAILABLE', 'database unreachable');
like($down->header('Retry-After') // '', qr/^\d+$/, 'database unreachable: Retry-After');
Apache::TestRequest::module('default');

done_testing();
