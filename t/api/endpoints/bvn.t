# POST /onboarding/bvn (docs/api.md): verification against the
# identity records loaded with `bankctl bvn add`, the account it opens, every outcome, the
# field rules, and the BVN kept out of the error log.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Bank::Test;
use Bank::BvnTest;

my $mark = error_log_mark();
my $ISO  = qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
my $UUID = qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

# --- first success ----------------------------------------------------------------------
my $v      = verifiable();
my $c      = $v->{c};
my $serial = next_serial();
my $res    = bvn_post($v);
is($res->code, 200, 'verify: 200');
is($res->header('Content-Type'), 'application/json; charset=utf-8', 'verify: content type');
is($res->header('Cache-Control'), 'no-store', 'verify: not cacheable');
my $d = decode_body($res) || {};
is_deeply([sort keys %$d], [qw(body message)], 'verify: envelope is body and message');
is($d->{message}, 'BVN verified successfully', 'verify: first-success message');
is_deeply([keys %{ $d->{body} }], ['customer'], 'verify: body holds the customer');
my $cu = $d->{body}{customer};
is_deeply(
    [sort keys %$cu],
    [sort qw(customerId firstName lastName email emailVerified phone createdAt updatedAt
        fullName address bvn referralCode account nin)],
    'verify: every field of 2.2 and 2.3'
);
is($cu->{customerId}, $c->{id},    'verify: customerId');
is($cu->{firstName},  'Ada',       'verify: firstName');
is($cu->{lastName},   'Obi',       'verify: lastName');
is($cu->{email},      $c->{email}, 'verify: email');
is($cu->{phone},      $c->{phone}, 'verify: phone');
is($cu->{fullName},   'Ada Obi',   'verify: fullName');
like($res->content, qr/"emailVerified":false[,}]/, 'verify: emailVerified is a JSON boolean');
like($cu->{createdAt}, $ISO, 'verify: createdAt ISO 8601 with milliseconds');
like($cu->{updatedAt}, $ISO, 'verify: updatedAt ISO 8601 with milliseconds');
ok(exists $cu->{address} && !defined $cu->{address}, 'verify: address null');
ok(exists $cu->{nin}     && !defined $cu->{nin},     'verify: nin null');
is($cu->{bvn}, $v->{bvn}, 'verify: bvn');
like($cu->{referralCode}, qr/^[A-Z2-9]{8}$/, 'verify: referralCode of 8 from A-Z, 2-9');

my $a = $cu->{account} || {};
is_deeply(
    [sort keys %$a],
    [sort qw(accountId customerId accountType balance currency status details createdAt updatedAt)],
    'account: every field of 2.4'
);
like($a->{accountId}, $UUID, 'account: accountId is a lower-case UUID v4');
is($a->{customerId},  $c->{id},        'account: customerId is the owner');
is($a->{accountType}, 'personal',      'account: personal');
is($a->{currency},    'NGN',           'account: NGN');
is($a->{status},      'bvn_verified',  'account: status bvn_verified');
like($res->content, qr/"balance":"0\.00"/, 'account: balance is the string "0.00"');
like($a->{createdAt}, $ISO, 'account: createdAt');
like($a->{updatedAt}, $ISO, 'account: updatedAt');
my $det = $a->{details} || {};
is_deeply([sort keys %$det], [sort qw(bank verified accountId accountName accountNumber)],
    'details: exact fields');
is($det->{bank}, 'mod_bank Test Bank', 'details: bank is BankAccountBank');
like($res->content, qr/"verified":true[,}]/, 'details: verified is JSON true');
ok(length($det->{accountId} // '') && $det->{accountId} ne $a->{accountId},
    'details: bank-side accountId distinct from the outer one');
is($det->{accountName}, 'ADA OBI', "details: accountName is the record's names upper-cased");
like($det->{accountNumber}, qr/^\d{10}$/, 'details: accountNumber has 10 digits');
is($det->{accountNumber}, nuban('999', $serial),
    'details: NUBAN of the next serial with the CBN check digit for bank 999');

is(customer_row($c->{id}), "$v->{bvn}|$cu->{referralCode}", 'db: customer has bvn and referral code');
is(account_count($c->{id}), 1, 'db: one account');
is(db_value("SELECT balance_minor || ' ' || CASE WHEN verified THEN 'yes' ELSE 'no' END"
      . " FROM accounts WHERE customer_id = '$c->{id}'"), '0 yes', 'db: balance 0 kobo, verified');

# --- the same BVN again: the same account, never a second --------------------------------
my $again = bvn_post($v);
is($again->code, 200, 'repeat: 200');
my $d2 = decode_body($again) || {};
is($d2->{message}, 'BVN already verified', 'repeat: already-verified message');
is_deeply($d2->{body}{customer}{account}, $a, 'repeat: the same account');
is($d2->{body}{customer}{referralCode}, $cu->{referralCode}, 'repeat: the same referral code');
is($d2->{body}{customer}{createdAt}, $cu->{createdAt}, 'repeat: customer unchanged');
is(account_count($c->{id}), 1, 'repeat: still one account');
is(next_serial(), $serial + 1, 'repeat: no serial used');

# A token with every ability ("*") works too.
my $star = issue_token($c->{email});
my $r3   = bvn_post($v, token => $star);
is($r3->code, 200, 'ability *: 200');
is((decode_body($r3) || {})->{message}, 'BVN already verified', 'ability *: already verified');

# --- names: case-insensitive and in either order ------------------------------------------
my $sw = verifiable(rec_first => 'OBI', rec_last => 'ada');
my $rs = bvn_post($sw);
is($rs->code, 200, 'names swapped and in other case: 200');
is((decode_body($rs) || {})->{body}{customer}{account}{details}{accountName}, 'OBI ADA',
    "names swapped: accountName is the record's order");

# --- the record decides --------------------------------------------------------------------
my $un = verifiable(no_record => 1);
my $e  = assert_error(bvn_post($un), 422, 'E_VALIDATION_ERROR', 'unknown BVN');
is(scalar @{ $e->{errors} }, 1, 'unknown BVN: one entry');
is($e->{errors}[0]{field}, 'bvn_number', 'unknown BVN: on bvn_number');
is($e->{errors}[0]{rule},  'bvn_mismatch', 'unknown BVN: rule bvn_mismatch');
is(customer_row($un->{c}{id}), '|', 'unknown BVN: customer unchanged');
is(account_count($un->{c}{id}), 0, 'unknown BVN: no account');

my $dob = verifiable(dob => '1985-11-03');
$e = assert_error(bvn_post($dob, dob => '1985-11-04'), 422, 'E_VALIDATION_ERROR', 'other date');
is(scalar @{ $e->{errors} }, 1, 'other date: one entry');
is($e->{errors}[0]{field}, 'bvn_number', 'other date: on bvn_number, like an unknown BVN');
unlike($e->{errors}[0]{message} . $e->{message}, qr/1985/, 'other date: the record is not shown');
is(customer_row($dob->{c}{id}), '|', 'other date: customer unchanged');

my $nm = verifiable(rec_first => 'Chinedu', rec_last => 'Okafor');
$e = assert_error(bvn_post($nm), 422, 'E_VALIDATION_ERROR', 'other names');
is(scalar @{ $e->{errors} }, 1, 'other names: one entry');
is($e->{errors}[0]{field}, 'bvn_number', 'other names: on bvn_number');
unlike($e->{errors}[0]{message} . $e->{message}, qr/Chinedu|Okafor/i, 'other names: the record is not shown');
my $half = verifiable(rec_first => 'Ada', rec_last => 'Okafor');
assert_error(bvn_post($half), 422, 'E_VALIDATION_ERROR', 'one name of two');

# The record is read at each request: `bankctl bvn add` corrects it in place.
my $fix = verifiable(dob => '1970-01-01');
assert_error(bvn_post($fix, dob => '1971-02-02'), 422, 'E_VALIDATION_ERROR', 'before correction');
bankctl('bvn', 'add', '--bvn', $fix->{bvn}, '--dob', '1971-02-02', '--first', 'Ada', '--last', 'Obi');
is(bvn_post($fix, dob => '1971-02-02')->code, 200, 'bankctl bvn add replaces the record');

# --- 409: the BVN of another customer ---------------------------------------------------------
my $thief = verifiable(bvn => $v->{bvn}, no_record => 1);
my $tres  = bvn_post($thief);
$e = assert_error($tres, 409, 'E_BVN_IN_USE', 'BVN of another customer');
for my $secret ($c->{id}, $c->{email}, $det->{accountNumber}, $a->{accountId}, $cu->{referralCode}) {
    unlike($tres->content, qr/\Q$secret\E/, "BVN in use: the other customer's data not shown");
}
is(customer_row($thief->{c}{id}), '|', 'BVN in use: customer unchanged');
is(account_count($thief->{c}{id}), 0, 'BVN in use: no account');
# ...but only once the record matches: a wrong date is still 422.
assert_error(bvn_post($thief, dob => '1990-04-13'), 422, 'E_VALIDATION_ERROR',
    'BVN of another customer with a wrong date');

# --- 409: already verified with another BVN ---------------------------------------------------
my $other = next_bvn();
bankctl('bvn', 'add', '--bvn', $other, '--dob', '1990-04-12', '--first', 'Ada', '--last', 'Obi');
$e = assert_error(bvn_post($v, bvn => $other), 409, 'E_ALREADY_VERIFIED', 'second BVN');
is(customer_row($c->{id}), "$v->{bvn}|$cu->{referralCode}", 'second BVN: customer unchanged');
is(account_count($c->{id}), 1, 'second BVN: still one account');
# The customer's own state answers before the record is looked at: whatever the other BVN
# is, the answer is the same 409, and it says nothing about that BVN.
my $unknown = next_bvn();    # no record
$e = assert_error(bvn_post($v, bvn => $unknown), 409, 'E_ALREADY_VERIFIED',
    'verified, then an unknown BVN');
ok(!grep({ defined $_->{field} } @{ $e->{errors} }),
    'verified, then an unknown BVN: no field entry');
my $okafor = verifiable(first => 'Chinedu', last => 'Okafor');
is(bvn_post($okafor)->code, 200, 'another customer verified');
assert_error(bvn_post($v, bvn => $okafor->{bvn}), 409, 'E_ALREADY_VERIFIED',
    "verified, then another customer's BVN (their names on the record)");
assert_error(bvn_post($v, bvn => $other, dob => '1990-04-13'), 409, 'E_ALREADY_VERIFIED',
    'verified, then another BVN with a wrong date');
is(customer_row($c->{id}), "$v->{bvn}|$cu->{referralCode}", 'other BVNs: customer unchanged');
is(account_count($c->{id}), 1, 'other BVNs: still one account');
# The field rules still come first.
$e = assert_error(bvn_post($v, bvn => '123'), 422, 'E_VALIDATION_ERROR',
    'verified, then a malformed BVN');
is($e->{errors}[0]{rule}, 'regex', 'verified, then a malformed BVN: rule regex');
# The same BVN again is checked against the record like a first request: a wrong date is the
# 422 of any mismatch (t/api/security/bvn_throttle.t), not "already verified".
$e = assert_error(bvn_post($v, dob => '1990-04-13'), 422, 'E_VALIDATION_ERROR',
    'verified, then the same BVN with a wrong date');
is(scalar @{ $e->{errors} }, 1, 'same BVN, wrong date: one entry');
is($e->{errors}[0]{field}, 'bvn_number',   'same BVN, wrong date: on bvn_number');
is($e->{errors}[0]{rule},  'bvn_mismatch', 'same BVN, wrong date: rule bvn_mismatch');
is(account_count($c->{id}), 1, 'same BVN, wrong date: still one account');
# The unused BVN stays free for its owner.
my $own = verifiable(bvn => $other, no_record => 1);
is(bvn_post($own)->code, 200, 'second BVN: still free for another customer');

# --- field rules --------------------------------------------------------------------------------
my $f = verifiable();
my $next_year = (gmtime)[5] + 1900 + 1;
my @cases = (
    ['bvn_number missing', { date_of_birth => '1990-04-12' }, bvn_number => 'required'],
    ['bvn_number null', { bvn_number => undef, date_of_birth => '1990-04-12' }, bvn_number => 'required'],
    ['bvn_number empty', { bvn_number => '', date_of_birth => '1990-04-12' }, bvn_number => 'required'],
    ['bvn_number a number', { bvn_number => 22212345678, date_of_birth => '1990-04-12' },
        bvn_number => 'string'],
    ['bvn_number 10 digits', { bvn_number => '2221234567', date_of_birth => '1990-04-12' },
        bvn_number => 'regex'],
    ['bvn_number 12 digits', { bvn_number => '222123456789', date_of_birth => '1990-04-12' },
        bvn_number => 'regex'],
    ['bvn_number with a letter', { bvn_number => '2221234567a', date_of_birth => '1990-04-12' },
        bvn_number => 'regex'],
    ['bvn_number with a space', { bvn_number => ' 22212345678', date_of_birth => '1990-04-12' },
        bvn_number => 'regex'],
    ['bvn_number Arabic-Indic digits',    # sent as UTF-8 bytes
        '{"bvn_number":"' . "\xd9\xa1" x 11 . '","date_of_birth":"1990-04-12"}', bvn_number => 'regex'],
    ['bvn_number an array', { bvn_number => ['22212345678'], date_of_birth => '1990-04-12' },
        bvn_number => 'string'],
    ['date_of_birth missing', { bvn_number => $f->{bvn} }, date_of_birth => 'required'],
    ['date_of_birth a number', { bvn_number => $f->{bvn}, date_of_birth => 19900412 },
        date_of_birth => 'string'],
    ['date_of_birth 2023-02-30', { bvn_number => $f->{bvn}, date_of_birth => '2023-02-30' },
        date_of_birth => 'date'],
    ['date_of_birth 2023-13-01', { bvn_number => $f->{bvn}, date_of_birth => '2023-13-01' },
        date_of_birth => 'date'],
    ['date_of_birth 01-01-1990', { bvn_number => $f->{bvn}, date_of_birth => '01-01-1990' },
        date_of_birth => 'date'],
    ['date_of_birth 1990-1-1', { bvn_number => $f->{bvn}, date_of_birth => '1990-1-1' },
        date_of_birth => 'date'],
    ['date_of_birth with a time', { bvn_number => $f->{bvn}, date_of_birth => '1990-04-12T00:00:00Z' },
        date_of_birth => 'date'],
    ['date_of_birth in the future', { bvn_number => $f->{bvn}, date_of_birth => "$next_year-01-01" },
        date_of_birth => 'beforeOrEqual'],
);
for my $case (@cases) {
    my ($name, $body, $field, $rule) = @$case;
    my $er = assert_error(bvn_post($f, body => $body), 422, 'E_VALIDATION_ERROR', $name);
    is(scalar @{ $er->{errors} || [] }, 1, "$name: one entry");
    is($er->{errors}[0]{field}, $field, "$name: field");
    is($er->{errors}[0]{rule},  $rule,  "$name: rule");
}
my $both = assert_error(bvn_post($f, body => { bvn_number => 123, date_of_birth => '2023-02-30' }),
    422, 'E_VALIDATION_ERROR', 'both fields wrong');
is_deeply([map { $_->{field} } @{ $both->{errors} }], [qw(bvn_number date_of_birth)],
    'both fields wrong: one entry per field');
is(customer_row($f->{c}{id}), '|', 'field rules: customer unchanged');
my $extra = bvn_post($f, body => { bvn_number => $f->{bvn}, date_of_birth => $f->{dob}, x => [1] });
is($extra->code, 200, 'unknown fields are ignored');

# Leap day: a real date.
my $leap = verifiable(dob => '2000-02-29');
is(bvn_post($leap)->code, 200, 'date_of_birth 2000-02-29 is real');

# --- the institution comes from the configuration of the Location --------------------------
my $v2     = verifiable();
my $s2     = next_serial();
my $r2     = bvn_post($v2, path => '/v2/onboarding/bvn');
my $det2   = ((decode_body($r2) || {})->{body}{customer}{account} || {})->{details} || {};
is($r2->code, 200, 'other Location: 200');
is($det2->{bank}, 'Second Test MFB', 'other Location: its BankAccountBank');
is($det2->{accountNumber}, nuban('50211', $s2), 'other Location: NUBAN for 5-digit code 50211');

# --- data the module cannot serve --------------------------------------------------------------
# A token whose customer was deleted (without the cascade) is refused.
my $gone = verifiable();
db_exec("DELETE FROM customers WHERE id = '$gone->{c}{id}'");
my $gr = bvn_post($gone);
assert_error($gr, 401, 'E_UNAUTHORIZED_ACCESS', 'customer deleted');
is($gr->header('WWW-Authenticate'), 'Bearer realm="mod_bank", error="invalid_token"',
    'customer deleted: WWW-Authenticate');
# A customer holding a BVN without an account (imported data) is not given a second state.
my $odd = verifiable();
db_exec("UPDATE customers SET bvn = '$odd->{bvn}' WHERE id = '$odd->{c}{id}'");
my $or = bvn_post($odd);
assert_error($or, 500, 'E_INTERNAL', 'BVN without account');
unlike($or->content, qr/repair|customers|SELECT/i, 'BVN without account: no internals');

# --- the BVN never reaches the error log ---------------------------------------------------------
my $log = '';
for (1 .. 20) {
    $log = error_log_since($mark);
    last if $log =~ /BANK0602/;
    select undef, undef, undef, 0.1;
}
like($log, qr/BANK0604: customer \Q$c->{id}\E verified; account \Q$a->{accountId}\E opened/,
    'log: the opening is logged (by ids)');
like($log, qr/BANK0605: customer \Q$un->{c}{id}\E: BVN not verified/, 'log: refusals logged');
like($log, qr/BANK0602: customer \Q$odd->{c}{id}\E has a BVN but no account/,
    'log: the inconsistent customer logged');
# Deleting the customer deleted their tokens too, on both drivers (PostgreSQL's foreign key;
# SQLite's trigger customers_gone, also with foreign keys off as here): the token is refused
# before any customer lookup, so BANK0601 (a customer gone between the two) is not reached.
is(db_value("SELECT count(*) FROM auth_access_tokens WHERE tokenable_id = '$gone->{c}{id}'"), 0,
    'customer deleted: their tokens went with the row');
my @leaks = grep { index($log, $_) >= 0 } used_bvns();
is(scalar @leaks, 0, 'log: no BVN in any line (' . scalar(used_bvns()) . ' BVNs used)')
  or diag("leaked: @leaks");

done_testing();
