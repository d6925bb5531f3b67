# POST /webhook/<partner> (docs/api.md): fail-closed configuration, bearer
# secrets with rotation, the HMAC signature of the raw body, validation, storage before the
# answer, idempotency, and bankctl notices. Signatures come from `openssl dgst`.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use JSON::PP ();
use POSIX qw(strftime);
use Time::Local ();
use Bank::Test;
use Bank::Webhook;

my $mark = error_log_mark();
my @sent;        # every bearer and signature value sent: none may reach the error log
my @distinct;    # [reference, statusCode, partner] of every notice stored

sub answer_is {
    my ($res, $ref, $dup, $name) = @_;
    is($res->code, 200, "$name: 200");
    is($res->header('Content-Type'), 'application/json; charset=utf-8', "$name: content type");
    is($res->content,
        qq({"body":{"received":true,"duplicate":${\ ($dup ? 'true' : 'false')},)
          . qq("transactionReference":"$ref"}}),
        "$name: the answer");
}

# When the notice with this reference was stored (partner "partner"), in the API's form.
sub received_at {
    my ($r) = @_;
    return db_time("SELECT received_at FROM payment_notices WHERE transaction_reference = '$r'"
          . " AND partner = 'partner'");
}

# A notice's text with one data field replaced by raw JSON text (5000.0 cannot be written
# from Perl).
sub with_raw {
    my ($n, $field, $raw) = @_;
    my $text = notice_json($n);
    my $key  = qq("$field":);
    $text =~ s/\Q$key\E("(?:[^"\\]|\\.)*"|-?[0-9.eE+-]+|true|false|null|\{[^{}]*\})/$key$raw/
      or die "no $field in $text";
    return $text;
}

# --- a valid delivery, stored before the answer ---------------------------------------
my $n   = notice(clientRef => 'CLI-1', customerReference => { id => 7, tags => ['a'] });
my $ref = $n->{data}{transactionReference};
my $text   = notice_json($n);
my $before = strftime('%Y-%m-%dT%H:%M:%S', gmtime(time - 1));
answer_is(deliver($text), $ref, 0, 'valid');
push @distinct, [$ref, 'T100', 'partner'];
my %want = (
    partner                 => 'partner',
    service                 => 'payments',
    type                    => 'fund_transfer',
    status                  => 'received',
    amount                  => '5000',
    charges                 => '10.75',
    currency                => 'NGN',
    narration               => 'Rent for November',
    receiver_account_name   => 'ADA OBI',
    receiver_account_number => '0123456789',
    receiver_bank_code      => '999',
    session_id              => $n->{data}{sessionId},
    status_code             => 'T100',
    status_message          => 'Transaction successful',
    wallet_id               => $n->{data}{walletId},
    client_ref              => '"CLI-1"',
    customer_reference      => '{"id":7,"tags":["a"]}',
    account_id              => 'NULL',
    customer_id             => 'NULL',
    raw_body                => $text,
);
for my $col (sort keys %want) {
    is(stored($ref, $col), $want{$col}, "valid: stored $col");
}
my $received = received_at($ref);
like($received, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'valid: received_at, UTC ms');
cmp_ok($received, 'ge', $before, 'valid: received_at is now');
my $id = stored($ref, 'id');
like($id, qr/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    'valid: id is a lower-case UUID v7 (time-ordered)');
# its first 48 bits: the Unix time in milliseconds when it was stored
my @t = $received =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)\.(\d+)Z$/;
my $received_ms = Time::Local::timegm($t[5], $t[4], $t[3], $t[2], $t[1] - 1, $t[0]) * 1000 + $t[6];
my $id_ms = hex(substr($id, 0, 8)) * 65536 + hex(substr($id, 9, 4));
cmp_ok(abs($id_ms - $received_ms), '<', 1000, 'valid: the id starts with the time it was stored');

# --- idempotency on (partner, transactionReference, statusCode) -------------------------
answer_is(deliver($text), $ref, 1, 'repeat');
my $changed = notice_json({ %$n, data => { %{ $n->{data} }, amount => 9999 } });
answer_is(deliver($changed), $ref, 1, 'repeat with other content');
is(stored_count($ref), 1, 'repeat: still one row');
is(stored($ref, 'amount'),      '5000',    'repeat: nothing rewritten (amount)');
is(received_at($ref),           $received, 'repeat: nothing rewritten (received_at)');
is(stored($ref, 'raw_body'),    $text,     'repeat: nothing rewritten (raw_body)');

my $failed = notice_json({ %$n, data => { %{ $n->{data} }, statusCode => 'T999' } });
answer_is(deliver($failed), $ref, 0, 'same reference, other status code');
push @distinct, [$ref, 'T999', 'partner'];
is(stored_count($ref), 2, 'other status code: a second row');

# --- secrets: rotation, and every refusal --------------------------------------------------
my $n_old = notice();
answer_is(deliver($n_old, secret => $SECRET_OLD), $n_old->{data}{transactionReference}, 0,
    'old secret (rotation)');
push @distinct, [$n_old->{data}{transactionReference}, 'T100', 'partner'];
cmp_ok(stored($n_old->{data}{transactionReference}, 'id'), 'gt', $id,
    'a later notice\'s id sorts after an earlier one\'s');
my $n_new = notice();
answer_is(deliver($n_new, secret => $SECRET_NEW), $n_new->{data}{transactionReference}, 0,
    'new secret (rotation)');
push @distinct, [$n_new->{data}{transactionReference}, 'T100', 'partner'];

my @refused = (
    'no Authorization'        => [secret => undef],
    'wrong secret'            => [secret => 'test-webhook-secret-wrong'],
    'secret plus a character' => [secret => "${SECRET_OLD}x"],
    'prefix of a secret'      => [secret => substr($SECRET_NEW, 0, -1)],
    'another location secret' => [secret => 'test-webhook-secret-256'],
    'empty bearer'            => [secret => ''],
    'Basic scheme'            => [secret => undef, headers => { Authorization => "Basic $SECRET_NEW" }],
    'wrong secret, bad JSON'  => [secret => 'test-webhook-secret-wrong', body => '{'],
    'wrong secret, text/plain' =>
      [secret => 'test-webhook-secret-wrong', content_type => 'text/plain'],
);
while (my ($name, $opt) = splice @refused, 0, 2) {
    my %o   = @$opt;
    my $nn  = notice();
    my $res = deliver(delete $o{body} // $nn, %o);
    assert_error($res, 401, 'E_UNAUTHORIZED_ACCESS', $name);
    is($res->header('WWW-Authenticate'), 'Bearer realm="mod_bank", error="invalid_token"',
        "$name: WWW-Authenticate");
    is(stored_count($nn->{data}{transactionReference}), 0, "$name: nothing stored");
    push @sent, $o{secret} if defined $o{secret} && length $o{secret};
}

# --- methods -----------------------------------------------------------------------------
for my $m (qw(GET PUT DELETE PATCH)) {
    my $res = json_request($m, '/webhook/partner', headers => { Authorization => "Bearer $SECRET_NEW" },
        $m eq 'GET' || $m eq 'DELETE' ? () : (body => notice_json(notice())));
    assert_error($res, 405, 'E_METHOD_NOT_ALLOWED', "$m");
    is($res->header('Allow'), 'POST', "$m: Allow");
}

# --- media type, JSON, size ------------------------------------------------------------------
for my $ct ('text/plain', undef, 'application/x-www-form-urlencoded') {
    my $nn  = notice();
    my $res = deliver($nn, content_type => $ct);
    assert_error($res, 415, 'E_UNSUPPORTED_MEDIA_TYPE', 'media type ' . ($ct // 'none'));
    is(stored_count($nn->{data}{transactionReference}), 0, 'media type: nothing stored');
}
my $n_cs = notice();
answer_is(deliver($n_cs, content_type => 'application/json; charset=utf-8'),
    $n_cs->{data}{transactionReference}, 0, 'media type with charset');
push @distinct, [$n_cs->{data}{transactionReference}, 'T100', 'partner'];

for my $bad ('{', '[1]', 'null', '"x"', '{} x', qq({"service":"\xff"}), '') {
    assert_error(deliver($bad), 400, 'E_INVALID_JSON', "invalid JSON " . length($bad));
}
my $n_inf = notice();
assert_error(deliver(with_raw($n_inf, 'charges', '1e400')), 400, 'E_INVALID_JSON',
    'charges beyond a double');
is(stored_count($n_inf->{data}{transactionReference}), 0, 'charges beyond a double: nothing stored');

my $big = notice(narration => 'x' x 70000);
my $res = deliver($big);
assert_error($res, 413, 'E_PAYLOAD_TOO_LARGE', 'over BankMaxBody');
is(stored_count($big->{data}{transactionReference}), 0, 'over BankMaxBody: nothing stored');

# --- validation: one entry per field, dotted names -----------------------------------------
my @strings = qw(currency narration receiverAccountName receiverAccountNumber receiverBankCode
  sessionId statusCode statusMessage transactionReference walletId);
my @cases = (
    ['amount', '5000.0',   'data.amount', 'withoutDecimals'],
    ['amount', '"5000"',   'data.amount', 'number'],
    ['amount', 'null',     'data.amount', 'required'],
    ['amount', 'true',     'data.amount', 'number'],
    ['amount', '-5',       'data.amount', 'min'],
    ['amount', '1e3',      'data.amount', 'withoutDecimals'],
    ['amount', undef,      'data.amount', 'required'],
    ['charges', '"10.75"', 'data.charges', 'number'],
    ['charges', 'null',    'data.charges', 'required'],
    ['charges', '-1',      'data.charges', 'min'],
    ['charges', undef,     'data.charges', 'required'],
    # integers beyond 64 bits: json-c keeps only the end of its range, never stored as such
    ['amount',  '18446744073709551616', 'data.amount',  'max'],
    ['amount',  '-9223372036854775809', 'data.amount',  'min'],
    ['charges', '18446744073709551616', 'data.charges', 'range'],
    ['charges', '-9223372036854775809', 'data.charges', 'range'],
    ['clientRef', '18446744073709551616',  'data.clientRef', 'range'],
    ['clientRef', '-99999999999999999999', 'data.clientRef', 'range'],
    ['customerReference', '99999999999999999999999', 'data.customerReference', 'range'],
    ['customerReference', '{"id":[1,18446744073709551616]}', 'data.customerReference', 'range'],
    (map { ([$_, '123', "data.$_", 'string'], [$_, '{}', "data.$_", 'string'],
           [$_, undef, "data.$_", 'required']) } @strings),
    ['currency', '""', 'data.currency', 'required'],
    ['service',  '1',  'service', 'string'],
    ['service',  undef, 'service', 'required'],
    ['type',     '[]',  'type', 'string'],
    ['type',     undef, 'type', 'required'],
);
for my $c (@cases) {
    my ($field, $raw, $path, $rule) = @$c;
    my $nn   = notice(clientRef => 'x', customerReference => 'x', defined $raw ? () : ($field => undef));
    my $body = defined $raw ? with_raw($nn, $field, $raw) : notice_json($nn);
    my $name = "$path = " . ($raw // 'absent');
    my $d    = assert_error(deliver($body), 422, 'E_VALIDATION_ERROR', $name);
    is_deeply([map { "$_->{field}:$_->{rule}" } @{ $d->{errors} || [] }], ["$path:$rule"],
        "$name: one error, on $path");
    like($d->{errors}[0]{message} // '', qr/\Q$path\E/, "$name: the message names it");
    is(stored_count($nn->{data}{transactionReference} // 'none'), 0, "$name: nothing stored")
      if $field ne 'transactionReference';
}
for my $data ('absent', '[]', '"x"', 'null') {
    my $body = $data eq 'absent' ? '{"service":"payments","type":"fund_transfer"}'
      : qq({"service":"payments","type":"fund_transfer","data":$data});
    my $d = assert_error(deliver($body), 422, 'E_VALIDATION_ERROR', "data $data");
    my $rule = $data eq 'absent' || $data eq 'null' ? 'required' : 'object';
    is_deeply([map { "$_->{field}:$_->{rule}" } @{ $d->{errors} || [] }], ["data:$rule"],
        "data $data: one error");
}
{
    my $nn = notice(currency => undef);
    my $d  = assert_error(deliver(with_raw($nn, 'amount', '"5000"')), 422, 'E_VALIDATION_ERROR',
        'two bad fields');
    is_deeply([map { $_->{field} } @{ $d->{errors} || [] }], ['data.amount', 'data.currency'],
        'two bad fields: one entry each');
}

# --- other services and types: stored as ignored ------------------------------------------
my $n_ign = notice(type => 'reversal');
answer_is(deliver($n_ign), $n_ign->{data}{transactionReference}, 0, 'unknown type');
is(stored($n_ign->{data}{transactionReference}, 'status'), 'ignored', 'unknown type: ignored');
is(stored($n_ign->{data}{transactionReference}, 'type'), 'reversal', 'unknown type: type kept');
push @distinct, [$n_ign->{data}{transactionReference}, 'T100', 'partner'];
my $ref_min = 'TRF-min-' . unique();
my $min = qq({"service":"cards","type":"authorisation","data":{"transactionReference":"$ref_min",)
  . qq("statusCode":"C00","extra":[1]}});
answer_is(deliver($min), $ref_min, 0, 'unknown service, only the key');
is(stored($ref_min, 'status'), 'ignored', 'unknown service: ignored');
is(stored($ref_min, 'amount'), 'NULL',    'unknown service: absent amount is NULL');
is(stored($ref_min, 'raw_body'), $min,    'unknown service: raw body kept');
push @distinct, [$ref_min, 'C00', 'partner'];
my $d = assert_error(deliver('{"service":"cards","type":"x","data":{"statusCode":"C00"}}'), 422,
    'E_VALIDATION_ERROR', 'unknown service without a reference');
is_deeply([map { $_->{field} } @{ $d->{errors} }], ['data.transactionReference'],
    'unknown service: the reference is still required');
my $n_null = notice(customerReference => 'x');
my $t_null = with_raw($n_null, 'customerReference', 'null');
answer_is(deliver($t_null), $n_null->{data}{transactionReference}, 0, 'null references');
is(stored($n_null->{data}{transactionReference}, 'client_ref'), 'NULL', 'absent clientRef: NULL');
is(stored($n_null->{data}{transactionReference}, 'customer_reference'), 'NULL',
    'null customerReference: NULL');
push @distinct, [$n_null->{data}{transactionReference}, 'T100', 'partner'];
# the largest integers json-c holds exactly are kept as sent
my $n_edge = notice(clientRef => 'x', customerReference => 'x');
my $t_edge = notice_json($n_edge);
$t_edge =~ s/"clientRef":"x"/"clientRef":18446744073709551614/ or die;
$t_edge =~ s/"customerReference":"x"/"customerReference":[-9223372036854775807]/ or die;
answer_is(deliver($t_edge), $n_edge->{data}{transactionReference}, 0, 'largest 64-bit integers');
is(stored($n_edge->{data}{transactionReference}, 'client_ref'), '18446744073709551614',
    'largest 64-bit integers: clientRef as sent');
is(stored($n_edge->{data}{transactionReference}, 'customer_reference'), '[-9223372036854775807]',
    'largest 64-bit integers: customerReference as sent');
push @distinct, [$n_edge->{data}{transactionReference}, 'T100', 'partner'];

# --- walletId: the account and customer it belongs to --------------------------------------
my $cust   = new_customer();
my $wallet = 'WAL-' . unique();
my $acct   = uuid4();
my $acctno = '9' . substr(unique(), -9);
db_exec("INSERT INTO accounts (id, customer_id, status, bank_name, bank_account_id,"
      . " account_name, account_number, created_at, updated_at) VALUES ('$acct', '$cust->{id}',"
      . " 'bvn_verified', 'mod_bank Test Bank', '$wallet', 'ADA OBI', '$acctno',"
      . " '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')");
my $n_acct = notice(walletId => $wallet);
my $r_acct = $n_acct->{data}{transactionReference};
answer_is(deliver($n_acct), $r_acct, 0, 'matching walletId');
is(stored($r_acct, 'account_id'),  $acct,       'matching walletId: account stored');
is(stored($r_acct, 'customer_id'), $cust->{id}, 'matching walletId: customer stored');
push @distinct, [$r_acct, 'T100', 'partner', $cust->{id}];

# --- the signature (HMAC of the raw bytes) -----------------------------------------------------
my %signed = (path => '/webhook/signed');
sub signed_with {
    my ($body, $sig) = @_;
    push @sent, $sig if defined $sig && length $sig > 8;
    return deliver($body, %signed, defined $sig ? (headers => { 'X-Partner-Signature' => $sig }) : ());
}
my $n_s   = notice();
my $t_s   = notice_json($n_s);
my $sig_s = hmac($t_s, $HMAC_KEY);
answer_is(signed_with($t_s, $sig_s), $n_s->{data}{transactionReference}, 0, 'signed');
is(stored($n_s->{data}{transactionReference}, 'partner', 'signed'), 'signed',
    'signed: partner is the Location segment');
push @distinct, [$n_s->{data}{transactionReference}, 'T100', 'signed'];
my $n_u = notice();
my $t_u = notice_json($n_u);
answer_is(signed_with($t_u, uc hmac($t_u, $HMAC_KEY)), $n_u->{data}{transactionReference}, 0,
    'signed, upper-case hex');
push @distinct, [$n_u->{data}{transactionReference}, 'T100', 'signed'];

# Raw bytes: a pretty-printed body is signed as sent and stored as sent.
my $n_p = notice();
my $t_p = JSON::PP->new->canonical->pretty->encode($n_p);
answer_is(signed_with($t_p, hmac($t_p, $HMAC_KEY)), $n_p->{data}{transactionReference}, 0,
    'signed, pretty-printed');
is(stored($n_p->{data}{transactionReference}, 'raw_body', 'signed'), $t_p,
    'signed: raw body stored byte for byte');
push @distinct, [$n_p->{data}{transactionReference}, 'T100', 'signed'];

my $n_x = notice();
my $t_x = notice_json($n_x);
my $good = hmac($t_x, $HMAC_KEY);
my @bad_sigs = (
    'missing'                    => undef,
    'empty'                      => '',
    'wrong key'                  => hmac($t_x, 'test-hmac-key-999'),
    'of another body'            => hmac($t_x . ' ', $HMAC_KEY),
    'of the same JSON, reformatted' => hmac(JSON::PP->new->canonical->pretty->encode($n_x), $HMAC_KEY),
    'sha256 instead of sha512'   => hmac($t_x, $HMAC_KEY, 'sha256'),
    'garbled'                    => 'zz' . substr($good, 2),
    'truncated'                  => substr($good, 0, -2),
    'extended'                   => $good . '00',
    'with a prefix'              => "sha512=$good",
    'base64, not hex'            => do { require MIME::Base64; MIME::Base64::encode_base64(pack('H*', $good), '') },
);
while (my ($name, $sig) = splice @bad_sigs, 0, 2) {
    my $res = signed_with($t_x, $sig);
    assert_error($res, 401, 'E_INVALID_SIGNATURE', "signature $name");
    is(stored_count($n_x->{data}{transactionReference}), 0, "signature $name: nothing stored");
}
# The order: secret, media type and size, signature, then JSON and validation.
assert_error(deliver($t_x, %signed, secret => 'test-webhook-secret-wrong',
        headers => { 'X-Partner-Signature' => $good }), 401, 'E_UNAUTHORIZED_ACCESS',
    'signed: the secret comes first');
assert_error(deliver($t_x, %signed, content_type => 'text/plain'), 415,
    'E_UNSUPPORTED_MEDIA_TYPE', 'signed: media type before signature');
assert_error(signed_with('{"service":', hmac('{"service"', $HMAC_KEY)), 401,
    'E_INVALID_SIGNATURE', 'signed: signature before JSON');
assert_error(signed_with('{"service":', hmac('{"service":', $HMAC_KEY)), 400, 'E_INVALID_JSON',
    'signed: JSON after signature');
my $t_v = with_raw(notice(), 'amount', '"1"');
assert_error(signed_with($t_v, hmac($t_v, 'test-hmac-key-999')), 401, 'E_INVALID_SIGNATURE',
    'signed: signature before validation');
assert_error(signed_with($t_v, hmac($t_v, $HMAC_KEY)), 422, 'E_VALIDATION_ERROR',
    'signed: validation after signature');

# sha256, and BankWebhookPartner naming the partner.
my $n_256 = notice();
my $t_256 = notice_json($n_256);
my %s256  = (path => '/webhook/signed256', secret => 'test-webhook-secret-256');
assert_error(deliver($t_256, %s256, headers => { 'X-Sig-256' => hmac($t_256, 'test-hmac-key-256', 'sha512') }),
    401, 'E_INVALID_SIGNATURE', 'sha256 location: sha512 refused');
answer_is(deliver($t_256, %s256, headers => { 'X-Sig-256' => hmac($t_256, 'test-hmac-key-256', 'sha256') }),
    $n_256->{data}{transactionReference}, 0, 'sha256 location');
is(stored($n_256->{data}{transactionReference}, 'partner', 'acme-pay'), 'acme-pay',
    'BankWebhookPartner recorded');
push @distinct, [$n_256->{data}{transactionReference}, 'T100', 'acme-pay'];

# --- an IP allow-list is httpd's Require ip, in front of the handler ---------------------------
my $n_ip = notice();
is(deliver($n_ip, path => '/webhook/allowlisted')->code, 403, 'address not allowed: 403');
is(stored_count($n_ip->{data}{transactionReference}), 0, 'address not allowed: nothing stored');
answer_is(deliver($n_ip, path => '/webhook/loopback'), $n_ip->{data}{transactionReference}, 0,
    'address allowed');
is(stored($n_ip->{data}{transactionReference}, 'partner', 'loopback'), 'loopback',
    'address allowed: stored');
push @distinct, [$n_ip->{data}{transactionReference}, 'T100', 'loopback'];

# --- fails closed without a secret, and without a database -----------------------------------
for my $secret ($SECRET_NEW, undef) {
    my $nn   = notice();
    my $name = 'no BankWebhookSecret' . ($secret ? '' : ', no bearer');
    my $r    = deliver($nn, path => '/webhook/nosecret', secret => $secret);
    assert_error($r, 503, 'E_UNAVAILABLE', $name);
    like($r->header('Retry-After') // '', qr/^\d+$/, "$name: Retry-After");
    is(stored_count($nn->{data}{transactionReference}), 0, "$name: nothing stored");
}
my $log = error_log_since($mark);
like($log, qr/BANK0701: no BankWebhookSecret for partner nosecret/, 'no secret: logged why');

Apache::TestRequest::module('bank_nodb');
my $n_db = notice();
my $r_db = deliver($n_db);
Apache::TestRequest::module('default');
assert_error($r_db, 503, 'E_UNAVAILABLE', 'database down');
like($r_db->header('Retry-After') // '', qr/^\d+$/, 'database down: Retry-After');
is(stored_count($n_db->{data}{transactionReference}), 0, 'database down: nothing stored');

# --- what was logged -----------------------------------------------------------------------------
$log = error_log_since($mark);
like($log, qr/BANK0706: payment notice \Q$ref\E from partner partner: walletId \Q$n->{data}{walletId}\E matches no account/,
    'unmatched walletId: logged');
unlike($log, qr/BANK0706: payment notice \Q$r_acct\E/, 'matched walletId: not logged as unmatched');
like($log, qr/BANK0702: payment notice for partner partner refused: wrong bearer/, 'wrong secret: logged');
like($log, qr/BANK0703: payment notice refused: wrong X-Partner-Signature header/, 'bad signature: logged');

# --- bankctl notices --json: each distinct notice once --------------------------------------------
my ($rc, $out, $err) = bankctl('notices', '--limit', '10000', '--json');
is($rc, 0, 'bankctl notices --json: exit 0') or diag($err);
my %seen;
my @keys = qw(amount charges clientRef currency customerId customerReference narration partner
  receivedAt receiverAccountName receiverAccountNumber receiverBankCode sessionId status statusCode
  statusMessage transactionReference walletId);
my ($first_line) = grep { /"transactionReference":"\Q$ref\E"/ && /"statusCode":"T100"/ } split /\n/, $out;
for my $line (split /\n/, $out) {
    my $o = eval { JSON::PP->new->decode($line) } or next;
    push @{ $seen{"$o->{transactionReference}|$o->{statusCode}|$o->{partner}"} }, $o;
}
for my $dn (@distinct) {
    my ($r, $sc, $p, $cid) = @$dn;
    my $list = $seen{"$r|$sc|$p"} || [];
    is(scalar @$list, 1, "bankctl notices: $r $sc $p listed once");
    next unless @$list;
    is_deeply([sort keys %{ $list->[0] }], [sort @keys], "bankctl notices: $r fields");
    is($list->[0]{customerId}, $cid, "bankctl notices: $r customerId");
}
my $o1 = ($seen{"$ref|T100|partner"} || [{}])->[0];
like($first_line // '', qr/"amount":5000[,}]/,   'bankctl notices: amount is a JSON integer');
like($first_line // '', qr/"charges":10\.75[,}]/, 'bankctl notices: charges as sent');
is($o1->{clientRef}, 'CLI-1', 'bankctl notices: clientRef');
is_deeply($o1->{customerReference}, { id => 7, tags => ['a'] }, 'bankctl notices: customerReference');
is($o1->{receivedAt}, $received, 'bankctl notices: receivedAt');
is($o1->{status}, 'received', 'bankctl notices: status');
is($o1->{walletId}, $n->{data}{walletId}, 'bankctl notices: walletId');
is(($seen{"$n_ign->{data}{transactionReference}|T100|partner"} || [{}])->[0]{status}, 'ignored',
    'bankctl notices: ignored status');

my ($rc2, $text_out) = bankctl('notices', '--limit', '3');
is($rc2, 0, 'bankctl notices: exit 0');
my @rows = split /\n/, $text_out;
is(scalar @rows, 4, 'bankctl notices --limit 3: header and three rows');
like($rows[0], qr/^RECEIVED\s+PARTNER\s+STATUS/, 'bankctl notices: header');
# RECEIVED is the stored instant in the API's form, whatever bankctl's session TimeZone (on
# PostgreSQL the cluster's: -03:30 in the suite).
my ($when, $by, undef, $code, undef, undef, $ref1) = map { $_ // '' } (split ' ', $rows[1] // '')[0 .. 6];
is($when, db_time("SELECT received_at FROM payment_notices WHERE transaction_reference = '$ref1'"
          . " AND status_code = '$code' AND partner = '$by'"), 'bankctl notices: RECEIVED as stored');
my ($rc3, undef, $err3) = bankctl('notices', '--limit', '0');
is($rc3, 2, 'bankctl notices --limit 0: exit 2');
like($err3, qr/--limit/, 'bankctl notices --limit 0: says why');

# --- no secret, key or signature in the error log ------------------------------------------------
is_deeply([secrets_in_log($SECRET_OLD, $SECRET_NEW, $HMAC_KEY, 'test-webhook-secret-256',
            'test-hmac-key-256', @sent)], [], 'error log holds no secret, key or signature');

done_testing();

