# Input that could be read two ways is refused on every endpoint that reads a body
# (docs/api.md, "Ambiguous input"): a member name written twice in one object, at any depth
# and however escaped, is 400 E_INVALID_JSON and nothing is stored or counted; `charges`
# that is negative zero, underflows, or does not round-trip through a double is 422; a \u
# escape of a lone UTF-16 surrogate (either half) is 400 E_INVALID_JSON (CONTRACT C10), a pair
# is the character it encodes.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Webhook;
use Bank::SignIn ();
use Bank::BvnTest qw(verifiable bvn_req customer_row);

sub dup_ok {
    my ($res, $name) = @_;
    my $d = assert_error($res, 400, 'E_INVALID_JSON', $name);
    like($d->{message} // '', qr/same member name twice/, "$name: says why");
}

# --- the webhook: what the security test saw stored -----------------------------------------
{
    my $n    = notice();
    my $text = notice_json($n);
    my $ref  = $n->{data}{transactionReference};
    (my $amount = $text) =~ s/"amount":5000/"amount":1,"amount":777777/ or die;
    dup_ok(deliver($amount), 'webhook: amount twice');
    (my $esc = $text) =~ s/"amount":5000/"amount":1,"\\u0061mount":777777/ or die;
    dup_ok(deliver($esc), 'webhook: amount and \\u0061mount');
    (my $tref = $text) =~ s/"transactionReference":"\Q$ref\E"/"transactionReference":"$ref","transactionReference":"$ref-2"/
      or die;
    dup_ok(deliver($tref), 'webhook: transactionReference twice');
    (my $deep = $text) =~ s/"data":\{/"data":{"clientRef":{"a":[{"k":1,"k":2}]},/ or die;
    dup_ok(deliver($deep), 'webhook: a name twice three levels down');
    (my $top = $text) =~ s/^\{/{"service":"payments",/ or die;
    dup_ok(deliver($top), 'webhook: service twice at the top');
    is(stored_count($ref), 0, 'webhook: none of them stored');
    is(stored_count("$ref-2"), 0, 'webhook: nor under the second reference');
    # the same names in different objects are no duplicate
    (my $fine = $text) =~ s/"data":\{/"data":{"clientRef":{"amount":1,"x":{"amount":2}},/ or die;
    is(deliver($fine)->code, 200, 'webhook: one name in several objects: 200');
    is(stored_count($ref), 1, 'webhook: stored once');
}

# --- lone surrogates escaped: 400, nothing stored; a pair is a character ----------------------
{
    for my $case (['narration', '\ud800'], ['narration', 'a\udc00b'], ['transactionReference', 'TRF-\ud83d'],
        ['narration', '\ud83d\u0041'])
    {
        my ($field, $esc) = @$case;
        my $n = notice();
        my $ref = $n->{data}{transactionReference};
        my $text = notice_json($n);
        $text =~ s/"\Q$field\E":"[^"]*"/"$field":"$esc"/ or die "no $field";
        my $d = assert_error(deliver($text), 400, 'E_INVALID_JSON', "webhook: $field $esc");
        like($d->{message} // '', qr/lone UTF-16 surrogate/, "webhook: $field $esc: says why");
        is(stored_count($ref), 0, "webhook: $field $esc: nothing stored");
    }
    my $n = notice();
    (my $pair = notice_json($n)) =~ s/"narration":"[^"]*"/"narration":"rent \\ud83d\\ude00"/ or die;
    is(deliver($pair)->code, 200, 'webhook: a surrogate pair: 200');
    is(stored($n->{data}{transactionReference}, 'narration'), do { require Encode; Encode::encode('UTF-8', "rent \x{1F600}") },
        'webhook: the pair stored as the character it encodes');
    my $c = new_customer();
    my $res = json_request(POST => '/auth/sign_in', headers => { Authorization => "Bearer $Bank::SignIn::CLIENT_KEY" },
        body => qq({"email":"$c->{email}","password":"$c->{password}","deviceToken":"dev\\ud800"}));
    assert_error($res, 400, 'E_INVALID_JSON', 'sign-in: deviceToken with a lone surrogate');
}

# --- charges: negative zero, underflow, no round trip -> 422; nothing stored ----------------
for my $case (['-0', 'min'], ['-0.0', 'min'], ['-0e3', 'min'], ['-1e-400', 'min'],
    ['1e-400', 'roundTrip'], ['0.30000000000000001', 'roundTrip'],
    ['9007199254740993', 'roundTrip'], ['123456789012345678', 'roundTrip'],
    ['1.00000000000000000001', 'roundTrip'])
{
    my ($charges, $rule) = @$case;
    my $n = notice();
    (my $text = notice_json($n)) =~ s/"charges":10\.75/"charges":$charges/ or die;
    my $d = assert_error(deliver($text), 422, 'E_VALIDATION_ERROR', "charges $charges");
    is_deeply([map { "$_->{field}:$_->{rule}" } @{ $d->{errors} || [] }], ["data.charges:$rule"],
        "charges $charges: one entry, rule $rule");
    is(stored_count($n->{data}{transactionReference}), 0, "charges $charges: nothing stored");
}
for my $charges ('10.750', '1.075e1', '0.1', '0.30000000000000004', '0', '0.0', '5e-324',
    '9007199254740992')
{
    my $n = notice();
    (my $text = notice_json($n)) =~ s/"charges":10\.75/"charges":$charges/ or die;
    is(deliver($text)->code, 200, "charges $charges: 200");
    is(stored($n->{data}{transactionReference}, 'charges'), $charges, "charges $charges: stored as sent");
}
{
    my $n = notice();
    (my $text = notice_json($n)) =~ s/"amount":5000/"amount":-0/ or die;
    my $d = assert_error(deliver($text), 422, 'E_VALIDATION_ERROR', 'amount -0');
    is_deeply([map { "$_->{field}:$_->{rule}" } @{ $d->{errors} || [] }], ['data.amount:min'],
        'amount -0: min');
}

# --- sign-in: duplicates refused before any password work, not counted ---------------------
{
    my $c    = new_customer();
    my $body = sprintf '{"email":"%s","password":"wrong","password":"%s","deviceToken":"d"}',
      $c->{email}, $c->{password};
    my $res = json_request('POST', '/auth/sign_in',
        headers => { Authorization => 'Bearer test-client-key-1' }, body => $body);
    dup_ok($res, 'sign-in: password twice');
    ok(!defined $res->header('X-RateLimit-Remaining'), 'sign-in: not counted as an attempt');
    $body = sprintf '{"email":"%s","\\u0065mail":"%s","password":"%s","deviceToken":"d"}',
      $c->{email}, $c->{email}, $c->{password};
    dup_ok(json_request('POST', '/auth/sign_in',
        headers => { Authorization => 'Bearer test-client-key-1' }, body => $body),
        'sign-in: email and \\u0065mail');
}

# --- BVN: duplicates refused, no attempt counted, nothing verified -------------------------
{
    my $v    = verifiable();
    my $body = sprintf '{"bvn_number":"%s","date_of_birth":"1970-01-01","date_of_birth":"%s"}',
      $v->{bvn}, $v->{dob};
    dup_ok(json_request(bvn_req($v, body => $body)), 'bvn: date_of_birth twice');
    $body = sprintf '{"bvn_number":"%s","date_of_birth":"%s","bvn_number":"%s"}',
      $v->{bvn}, $v->{dob}, $v->{bvn};
    dup_ok(json_request(bvn_req($v, body => $body)), 'bvn: the same name and value twice');
    is(customer_row($v->{c}{id}), '|', 'bvn: the customer is not verified');
    is(json_request(bvn_req($v))->code, 200, 'bvn: the same request once: 200');
}

done_testing();
