# Metrics (docs/operations.md): known traffic, then the exact counts read back from the
# bank-metrics handler (Prometheus text, checked by promtool) and from mod_status's page.
# The counters live in shared memory: the requests below land on any of the test server's
# httpd processes, and one read sees them all.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use File::Temp ();
use LWP::UserAgent ();
use POSIX ();
use Bank::Test;
use Bank::BvnTest qw(verifiable bvn_post next_bvn);
use Bank::Webhook qw(deliver notice);

my $KEY = 'test-client-key-1';

# The samples of the metrics text: "name{labels}" => value.
sub samples {
    my ($text) = @_;
    my %s;
    for (split /\n/, $text) {
        next if /^#/ || !/\S/;
        my ($k, $v) = /^(\S+) (\S+)$/ or die "not a sample line: $_";
        $s{$k} = $v;
    }
    return \%s;
}

sub scrape {
    my $res = GET('/metrics');
    is($res->code, 200, 'GET /metrics') unless $res->code == 200;
    return $res;
}

my %want;    # expected increase per sample, from the traffic below
sub expect { my ($k, $n) = @_; $want{$k} += $n }
sub ep     { my ($e, $n) = @_; expect(qq{bank_request_duration_seconds_count{endpoint="$e"}}, $n) }
sub sign_ins { expect(qq{bank_sign_ins_total{outcome="$_[0]"}}, $_[1]) }
sub bvns     { expect(qq{bank_bvn_verifications_total{outcome="$_[0]"}}, $_[1]) }
sub notices  { expect(qq{bank_notices_total{outcome="$_[0]"}}, $_[1]) }

my $first = scrape();
like($first->header('Content-Type') // '', qr{^text/plain; version=0\.0\.4; charset=utf-8$},
    'Prometheus text exposition format');
my $before = samples($first->content);
for my $name (qw(bank_sign_ins_total bank_bvn_verifications_total bank_notices_total
    bank_db_errors_total bank_request_duration_seconds bank_password_verifications_waiting
    bank_password_verifications_running_max
    bank_bearer_tokens_refused_total bank_unavailable_responses_total bank_server_errors_total
    bank_revocation_feed_last_read_timestamp_seconds bank_revocation_feed_failures_total
    bank_idp_breaker_open)) {
    like($first->content, qr/^# TYPE \Q$name\E (counter|gauge|histogram)$/m, "$name is exposed");
}

# --- sign-in: ok, wrong, throttled, refused client key -----------------------------------------
sub sign_in {
    my ($path, $c, $pw, $key) = @_;
    return json_request('POST', $path, headers => { Authorization => "Bearer $key" },
        body => { email => $c->{email}, password => $pw, deviceToken => 'metrics' });
}
my $a = new_customer();
is(sign_in('/auth/sign_in', $a, $a->{password}, $KEY)->code, 200, 'sign-in ok') for 1 .. 2;
sign_ins(ok => 2);
my $b = new_customer();    # /tight/sign_in: 2 failures per 2 s
is(sign_in('/tight/sign_in', $b, 'wrong', $KEY)->code, 400, 'sign-in wrong') for 1 .. 2;
is(sign_in('/tight/sign_in', $b, 'wrong', $KEY)->code, 429, 'sign-in throttled');
sign_ins(wrong => 2);
sign_ins(throttled => 1);
is(sign_in('/auth/sign_in', $a, $a->{password}, 'not-a-key')->code, 401, 'sign-in refused client key');
sign_ins(refused => 1);
is(json_request('POST', '/auth/sign_in', headers => { Authorization => "Bearer $KEY" }, body => {})->code,
    422, 'a sign-in without fields: no outcome, timed');
ep(sign_in => 7);

# --- bearer tokens refused, sign-out, bank list --------------------------------------------------
my $token = issue_token($a->{email});
is(GET('/misc/payment_banks', Authorization => "Bearer $token")->code, 200, 'bank list');
is(GET('/misc/payment_banks', Authorization => 'Bearer oat_MQ.bm9wZQ')->code, 401, 'bank list: bad token');
is(json_request('POST', '/auth/sign_out')->code, 401, 'sign-out: no token');
is(json_request('POST', '/auth/sign_out', headers => { Authorization => "Bearer $token" })->code, 200,
    'sign-out');
expect('bank_bearer_tokens_refused_total', 2);
ep(banks => 2);
ep(sign_out => 2);

# --- BVN: every outcome -------------------------------------------------------------------------
my $v = verifiable();
is(bvn_post($v, dob => '1991-01-01')->code, 422, 'bvn mismatch');
is(bvn_post($v)->code, 200, 'bvn verified');
is(bvn_post($v)->code, 200, 'bvn repeat');
is(bvn_post($v, bvn => '123')->code, 422, 'bvn invalid');
is(bvn_post($v, bvn => next_bvn())->code, 409, 'bvn: verified with another BVN');
my $w = verifiable(bvn => $v->{bvn}, no_record => 1);
is(bvn_post($w)->code, 409, 'bvn in use');
my $x = verifiable();    # /short/onboarding/bvn: 2 failures per 2 s
is(bvn_post($x, path => '/short/onboarding/bvn', dob => '1991-01-01')->code, 422, 'bvn mismatch')
  for 1 .. 2;
ep(banks => 2);
is(bvn_post($x, path => '/short/onboarding/bvn')->code, 429, 'bvn throttled');
is(bvn_post($x, token => 'oat_MQ.bm9wZQ')->code, 401, 'bvn: bad token');
expect('bank_bearer_tokens_refused_total', 1);
bvns(mismatch => 3);
bvns(verified => 1);
bvns(repeat => 1);
bvns(invalid => 1);
bvns(other_bvn => 1);
bvns(in_use => 1);
bvns(throttled => 1);
ep(bvn => 10);

# --- notices ------------------------------------------------------------------------------------
my $n = notice();
is(deliver($n)->code, 200, 'notice stored');
is(deliver($n)->code, 200, 'notice duplicate');
is(deliver(notice(), secret => 'wrong')->code, 401, 'notice refused: secret');
is(deliver(notice(amount => 'x'))->code, 422, 'notice refused: invalid');
notices(stored => 1);
notices(duplicate => 1);
notices(refused => 2);
is(deliver(notice(), path => '/webhook/nosecret')->code, 503, 'a webhook without secret: 503');
expect('bank_unavailable_responses_total', 1);
expect('bank_server_errors_total{endpoint="webhook"}', 1);
ep(webhook => 5);

# --- database errors and 503s ---------------------------------------------------------------------
Apache::TestRequest::module('bank_nodb');
is(GET('/misc/payment_banks', Authorization => "Bearer $token")->code, 503, 'no database: 503');
Apache::TestRequest::module('default');
expect('bank_db_errors_total', 1);
expect('bank_unavailable_responses_total', 1);
expect('bank_server_errors_total{endpoint="banks"}', 1);
ep(banks => 1);

# --- the revocation feed: a cached Location reads it ------------------------------------------------
my $fed = time;
my $token2 = issue_token($a->{email});
is(GET('/cached60/banks', Authorization => "Bearer $token2")->code, 200, 'bank list, token cache on')
  for 1 .. 2;

# --- read back: exact increases -------------------------------------------------------------------
# A request is counted once its handler has returned, a moment after its answer may have
# reached the client: read until the counts are in (or 5 s), then compare exactly.
my ($after, $text);
for (1 .. 50) {
    $text  = scrape()->content;
    $after = samples($text);
    last unless grep { ($after->{$_} // 0) - ($before->{$_} // 0) < $want{$_} } keys %want;
    select undef, undef, undef, 0.1;
}
for my $k (sort keys %want) {
    is(($after->{$k} // 0) - ($before->{$k} // 0), $want{$k}, "$k: +$want{$k}");
}
for my $k (sort grep { /^bank_(sign_ins|bvn_verifications|notices|server_errors)_total/ } keys %$after) {
    next if exists $want{$k};
    is($after->{$k} - ($before->{$k} // 0), 0, "$k: unchanged");
}
is($after->{bank_password_verifications_waiting}, 0, 'no password verification under way now');
cmp_ok($after->{bank_revocation_feed_last_read_timestamp_seconds}, '>=', $fed - 1,
    'bank_revocation_feed_last_read_timestamp_seconds: read since the cached requests began');
cmp_ok($after->{bank_revocation_feed_last_read_timestamp_seconds}, '<=', time + 1,
    'bank_revocation_feed_last_read_timestamp_seconds: not in the future');
is($after->{bank_revocation_feed_failures_total} - ($before->{bank_revocation_feed_failures_total} // 0),
    0, 'bank_revocation_feed_failures_total: no failed read');
# the breaker (opened in t/api/endpoints/bvn_provider.t): as /health tells it
my $idp = ((decode_body(json_request(GET => '/health')) || {})->{body} || {})->{identityProvider} // '';
is(samples(scrape()->content)->{bank_idp_breaker_open}, $idp eq 'circuit_open' ? 1 : 0,
    "bank_idp_breaker_open: as /health's identityProvider ($idp)");

# The histogram: cumulative buckets, +Inf equal to the count, a sum that grew.
for my $e (qw(sign_in sign_out bvn banks webhook)) {
    my @b = map { $after->{qq{bank_request_duration_seconds_bucket{endpoint="$e",le="$_"}}} }
      qw(0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10 +Inf);
    ok(!grep({ !defined } @b), "$e: all 12 buckets");
    ok(!grep({ $b[$_] < $b[$_ - 1] } 1 .. $#b), "$e: buckets are cumulative");
    is($b[-1], $after->{qq{bank_request_duration_seconds_count{endpoint="$e"}}}, "$e: +Inf is the count");
    cmp_ok($after->{qq{bank_request_duration_seconds_sum{endpoint="$e"}}}, '>',
        $before->{qq{bank_request_duration_seconds_sum{endpoint="$e"}}}, "$e: the sum grew");
}
my $slow = qq{bank_request_duration_seconds_bucket{endpoint="sign_in",le="0.025"}};
ok($after->{$slow} - $before->{$slow} < 7, 'sign-in: not every sign-in under 25 ms (scrypt runs)');

# --- the gauge: password verifications under way while sign-ins run -------------------------
# A child signs in over and over (each spends tens of milliseconds in scrypt); meanwhile the
# gauge is read until it shows one under way.
my $kid = fork // die "fork: $!";
if (!$kid) {
    my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
    for (1 .. 20) {
        json_request('POST', '/auth/sign_in', ua => $ua, headers => { Authorization => "Bearer $KEY" },
            body => { email => $a->{email}, password => $a->{password}, deviceToken => 'gauge' });
    }
    POSIX::_exit(0);
}
my $busy = 0;
for (1 .. 300) {
    my $g = samples(scrape()->content)->{bank_password_verifications_waiting};
    $busy = $g if $g > $busy;
    last if $busy >= 1 || waitpid($kid, POSIX::WNOHANG()) == $kid;
    select undef, undef, undef, 0.01;
}
waitpid $kid, 0;
cmp_ok($busy, '>=', 1, 'bank_password_verifications_waiting counts a verification under way');
my $rest;
for (1 .. 50) {    # the last one ends a moment after its answer
    $rest = samples(scrape()->content)->{bank_password_verifications_waiting};
    last if $rest == 0;
    select undef, undef, undef, 0.1;
}
is($rest, 0, 'and is 0 again once they are done');

# --- promtool accepts the output, and would reject a broken one -------------------------------
sub promtool {
    my ($t) = @_;
    my $f = File::Temp->new;
    print $f $t;
    close $f;
    my $out = `promtool check metrics < $f 2>&1`;
    return ($? >> 8, $out);
}
my ($rc, $out) = promtool($text);
is($rc, 0, 'promtool check metrics: accepted') or diag($out);
is($out, '', 'promtool check metrics: no lint remark') or diag($out);
($rc, $out) = promtool($text . "bank_sign_ins_total{outcome=\"ok\" 1\n");
isnt($rc, 0, 'promtool rejects a broken exposition (the check above can fail)');
($rc, $out) = promtool($text =~ s/bank_db_errors_total/bank_db_errors/gr);
isnt($rc, 0, 'promtool flags a counter without _total');

# --- mod_status's page has the same numbers ---------------------------------------------------------
$after = samples(scrape()->content);    # no traffic from here on
my $auto = GET('/server-status?auto');
is($auto->code, 200, '/server-status?auto');
my $k = 'bank_sign_ins_total{outcome="ok"}';
like($auto->content, qr/^\Q$k\E: $after->{$k}$/m, 'server-status?auto: the sign-in count');
my $html = GET('/server-status');
like($html->content, qr{<h2>mod_bank</h2>}, 'server-status: a mod_bank section');
like($html->content, qr{bank_db_errors_total \Q$after->{bank_db_errors_total}\E}, 'server-status: db errors');

# --- the running version ---------------------------------------------------------------------------
my ($version) = Bank::Test::slurp('include/bank_version.h') =~ /^#define BANK_VERSION "([^"]+)"$/m;
my $metrics = scrape()->content;
like($metrics, qr/^# TYPE bank_build_info gauge$/m, 'bank_build_info: a gauge');
like($metrics, qr/^bank_build_info\{version="\Q$version\E"\} 1$/m,
    "bank_build_info{version=\"$version\"} 1");

# --- mapped by the operator: methods, Require ip ------------------------------------------------------
my $head = Apache::TestRequest::HEAD('/metrics');
is($head->code, 200, 'HEAD /metrics');
is($head->content, '', 'HEAD: no body');
assert_error(json_request('POST', '/metrics', body => {}), 405, 'E_METHOD_NOT_ALLOWED', 'POST /metrics');
is(GET('/metrics-elsewhere')->code, 403, 'Require ip keeps other addresses out (httpd\'s 403)');

done_testing();
