# BVN onboarding is no oracle (docs/api.md): an unknown BVN, a date of birth differing from
# the record and names differing from the customer's answer the same 422, byte for byte.
# BankBvnThrottle (docs/configuration.md; the test server has the default `5 86400`,
# /short/onboarding/bvn `2 2`): those failures are counted per customer in the database;
# past the limit every attempt, right or wrong, is 429 until the window passes; a success
# clears the count; format errors do not count; concurrent wrong attempts never get more
# than ATTEMPTS 422s.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::BvnTest;
use Bank::SignIn qw(iso_ago);
use Bank::Servers qw(main_server concurrent);

my $MISMATCH = 'The bvn_number and date_of_birth do not match a BVN record of this customer';

sub count_of {
    my ($v) = @_;
    return db_value("SELECT failures FROM throttle_counts WHERE scope = 'bvn'"
          . " AND subject = '$v->{c}{id}'");
}

# A mismatch answer: 422, one entry, the fixed sentence; returns the raw body.
sub is_mismatch {
    my ($r, $name, $remaining) = @_;
    my $d = assert_error($r, 422, 'E_VALIDATION_ERROR', $name);
    is_deeply($d->{errors},
        [{ field => 'bvn_number', rule => 'bvn_mismatch', message => $MISMATCH }],
        "$name: exactly one bvn_mismatch entry");
    is($r->header('X-RateLimit-Limit'), 5, "$name: X-RateLimit-Limit");
    is($r->header('X-RateLimit-Remaining'), $remaining, "$name: X-RateLimit-Remaining");
    return scalar $r->content;
}

sub is_bvn_429 {
    my ($r, $name, $limit, $max_wait) = @_;
    assert_error($r, 429, 'E_TOO_MANY_REQUESTS', $name);
    my $ra = $r->header('Retry-After') // '';
    like($ra, qr/^\d+$/, "$name: Retry-After in seconds");
    ok($ra >= 1 && $ra <= $max_wait, "$name: Retry-After within 1..$max_wait") or diag($ra);
    is($r->header('X-RateLimit-Limit'), $limit, "$name: X-RateLimit-Limit");
    is($r->header('X-RateLimit-Remaining'), 0, "$name: X-RateLimit-Remaining 0");
    return $ra;
}

# --- the three mismatches: the same bytes --------------------------------------------------
my $a = verifiable();
my $unknown = is_mismatch(bvn_post($a, bvn => '99' . substr($a->{bvn}, 2)), 'unknown BVN', 4);
my $b = verifiable();
my $dob = is_mismatch(bvn_post($b, dob => '1990-04-13'), 'same BVN, other date of birth', 4);
my $c = verifiable(rec_first => 'Chinedu', rec_last => 'Eze');
my $names = is_mismatch(bvn_post($c), 'names differ from the record', 4);
is($dob, $unknown, 'a wrong date of birth answers the bytes of an unknown BVN');
is($names, $unknown, 'other names answer the bytes of an unknown BVN');
# the same customer, the three kinds in a row (the record of another customer's BVN too)
my $unknown2 = is_mismatch(bvn_post($b, bvn => '98' . substr($b->{bvn}, 2)), 'unknown, 2nd', 3);
my $other = is_mismatch(bvn_post($b, bvn => $c->{bvn}, dob => $c->{dob}), "another's BVN", 2);
is($unknown2, $unknown, 'the same bytes for the same customer');
is($other, $unknown, 'a record with other names: the same bytes');
is(count_of($b), 3, 'three failures counted for the customer in throttle_counts');

# --- past the limit: 429 for wrong and right alike -----------------------------------------
my $t = verifiable();
for my $i (1 .. 5) {
    is_mismatch(bvn_post($t, dob => "1980-01-0$i"), "failure $i", 5 - $i);
}
is(count_of($t), 5, 'five failures counted');
is_bvn_429(bvn_post($t, dob => '1980-02-01'), 'sixth wrong attempt', 5, 86400);
is_bvn_429(bvn_post($t), 'the right BVN while throttled', 5, 86400);
is(count_of($t), 5, 'a throttled attempt is not counted');
is(customer_row($t->{c}{id}), '|', 'no BVN stored while throttled');
is(account_count($t->{c}{id}), 0, 'no account opened while throttled');
# format errors are still answered as such and count nothing
my $f = assert_error(bvn_post($t, bvn => '123'), 422, 'E_VALIDATION_ERROR', 'bad bvn shape');
is($f->{errors}[0]{rule}, 'regex', 'a bad shape keeps its own rule');

# Retry-After counts down: the window started 86000 s ago, about 400 s remain.
db_exec("UPDATE throttle_counts SET window_start = '${\ iso_ago(86000)}'"
      . " WHERE scope = 'bvn' AND subject = '$t->{c}{id}'");
my $left = is_bvn_429(bvn_post($t), 'window started 86000 s ago', 5, 86400);
ok($left >= 395 && $left <= 401, 'Retry-After is what is left of the window') or diag($left);
# once the window has passed (rows aged in the database), the right BVN verifies
db_exec("UPDATE throttle_counts SET window_start = '${\ iso_ago(86401)}'"
      . " WHERE scope = 'bvn' AND subject = '$t->{c}{id}'");
my $ok = bvn_post($t);
is($ok->code, 200, 'window expired: the right BVN verifies') or diag($ok->content);
is(count_of($t), '', 'the success deleted the count');

# --- a success clears the count --------------------------------------------------------------
my $s = verifiable();
is_mismatch(bvn_post($s, dob => '1970-01-01'), "clear: failure $_", 5 - $_) for 1 .. 4;
is(bvn_post($s)->code, 200, 'the fifth attempt, right, verifies');
is(count_of($s), '', 'the count is cleared');
is(bvn_post($s)->code, 200, 'the 200 of "already verified" stays');

# --- a verified customer's read path: the count read with the customer --------------------
# (one statement reads the customer, the count and the record: bank_onboard_read)
my $v = verifiable();
is(bvn_post($v)->code, 200, 'verified');
my $repeat = bvn_post($v);
is($repeat->code, 200, 'the right BVN again: 200');
like($repeat->content, qr/BVN already verified/, 'answered as already verified');
is_mismatch(bvn_post($v, dob => '1970-01-01'), "verified: failure $_", 5 - $_) for 1 .. 2;
is(count_of($v), 2, 'a verified customer\'s wrong date of birth counts');
is(bvn_post($v)->code, 200, 'the right one still answers 200');
is(count_of($v), '', 'and clears the count');
is_mismatch(bvn_post($v, dob => '1970-01-01'), "verified again: failure $_", 5 - $_) for 1 .. 5;
is_bvn_429(bvn_post($v), 'verified, past the limit: the right BVN is refused too', 5, 86400);
is(count_of($v), 5, 'the refused right answer cleared nothing');

# --- format errors do not count --------------------------------------------------------------
my $g = verifiable();
assert_error(bvn_post($g, bvn => '1234567890'), 422, 'E_VALIDATION_ERROR', 'ten digits');
assert_error(bvn_post($g, dob => '1990-02-30'), 422, 'E_VALIDATION_ERROR', 'unreal date');
assert_error(bvn_post($g, dob => '2999-01-01'), 422, 'E_VALIDATION_ERROR', 'future date');
assert_error(bvn_post($g, body => { bvn_number => 12345678901, date_of_birth => $g->{dob} }),
    422, 'E_VALIDATION_ERROR', 'bvn_number a number');
is(count_of($g), '', 'format errors counted nothing');
is_mismatch(bvn_post($g, dob => '1970-01-01'), 'then a mismatch is the first failure', 4);

# --- the 409s stay as they are ---------------------------------------------------------------
my $h = verifiable();
my $owner = verifiable();
is(bvn_post($owner)->code, 200, 'another customer verifies');
assert_error(bvn_post($h, bvn => $owner->{bvn}, dob => $owner->{dob}), 409, 'E_BVN_IN_USE',
    "another customer's BVN with its record");
is(bvn_post($h)->code, 200, 'verified');
assert_error(bvn_post($h, bvn => $owner->{bvn}), 409, 'E_ALREADY_VERIFIED',
    'verified with another BVN: 409, not counted');
is(count_of($h), '', 'a 409 counts nothing');

# --- a short window (/short/onboarding/bvn, 2 per 2 s) ends in real time ---------------------
my $w = verifiable();
for my $i (1 .. 2) {
    my $r = bvn_post($w, dob => '1970-01-01', path => '/short/onboarding/bvn');
    is($r->code, 422, "short window: failure $i");
    is($r->header('X-RateLimit-Limit'), 2, "short window: failure $i: X-RateLimit-Limit 2");
}
is_bvn_429(bvn_post($w, path => '/short/onboarding/bvn'), 'short window: right BVN', 2, 2);
select undef, undef, undef, 2.2;
my $again = bvn_post($w, path => '/short/onboarding/bvn');
is($again->code, 200, 'short window: after 2 s the right BVN verifies') or diag($again->content);

# --- a mismatch prunes counts whose window started over a day ago ------------------------------
my $ghost = uuid4();
db_exec("INSERT INTO throttle_counts (scope, subject, failures, window_start)"
      . " VALUES ('bvn', '$ghost', 3, '${\ iso_ago(2 * 86400)}')");
is_mismatch(bvn_post(verifiable(), dob => '1970-01-01'), 'a mismatch', 4);
is(db_value("SELECT count(*) FROM throttle_counts WHERE subject = '$ghost'"), 0,
    'a mismatch prunes BVN counts expired for a day');

# --- concurrent wrong attempts: exactly five 422s ---------------------------------------------
my $server = main_server();
my $x = verifiable();
my @res = concurrent(map { [$server, bvn_req($x, dob => '1970-01-01')] } 1 .. 12);
my %n;
$n{ $_->code }++ for @res;
is($n{422} // 0, 5, 'twelve wrong attempts at once: five 422s') or diag(join ',', %n);
is($n{429} // 0, 7, 'twelve wrong attempts at once: seven 429s');
is(count_of($x) >= 5 ? 1 : 0, 1, 'the count reached the limit');

# --- the right BVN hidden among wrong ones, past the limit: nothing verified ------------------
# $x is at the limit: eleven wrong attempts and the right one at once are all 429, the right
# one opens no account and clears nothing (its clear would be rolled back with its refusal).
my @mixed = map { [$server, bvn_req($x, dob => '1970-01-01')] } 1 .. 11;
splice @mixed, 5, 0, [$server, bvn_req($x)];
my @res2 = concurrent(@mixed);
my %m;
$m{ $_->code }++ for @res2;
is($m{429} // 0, 12, 'past the limit, the right BVN among eleven wrong ones at once: all 429')
  or diag(join ',', %m);
is_bvn_429($res2[5], 'the right BVN in the crowd', 5, 86400);
is(db_value("SELECT count(*) FROM accounts WHERE customer_id = '$x->{c}{id}'"), 0,
    'no account opened for the right BVN refused with 429');
is(count_of($x) >= 5 ? 1 : 0, 1, 'the count was not cleared by the right BVN refused with 429');
is(bvn_post($x)->code, 429, 'and the right BVN alone is still 429 afterwards');

done_testing();
