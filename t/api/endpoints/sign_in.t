# POST /auth/sign_in (docs/configuration.md, docs/api.md): the answer, tokens,
# devices, password hashes made by other tools, the client key, validation and every error.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Digest::SHA qw(sha256_hex);
use MIME::Base64 qw(decode_base64);
use Time::Local qw(timegm);
use Bank::Test;

my $KEY  = 'test-client-key-1';
my $KEY2 = 'test-client-key-2';
my $ISO  = qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

sub sign_in {
    my ($body, %o) = @_;
    my %h = exists $o{auth} ? (defined $o{auth} ? (Authorization => $o{auth}) : ())
      : (Authorization => "Bearer $KEY");
    return json_request($o{method} || 'POST', $o{path} || '/auth/sign_in', headers => \%h,
        body => $body, %o);
}

sub creds { my ($c, %more) = @_; return { email => $c->{email}, password => $c->{password},
        deviceToken => 'device-' . unique(), %more } }

sub epoch { my ($y, $mo, $d, $h, $mi, $s) = $_[0] =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)/;
    return timegm($s, $mi, $h, $d, $mo - 1, $y) }

sub b64url { my $s = shift; $s =~ tr{-_}{+/}; return decode_base64($s . '=' x ((4 - length($s) % 4) % 4)) }

sub sql_q { my $s = shift; $s =~ s/'/''/g; return "'$s'" }

# --- success: the answer, field by field ----------------------------------------------------
my $c   = new_customer(first => 'Chidi', last => 'Okeke', phone => '+2348098765432');
my $t0  = time;
my $res = sign_in(creds($c, deviceToken => 'device-first'));
is($res->code, 200, 'sign-in: 200') or diag($res->content);
is($res->header('Content-Type'), 'application/json; charset=utf-8', 'sign-in: content type');
is($res->header('Cache-Control'), 'no-store', 'sign-in: Cache-Control no-store');
my $d = decode_body($res);
is_deeply([sort keys %$d], ['body'], 'sign-in: envelope has only body');
is_deeply([sort keys %{ $d->{body} }], [qw(customer token)], 'sign-in: body has token and customer');

my $tok = $d->{body}{token};
is_deeply([sort keys %$tok], [qw(abilities expiresAt lastUsedAt name token type)],
    'token: exactly the token fields of docs/api.md');
is($tok->{type}, 'bearer', 'token: type bearer');
like($tok->{token}, qr/^oat_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'token: AdonisJS oat_ format');
is_deeply($tok->{abilities}, ['*'], 'token: abilities ["*"]');
like($tok->{expiresAt}, $ISO, 'token: expiresAt is ISO 8601 UTC with milliseconds');
my $exp = epoch($tok->{expiresAt});
ok($exp >= $t0 + 3600 - 1 && $exp <= time + 3600 + 1, 'token: expiresAt = now + BankTokenLifetime')
  or diag("$tok->{expiresAt} vs $t0");
ok(exists $tok->{name} && !defined $tok->{name}, 'token: name null');
ok(exists $tok->{lastUsedAt} && !defined $tok->{lastUsedAt}, 'token: lastUsedAt null');

my $cu = $d->{body}{customer};
is_deeply([sort keys %$cu],
    [qw(address createdAt customerId email emailVerified firstName fullName lastName phone updatedAt)],
    'customer: exactly the customer fields of docs/api.md');
is($cu->{customerId}, $c->{id}, 'customer: customerId');
like($cu->{customerId}, qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    'customer: customerId is a lower-case UUID v4');
is($cu->{firstName}, 'Chidi', 'customer: firstName');
is($cu->{lastName}, 'Okeke', 'customer: lastName');
is($cu->{fullName}, 'Chidi Okeke', 'customer: fullName = firstName + " " + lastName');
is($cu->{email}, $c->{email}, 'customer: email');
is($cu->{phone}, '+2348098765432', 'customer: phone');
like($res->content, qr/"emailVerified":false/, 'customer: emailVerified is a JSON boolean');
like($cu->{createdAt}, $ISO, 'customer: createdAt ISO');
like($cu->{updatedAt}, $ISO, 'customer: updatedAt ISO');
is($cu->{createdAt}, db_time("SELECT created_at FROM customers WHERE id = '$c->{id}'"),
    'customer: createdAt as stored');
ok(exists $cu->{address} && !defined $cu->{address}, 'customer: address null');

# The token is stored as AdonisJS stores it and works at once.
my ($tid, $secret) = $tok->{token} =~ /^oat_([^.]+)\.(.+)$/;
$tid = b64url($tid);
$secret = b64url($secret);
like($tid, qr/^\d+$/, 'token: id part is the decimal row id');
like($secret, qr/^[A-Za-z0-9_-]{40}\d+$/, 'token: secret = 40 characters + CRC-32');
my $row = db_value("SELECT tokenable_id || '|' || type || '|' || hash || '|' || abilities"
      . " FROM auth_access_tokens WHERE id = $tid")
  . '|' . db_time("SELECT expires_at FROM auth_access_tokens WHERE id = $tid");
is($row, join('|', $c->{id}, 'auth_token', sha256_hex($secret), '["*"]', $tok->{expiresAt}),
    'token: stored with the SHA-256 of the secret, abilities and expiry');
my $banks = Apache::TestRequest::GET('/misc/payment_banks', Authorization => "Bearer $tok->{token}");
is($banks->code, 200, 'token: opens GET /misc/payment_banks at once');

# --- devices ------------------------------------------------------------------------------
is(db_value("SELECT count(*) FROM devices WHERE customer_id = '$c->{id}' AND device_token = 'device-first'"),
    1, 'device: recorded for the customer');
db_exec("UPDATE devices SET created_at = '2000-01-01T00:00:00.000Z', last_seen_at = "
      . "'2000-01-01T00:00:00.000Z' WHERE customer_id = '$c->{id}'");
is(sign_in(creds($c, deviceToken => 'device-first'))->code, 200, 'device: same device again');
is(db_value("SELECT count(*) FROM devices WHERE customer_id = '$c->{id}'"), 1,
    'device: upserted, not duplicated');
my ($created, $seen) =
  map { db_time("SELECT $_ FROM devices WHERE customer_id = '$c->{id}'") } qw(created_at last_seen_at);
is($created, '2000-01-01T00:00:00.000Z', 'device: created_at kept');
ok(epoch($seen) >= $t0, 'device: last_seen_at refreshed') or diag($seen);
is(sign_in(creds($c, deviceToken => 'device-second'))->code, 200, 'device: another device');
is(db_value("SELECT count(*) FROM devices WHERE customer_id = '$c->{id}'"), 2,
    'device: one row per device token');

# --- the same customer again: a new token each time, emailVerified true -------------------
db_exec("UPDATE customers SET email_verified = TRUE WHERE id = '$c->{id}'");
my $res2 = sign_in(creds($c));
like($res2->content, qr/"emailVerified":true/, 'customer: emailVerified true once verified');
isnt(decode_body($res2)->{body}{token}{token}, $tok->{token}, 'token: a new one per sign-in');

# Timestamps in another text form (as PostgreSQL hands them back) are written as the API's.
db_exec("UPDATE customers SET created_at = '2026-01-02 03:04:05.6+01:00' WHERE id = '$c->{id}'");
is(decode_body(sign_in(creds($c)))->{body}{customer}{createdAt}, '2026-01-02T02:04:05.600Z',
    'customer: createdAt normalised to UTC with milliseconds');

# --- e-mail is case-insensitive -----------------------------------------------------------
my $up = sign_in(creds($c, email => uc $c->{email}));
is($up->code, 200, 'e-mail: upper-cased address signs in');
is(decode_body($up)->{body}{customer}{email}, $c->{email}, 'e-mail: answered as stored');
my $mixed = new_customer(email => 'Mixed.' . unique() . '@Example.COM');
is(sign_in(creds($mixed, email => lc $mixed->{email}))->code, 200,
    'e-mail: stored mixed case, sent lower case');

# --- the client key (BankClientKey test-client-key-1 test-client-key-2) ------------------
is(sign_in(creds($c), auth => "Bearer $KEY2")->code, 200, 'client key: the second key of the rotation');
is(sign_in(creds($c), auth => "bearer $KEY")->code, 200, 'client key: scheme is case-insensitive');
my @bad_keys = (
    'missing'        => undef,
    'wrong key'      => 'Bearer wrong-client-key',
    'prefix of key'  => 'Bearer test-client-key-',
    'key + suffix'   => "Bearer ${KEY}x",
    'key other case' => 'Bearer TEST-CLIENT-KEY-1',
    'both keys'      => "Bearer $KEY $KEY2",
    'not bearer'     => "Basic $KEY",
    'a customer token' => "Bearer $tok->{token}",
);
while (my ($name, $auth) = splice @bad_keys, 0, 2) {
    my $r = sign_in(creds($c), auth => $auth);
    assert_error($r, 401, 'E_UNAUTHORIZED_ACCESS', "client key $name");
    is($r->header('WWW-Authenticate'), 'Bearer realm="mod_bank", error="invalid_token"',
        "client key $name: WWW-Authenticate");
}

# --- password hashes made by tools that are not ours --------------------------------------
sub with_hash {
    my ($name, $hash, $password) = @_;
    my $h = new_customer();
    db_exec('UPDATE customers SET password = ' . sql_q($hash) . " WHERE id = '$h->{id}'");
    my $ok = sign_in(creds($h, password => $password));
    is($ok->code, 200, "$name: signs in") or diag($ok->content);
    is(decode_body($ok)->{body}{customer}{customerId}, $h->{id}, "$name: the right customer");
    assert_error(sign_in(creds($h, password => "${password}x")), 400, 'E_INVALID_CREDENTIALS',
        "$name: wrong password");
}

# bcrypt from Apache's htpasswd ($2y$), and the same hash under $2a$ and $2b$.
my $bpw = 'Htpasswd-' . unique();
my $ht = `htpasswd -nbB -C 5 user '$bpw'`;
$ht =~ s/^user://;
$ht =~ s/\s+\z//;
like($ht, qr/^\$2y\$05\$[.\/A-Za-z0-9]{53}\z/, 'htpasswd made a $2y$ bcrypt hash');
with_hash('htpasswd $2y$', $ht, $bpw);
for my $prefix ('2a', '2b') {
    (my $other = $ht) =~ s/^\$2y/\$$prefix/;
    with_hash("htpasswd hash as \$$prefix\$", $other, $bpw);
}

# scrypt from Python's hashlib in the AdonisJS PHC form, made now with a fresh salt.
my $spw = 'Pyscrypt-' . unique();
my $py = q{import hashlib,base64,os,sys;e=lambda b:base64.b64encode(b).decode().rstrip('=');}
  . q{s=os.urandom(16);print('$scrypt$n=16384,r=8,p=1$'+e(s)+'$'+e(hashlib.scrypt(}
  . q{sys.argv[1].encode(),salt=s,n=16384,r=8,p=1,dklen=64)))};
$py =~ s/'/'\\''/g;
chomp(my $sc = `python3 -c '$py' '$spw'`);
like($sc, qr/^\$scrypt\$n=16384,r=8,p=1\$[A-Za-z0-9+\/]{22}\$[A-Za-z0-9+\/]{86}\z/,
    'python hashlib.scrypt made a PHC string');
with_hash('python scrypt PHC', $sc, $spw);

# AdonisJS' own fixtures for "password" (adonisjs/hash tests; see t/unit/test_password.c).
with_hash('AdonisJS bcrypt PHC', '$bcrypt$v=98$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ',
    'password');
with_hash('AdonisJS scrypt PHC', '$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$IDWTbizFCq5n9Y'
      . 'vPiy3YTPdUD12Nf1Iit8aQeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA', 'password');

# A stored hash in no format we read: refused like a wrong password, and the operator told.
my $odd = new_customer();
db_exec("UPDATE customers SET password = '\$argon2id\$v=19\$m=65536,t=3,p=4\$c2FsdA\$aGFzaA'"
      . " WHERE id = '$odd->{id}'");
my $mark = error_log_mark();
assert_error(sign_in(creds($odd)), 400, 'E_INVALID_CREDENTIALS', 'unreadable stored hash');
like(error_log_since($mark), qr/BANK0504: customer \Q$odd->{id}\E: stored password hash/,
    'unreadable stored hash: logged for the operator');

# --- wrong credentials --------------------------------------------------------------------
my $wrong = sign_in(creds($c, password => 'not-the-password'));
my $e1 = assert_error($wrong, 400, 'E_INVALID_CREDENTIALS', 'wrong password');
is($e1->{message}, 'Invalid user credentials', 'wrong password: message');
is($wrong->header('X-RateLimit-Limit'), 5, 'wrong password: X-RateLimit-Limit');
is($wrong->header('X-RateLimit-Remaining'), 4, 'wrong password: X-RateLimit-Remaining');
my $unknown = sign_in({ email => 'nobody-' . unique() . '@example.com', password => 'x',
        deviceToken => 'd' });
my $e2 = assert_error($unknown, 400, 'E_INVALID_CREDENTIALS', 'unknown e-mail');
is_deeply($e2, $e1, 'unknown e-mail: the same answer as a wrong password');
is($unknown->header('X-RateLimit-Remaining'), 4, 'unknown e-mail: counted too');

# --- 422: validation, one errors[] entry per failed field ---------------------------------
sub fields {
    my ($body, $name) = @_;
    my $r = sign_in($body);
    my $e = assert_error($r, 422, 'E_VALIDATION_ERROR', $name);
    return { map { $_->{field} => $_->{rule} } @{ $e->{errors} || [] } }, scalar @{ $e->{errors} || [] };
}
my $good = { email => 'v' . unique() . '@example.com', password => 'pw', deviceToken => 'dev' };
my @cases = (
    [{}, { email => 'required', password => 'required', deviceToken => 'required' }, 'empty object'],
    [{ %$good, email => undef }, { email => 'required' }, 'email null'],
    [{ %$good, email => 12 }, { email => 'string' }, 'email a number'],
    [{ %$good, email => [] }, { email => 'string' }, 'email an array'],
    [{ %$good, email => '' }, { email => 'required' }, 'email empty'],
    [{ %$good, email => 'not-an-email' }, { email => 'email' }, 'email without @'],
    [{ %$good, email => 'a b@example.com' }, { email => 'email' }, 'email with a space'],
    [{ %$good, email => 'user@localhost' }, { email => 'email' }, 'email without a dot in the domain'],
    [{ %$good, email => ('a' x 64) . '@' . ('b' x 186) . '.com' }, { email => 'maxLength' }, 'email of 255'],
    [{ %$good, password => '' }, { password => 'required' }, 'password empty'],
    [{ %$good, password => JSON::PP::true() }, { password => 'string' }, 'password a boolean'],
    [{ %$good, password => { a => 1 } }, { password => 'string' }, 'password an object'],
    [{ %$good, password => 'p' x 1025 }, { password => 'maxLength' }, 'password of 1025'],
    [{ %$good, deviceToken => '' }, { deviceToken => 'required' }, 'deviceToken empty'],
    [{ %$good, deviceToken => 42 }, { deviceToken => 'string' }, 'deviceToken a number'],
    [{ %$good, deviceToken => 'd' x 4097 }, { deviceToken => 'maxLength' }, 'deviceToken of 4097'],
    [{ email => 7, password => '', deviceToken => 'd' x 4097 },
        { email => 'string', password => 'required', deviceToken => 'maxLength' }, 'three fields at once'],
);
for my $case (@cases) {
    my ($body, $want, $name) = @$case;
    my ($got, $n) = fields($body, $name);
    is_deeply($got, $want, "$name: field and rule");
    is($n, scalar keys %$want, "$name: one entry per field");
}

# At the limits the request passes validation (and fails only on the credentials). Lengths
# are characters: 1024 two-byte characters are one password of 1024.
my $utf8 = JSON::PP->new->utf8->canonical;
for my $edge ([email => ('a' x 64) . '@' . ('b' x 185) . '.com'], [password => 'p' x 1024],
    [deviceToken => 'd' x 4096], [password => "\x{e9}" x 1024])
{
    my $name = "at the limit: $edge->[0] of " . length($edge->[1]) . ' characters';
    my $r = sign_in($utf8->encode({ %$good, email => 'edge' . unique() . '@example.com', @$edge }));
    assert_error($r, 400, 'E_INVALID_CREDENTIALS', $name);
}
# Unknown fields are ignored.
my $extra = sign_in(creds($c, rememberMe => JSON::PP::true(), nested => { a => [1] }));
is($extra->code, 200, 'unknown fields are ignored');

# --- 405, 415, 400 E_INVALID_JSON, 413 ----------------------------------------------------
for my $m (qw(GET PUT DELETE PATCH)) {
    my $r = sign_in(creds($c), method => $m);
    assert_error($r, 405, 'E_METHOD_NOT_ALLOWED', "method $m");
    is($r->header('Allow'), 'POST', "method $m: Allow: POST");
}
my $head = json_request('HEAD', '/auth/sign_in', headers => { Authorization => "Bearer $KEY" });
is($head->code, 405, 'method HEAD: 405');
is($head->header('Allow'), 'POST', 'method HEAD: Allow: POST');

for my $ct (undef, 'text/plain', 'application/x-www-form-urlencoded', 'application/jsonx') {
    my $r = sign_in(creds($c), content_type => $ct);
    assert_error($r, 415, 'E_UNSUPPORTED_MEDIA_TYPE', 'Content-Type ' . ($ct // 'missing'));
}
is(sign_in(creds($c), content_type => 'application/json; charset=utf-8')->code, 200,
    'Content-Type with parameters accepted');

# Depth counts the levels nested inside the top-level object (bank_json_parse_object).
my $deep16 = '{"email":"x@example.com","n":' . ('[' x 16) . (']' x 16) . '}';
my $deep17 = '{"email":"x@example.com","n":' . ('[' x 17) . (']' x 17) . '}';
my @bad_json = (
    'garbage'        => '{"email": nope',
    'empty body'     => '',
    'trailing data'  => '{} {}',
    'array on top'   => '[{"email":"a@example.com"}]',
    'string on top'  => '"hello"',
    'invalid UTF-8'  => qq({"email":"\xff\xfe\@example.com","password":"p","deviceToken":"d"}),
    'nested 17 deep' => $deep17,
    'escaped NUL'    => qq({"email":"a\\u0000b\@example.com","password":"p","deviceToken":"d"}),
);
while (my ($name, $body) = splice @bad_json, 0, 2) {
    assert_error(sign_in($body), 400, 'E_INVALID_JSON', $name);
}
is(sign_in($deep16)->code, 422, 'nested 16 deep is parsed (then fails validation)');

# /small/sign_in has BankMaxBody 64.
my $small = { email => 'a@example.com', password => 'p', deviceToken => 'd' };
is(sign_in($small, path => '/small/sign_in')->code, 400, 'BankMaxBody 64: a small body is read');
my $big = { %$small, deviceToken => 'd' x 64 };
assert_error(sign_in($big, path => '/small/sign_in'), 413, 'E_PAYLOAD_TOO_LARGE',
    'BankMaxBody: Content-Length over the limit');
{
    require HTTP::Request;
    my @parts = ('{"email":"a@example.com",', '"password":"p",', '"deviceToken":"' . ('d' x 64) . '"}');
    my $req = HTTP::Request->new(POST => Apache::TestRequest::resolve_url('/small/sign_in'),
        [Authorization => "Bearer $KEY", 'Content-Type' => 'application/json'],
        sub { return shift @parts });
    my $r = Apache::TestRequest::user_agent()->request($req);
    assert_error($r, 413, 'E_PAYLOAD_TOO_LARGE', 'BankMaxBody: chunked body over the limit');
    my @ok_parts = ('{"email":"a@example.com",', '"password":"p",', '"deviceToken":"d"}');
    $req = HTTP::Request->new(POST => Apache::TestRequest::resolve_url('/small/sign_in'),
        [Authorization => "Bearer $KEY", 'Content-Type' => 'application/json'],
        sub { return shift @ok_parts });
    is(Apache::TestRequest::user_agent()->request($req)->code, 400,
        'BankMaxBody: chunked body under the limit is read');
}

# --- per-Location settings: /tight/sign_in has BankTokenLifetime 120 ----------------------
my $t1 = time;
my $tight = decode_body(sign_in(creds($c), path => '/tight/sign_in'));
my $exp2 = epoch($tight->{body}{token}{expiresAt});
ok($exp2 >= $t1 + 119 && $exp2 <= time + 121, 'BankTokenLifetime per Location: now + 120');

# --- 503: the database cannot be opened ---------------------------------------------------
Apache::TestRequest::module('bank_nodb');
my $down = sign_in(creds($c));
assert_error($down, 503, 'E_UNAVAILABLE', 'database down');
like($down->header('Retry-After') // '', qr/^[1-9]\d*$/, 'database down: Retry-After');
unlike($down->content, qr{missing-dir|sqlite|/tmp}i, 'database down: no internals');
Apache::TestRequest::module('default');

done_testing();
