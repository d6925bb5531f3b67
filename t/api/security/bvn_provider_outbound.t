# Calls to the identity provider (docs/identity.md): a 400 or 404 that does not say "BVN not
# found" (a wrong base URL, a malformed request) is a 503 that counts nothing against the
# customer; proxies come from BankBvnProviderProxy only, never from httpd's environment
# (http_proxy, ALL_PROXY...); every call is counted in bank_idp_calls_total{provider,outcome}.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use IO::Socket::INET ();
use IO::Select ();
use Bank::Test;
use Bank::BvnTest;
use Bank::Servers qw(main_server start_server);

my $dir  = $ENV{BANK_TEST_ROOT};
my $mark = error_log_mark();

sub fake_identity {
    my ($v) = @_;
    open my $f, '>', "$dir/fake-ids/$v->{bvn}" or die "fake-ids: $!";
    print $f "Ada||Obi|$v->{dob}\n";
    close $f;
}

sub throttle_count {
    my ($v) = @_;
    return db_value("SELECT COALESCE((SELECT failures FROM throttle_counts WHERE scope = 'bvn'"
          . " AND subject = '$v->{c}{id}'), 0)");
}

# bank_idp_calls_total{provider="dojah",outcome=...} as the server counts it now.
sub calls {
    my ($outcome, $server) = @_;
    my $res = $server ? $server->request(GET => '/metrics') : json_request(GET => '/metrics');
    die 'no metrics: ' . $res->code unless $res->code == 200;
    return $res->content =~ /^bank_idp_calls_total\{provider="dojah",outcome="\Q$outcome\E"\} (\d+)$/m
      ? $1 : die "no bank_idp_calls_total for $outcome";
}

# --- a wrong base URL, a request the provider calls malformed: 503, nothing counted --------
for my $case (['wrongpath', 'the fake provider\'s own 404 (no such endpoint)'],
    ['nowhere', 'httpd\'s HTML 404 page'], ['e400', 'the provider\'s 400 "malformed request"']) {
    my ($loc, $what) = @$case;
    my $v      = verifiable(no_record => 1);
    my $before = calls('unavailable');
    fake_identity($v);
    for my $try (1, 2) {
        my $res = bvn_post($v, path => "/dojah/$loc/onboarding/bvn");
        assert_error($res, 503, 'E_UNAVAILABLE', "$what, try $try");
        is($res->header('Retry-After'), '30', "$what, try $try: Retry-After 30");
        ok(!defined $res->header('X-RateLimit-Remaining'),
            "$what, try $try: no X-RateLimit-Remaining (nothing counted)");
    }
    is(throttle_count($v), 0, "$what: no attempt of the customer counted");
    is(customer_row($v->{c}{id}), '|', "$what: customer unchanged");
    is(calls('unavailable'), $before + 2, "$what: both calls counted as unavailable");
    my $ok = bvn_post($v, path => '/dojah/onboarding/bvn');
    is($ok->code, 200, "$what: the right base URL then verifies the customer")
      or diag($ok->content);
}
like(error_log_since($mark), qr/BANK1008: identity provider dojah at \S+\/fake\/ok\/v0 unavailable: the provider answered HTTP 404 without saying "BVN not found"/,
    'the wrong base URL is logged (BANK1008) with the status');
like(error_log_since($mark), qr/BANK1008: identity provider dojah at \S+\/fake\/e400 unavailable: the provider answered HTTP 400 without saying "BVN not found"/,
    'the malformed request is logged (BANK1008) with the status');

# --- a clear "BVN not found" is still a mismatch, counted --------------------------------------
{
    my $v      = verifiable(no_record => 1);
    my $before = calls('mismatch');
    my $res    = bvn_post($v, path => '/dojah/onboarding/bvn');
    assert_error($res, 422, 'E_VALIDATION_ERROR', 'Dojah 404 "BVN not found"');
    is($res->header('X-RateLimit-Remaining'), '4', '"BVN not found": counted (4 left)');
    is(throttle_count($v), 1, '"BVN not found": one failure counted');
    is(calls('mismatch'), $before + 1, '"BVN not found": counted as a mismatch call');
}

# --- a match is counted ---------------------------------------------------------------------
{
    my $v      = verifiable(no_record => 1);
    my $before = calls('match');
    fake_identity($v);
    is(bvn_post($v, path => '/dojah/onboarding/bvn')->code, 200, 'a match: 200');
    is(calls('match'), $before + 1, 'a match: counted as a match call');
    my $again = calls('match');
    is(bvn_post($v, path => '/dojah/onboarding/bvn')->code, 200, 'a repeat: 200');
    is(calls('match'), $again, 'a repeat (no call): nothing counted');
}

# --- refused credentials are counted as refused ------------------------------------------------
{
    my $v      = verifiable(no_record => 1);
    my $before = calls('refused');
    assert_error(bvn_post($v, path => '/dojah/refused/onboarding/bvn'), 503, 'E_UNAVAILABLE',
        'refused credentials');
    is(calls('refused'), $before + 1, 'refused credentials: counted as refused');
}

# --- a named proxy is used --------------------------------------------------------------------
{
    my $v = verifiable(no_record => 1);
    fake_identity($v);
    my $res = bvn_post($v, path => '/dojah/proxied/onboarding/bvn');
    assert_error($res, 503, 'E_UNAVAILABLE', 'BankBvnProviderProxy where nothing listens');
    is(throttle_count($v), 0, 'the proxy failed: nothing counted');
    like(error_log_since($mark), qr/BANK1008: identity provider dojah at \S+ unavailable: no answer: Couldn't connect/,
        'the call went to the proxy, which refused the connection (BANK1008)');
}

# --- the environment's proxies are ignored ------------------------------------------------------
# A server whose environment names a proxy for every scheme: a listening socket of the test's
# own, so any connection to it is seen.
{
    my $trap = IO::Socket::INET->new(Listen => 16, LocalAddr => '127.0.0.1', LocalPort => 0,
        Proto => 'tcp', ReuseAddr => 1) or die "listen: $!";
    my $proxy = 'http://127.0.0.1:' . $trap->sockport;
    my $two;
    {
        local @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY ALL_PROXY all_proxy)} =
          ($proxy) x 6;
        local @ENV{qw(no_proxy NO_PROXY)} = ('', '');
        $two = start_server();
    }
    my $v = verifiable(no_record => 1);
    fake_identity($v);
    my $res = $two->request(bvn_req($v, path => '/dojah/onboarding/bvn'));
    is($res->code, 200, 'http_proxy, ALL_PROXY... in httpd\'s environment: the provider is '
          . 'called directly and verifies') or diag($res->content);
    ok(!IO::Select->new($trap)->can_read(0.2), 'nothing connected to the environment\'s proxy');
    $two->stop;
}

done_testing();
