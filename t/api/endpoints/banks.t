# GET/HEAD /misc/payment_banks (docs/api.md) and the bearer-token rules it relies on (C5).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET HEAD POST);
use Bank::Test;
use Bank::Test qw(token_id db_wait);


my $c     = new_customer();
my $token = issue_token($c->{email});
my %auth  = (Authorization => "Bearer $token");

# --- the answer -------------------------------------------------------------------------
my $res = GET '/misc/payment_banks', %auth;
is($res->code, 200, 'banks: 200');
is($res->header('Content-Type'), 'application/json; charset=utf-8', 'banks: content type');
my $d = decode_body($res);
is_deeply([sort keys %$d], ['body'], 'banks: envelope has only body');
is_deeply([keys %{ $d->{body} }], ['banks'], 'banks: body has only banks');
my @banks = @{ $d->{body}{banks} };
cmp_ok(scalar @banks, '>=', 30, 'banks: at least 30 active banks seeded');
my $active = db_value('SELECT count(*) FROM banks WHERE active = 1');
is(scalar @banks, $active, 'banks: every active bank, and only those');
ok(!grep({ $_->{active} != 1 } @banks), 'banks: all have active = 1');
ok(!grep({ $_->{name} eq 'Diamond Bank' } @banks), 'banks: inactive bank left out');
is_deeply([sort keys %{ $banks[0] }], [qw(active code id name slug)], 'banks: exact fields');
my @names = map { $_->{name} } @banks;
is_deeply(\@names, [sort { lc $a cmp lc $b or $a cmp $b } @names], 'banks: sorted by name');

my %by_code = map { $_->{code} => $_ } @banks;
ok($by_code{'00103'}, 'banks: code with leading zeros kept as text');
ok($by_code{'035A'}, 'banks: alphanumeric code kept');
ok(!ref $by_code{'044'}{code} && $res->content =~ /"code":"044"/, 'banks: code is a JSON string');
like($res->content, qr/"id":\d+/, 'banks: id is a JSON integer');
like($res->content, qr/"active":1[,}]/, 'banks: active is a JSON integer');
ok((grep { $_->{slug} eq 'TAJBank' } @banks), 'banks: slug case as stored');
my @ids = sort { $a <=> $b } map { $_->{id} } @banks;
ok($ids[-1] - $ids[0] + 1 > @ids, 'banks: ids are not contiguous');

# --- caching headers and conditional requests ------------------------------------------
my $etag = $res->header('ETag');
like($etag // '', qr/^"[0-9a-f]{32}"$/, 'banks: strong ETag');
is($res->header('Cache-Control'), 'private, max-age=300', 'banks: Cache-Control from config');

my $again = GET '/misc/payment_banks', %auth;
is($again->header('ETag'), $etag, 'banks: same list, same ETag');
is($again->content, $res->content, 'banks: same list, same bytes');

my $nm = GET '/misc/payment_banks', %auth, 'If-None-Match' => $etag;
is($nm->code, 304, 'banks: If-None-Match answers 304');
is($nm->content, '', 'banks: 304 has no body');
is($nm->header('ETag'), $etag, 'banks: 304 repeats the ETag');

my $nm2 = GET '/misc/payment_banks', %auth, 'If-None-Match' => '"0000"';
is($nm2->code, 200, 'banks: other ETag answers 200');
my $nm3 = GET '/misc/payment_banks', %auth, 'If-None-Match' => "\"x\", $etag";
is($nm3->code, 304, 'banks: ETag in a list answers 304');

# If-Match that does not hold: 412 in the error shape of docs/api.md, with the ETag it failed against.
for my $im ('"0000"', '"x", "y"', 'W/' . $etag) {
    my $pf = GET '/misc/payment_banks', %auth, 'If-Match' => $im;
    assert_error($pf, 412, 'E_PRECONDITION_FAILED', "If-Match $im");
    is($pf->header('ETag'), $etag, "If-Match $im: ETag of the current list");
    unlike($pf->content, qr/"banks"/, "If-Match $im: no list");
}
my $iu = GET '/misc/payment_banks', %auth, 'If-Unmodified-Since' => 'Mon, 01 Jan 2001 00:00:00 GMT';
assert_error($iu, 412, 'E_PRECONDITION_FAILED', 'If-Unmodified-Since in the past');
my $pfh = HEAD '/misc/payment_banks', %auth, 'If-Match' => '"0000"';
is($pfh->code, 412, 'HEAD with If-Match not holding: 412');
is($pfh->content, '', 'HEAD 412: no body');
for my $im ($etag, "\"x\", $etag", '*') {
    my $ok = GET '/misc/payment_banks', %auth, 'If-Match' => $im;
    is($ok->code, 200, "If-Match $im holds: 200");
    is($ok->content, $res->content, "If-Match $im holds: the list");
}

my $head = HEAD '/misc/payment_banks', %auth;
is($head->code, 200, 'banks: HEAD 200');
is($head->content, '', 'banks: HEAD has no body');
is($head->header('ETag'), $etag, 'banks: HEAD has the ETag');
is($head->header('Content-Length'), length($res->content), 'banks: HEAD Content-Length');

# --- the in-process cache expires per BankBanksMaxAge -----------------------------------
# /v2/banks has BankBanksMaxAge 0: every request reads the database.
my $v2 = GET '/v2/banks', %auth;
is($v2->code, 200, 'v2 banks: mounted under another prefix');
is($v2->header('Cache-Control'), 'private, max-age=0', 'v2 banks: its own max-age');
db_exec("UPDATE banks SET name = 'Zenith Bank Plc' WHERE code = '057'");
my $v2b = GET '/v2/banks', %auth;
like($v2b->content, qr/Zenith Bank Plc/, 'v2 banks: max-age 0 sees the change at once');
isnt($v2b->header('ETag'), $v2->header('ETag'), 'v2 banks: new list, new ETag');
db_exec("UPDATE banks SET name = 'Zenith Bank' WHERE code = '057'");

# --- methods ------------------------------------------------------------------------------
for my $m (qw(POST PUT DELETE PATCH)) {
    my $r = json_request($m, '/misc/payment_banks', headers => \%auth, body => {});
    assert_error($r, 405, 'E_METHOD_NOT_ALLOWED', "banks $m");
    is($r->header('Allow'), 'GET, HEAD', "banks $m: Allow");
}

# --- bearer tokens ----------------------------------------------------------------------
my $e = assert_error(GET('/misc/payment_banks'), 401, 'E_UNAUTHORIZED_ACCESS', 'no token');
is(GET('/misc/payment_banks')->header('WWW-Authenticate'),
    'Bearer realm="mod_bank", error="invalid_token"', 'no token: WWW-Authenticate');

my @bad = (
    'garbage'                => 'Bearer garbage',
    'not bearer'             => "Basic $token",
    'empty bearer'           => 'Bearer ',
    'wrong secret'           => 'Bearer ' . substr($token, 0, -3) . 'AAA',
    'unknown id'             => 'Bearer oat_OTk5OTk5OQ.' . (split /\./, $token)[1],
    'non-numeric id'         => 'Bearer oat_YWJj.' . (split /\./, $token)[1],
    'token without prefix'   => 'Bearer ' . substr($token, 4),
);
while (my ($name, $value) = splice @bad, 0, 2) {
    my $r = GET '/misc/payment_banks', Authorization => $value;
    assert_error($r, 401, 'E_UNAUTHORIZED_ACCESS', $name);
    like($r->header('WWW-Authenticate') // '', qr/^Bearer realm="mod_bank", error="invalid_token"$/,
        "$name: WWW-Authenticate");
}

# Expired: the database says so.
my $c2 = new_customer();
my $t2 = issue_token($c2->{email}, '--ttl', 60);
is(GET('/misc/payment_banks', Authorization => "Bearer $t2")->code, 200, 'fresh token works');
my $id2 = token_id($t2);
db_exec("UPDATE auth_access_tokens SET expires_at = '2020-01-01T00:00:00.000Z' WHERE id = $id2");
assert_error(GET('/misc/payment_banks', Authorization => "Bearer $t2"), 401,
    'E_UNAUTHORIZED_ACCESS', 'expired token');

# Revoked.
my $c3 = new_customer();
my $t3 = issue_token($c3->{email});
is(GET('/misc/payment_banks', Authorization => "Bearer $t3")->code, 200, 'token before revoke');
bankctl('token', 'revoke', '--email', $c3->{email});
assert_error(GET('/misc/payment_banks', Authorization => "Bearer $t3"), 401,
    'E_UNAUTHORIZED_ACCESS', 'revoked token');

# Abilities.
my $t4 = issue_token($c->{email}, '--abilities', 'onboarding:bvn');
assert_error(GET('/misc/payment_banks', Authorization => "Bearer $t4"), 403, 'E_FORBIDDEN',
    'token without banks:read');
my $t5 = issue_token($c->{email}, '--abilities', 'banks:read');
is(GET('/misc/payment_banks', Authorization => "Bearer $t5")->code, 200, 'banks:read ability');

# last_used_at is written on use (by the process's writer of token uses, within about a
# second), then not again within a minute.
my $id5 = token_id($t5);
ok(db_wait(5, "SELECT last_used_at IS NOT NULL FROM auth_access_tokens WHERE id = $id5"),
    'last_used_at recorded');
db_exec("UPDATE auth_access_tokens SET last_used_at = '2000-01-01T00:00:00.000Z' WHERE id = $id5");
GET '/misc/payment_banks', Authorization => "Bearer $t5";
# Compared in SQL, not as text: PostgreSQL prints timestamptz in its own format.
ok(db_wait(5, "SELECT last_used_at > '2001-01-01T00:00:00.000Z' FROM auth_access_tokens"
        . " WHERE id = $id5"), 'last_used_at refreshed when older than a minute');
my $used2 = db_value("SELECT last_used_at FROM auth_access_tokens WHERE id = $id5");
GET '/misc/payment_banks', Authorization => "Bearer $t5";
sleep 2;    # past the writer's next round
is(db_value("SELECT last_used_at FROM auth_access_tokens WHERE id = $id5"), $used2,
    'last_used_at not rewritten within a minute');

done_testing();
