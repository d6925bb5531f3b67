# POST /onboarding/bvn verified by an identity provider (issue 12, docs/identity.md): Dojah's
# and Prembly's dialects against the fake provider the test httpd serves (t/fake/idp.cgi),
# every outcome: match (one account, the record kept, a repeat without a second call), each
# kind of mismatch and "not found" (the one bvn_mismatch 422, counted by BankBvnThrottle),
# and every failure (503 with Retry-After, nothing written, nothing counted), the circuit
# breaker, concurrent requests, and nothing personal or secret in the error log.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Time::HiRes ();
use IO::Socket::INET ();
use POSIX ();
use JSON::PP ();
use Bank::Test qw(:DEFAULT free_port);
use Bank::BvnTest;
use Bank::Servers qw(main_server concurrent);

my $mark = error_log_mark();
my $dir  = $ENV{BANK_TEST_ROOT};

# The identity the fake provider holds for a BVN.
sub fake_identity {
    my ($bvn, $first, $middle, $last, $dob) = @_;
    open my $f, '>', "$dir/fake-ids/$bvn" or die "fake-ids: $!";
    print $f "$first|$middle|$last|$dob\n";
    close $f;
}

# Calls the fake provider received in behaviour $mode.
sub hits {
    my ($mode) = @_;
    open my $f, '<', "$dir/fake-hits" or die "fake-hits: $!";
    return scalar grep { /^\Q$mode\E / } <$f>;
}

sub throttle_count {
    my ($v) = @_;
    return db_value("SELECT COALESCE((SELECT failures FROM throttle_counts WHERE scope = 'bvn'"
          . " AND subject = '$v->{c}{id}'), 0)");
}

# The kept record, decrypted by bankctl (the database holds it encrypted, docs/security.md).
sub record_row {
    my ($bvn) = @_;
    my ($rc, $out, $err) = bankctl('bvn', 'show', '--bvn', $bvn);
    return $err =~ /no record of that BVN/ ? '' : "bankctl failed: $err" if $rc;
    my $r = JSON::PP::decode_json($out);
    return join '|', @$r{qw(firstName lastName dateOfBirth source)}, $r->{phone} // 'no phone',
      $r->{checked} ? 'checked' : 'unchecked';
}

# A customer Ada Obi with a token and no identity record; the provider knows them unless
# told otherwise (%o: first, middle, last, dob of the provider's identity; none => 1).
sub provider_customer {
    my (%o) = @_;
    my $v = verifiable(no_record => 1);
    fake_identity($v->{bvn}, $o{first} // 'Ada', $o{middle} // '', $o{last} // 'Obi',
        $o{dob} // $v->{dob}) unless $o{none};
    return $v;
}

my $mismatch_body;

# --- matches, then a repeat without a second call --------------------------------------------
for my $case (
    ['dojah',   'Ada', 'Obi', 'ADA OBI'],
    ['prembly', 'OBI', 'ada', 'OBI ADA'],   # either order, any case; the provider's order
) {
    my ($p, $first, $last, $name) = @$case;
    my $v    = provider_customer(first => $first, last => $last, middle => 'Ngozi');
    my $hits = hits('ok');
    my $res  = bvn_post($v, path => "/$p/onboarding/bvn");
    is($res->code, 200, "$p match: 200") or diag($res->content);
    my $d = decode_body($res) || {};
    is($d->{message}, 'BVN verified successfully', "$p match: first success");
    is($d->{body}{customer}{bvn}, $v->{bvn}, "$p match: the customer holds the BVN");
    is($d->{body}{customer}{account}{details}{accountName}, $name, "$p match: account name");
    is(hits('ok'), $hits + 1, "$p match: one call to the provider");
    is(account_count($v->{c}{id}), 1, "$p match: one account");
    my $keep_first = $p eq 'dojah' ? 'Ada' : 'OBI';
    my $keep_last  = $p eq 'dojah' ? 'Obi' : 'ada';
    is(record_row($v->{bvn}), "$keep_first|$keep_last|$v->{dob}|$p|no phone|checked",
        "$p match: names, date, source and check time kept, nothing else");

    my $again = bvn_post($v, path => "/$p/onboarding/bvn");
    is($again->code, 200, "$p repeat: 200");
    is((decode_body($again) || {})->{message}, 'BVN already verified', "$p repeat: already verified");
    is((decode_body($again) || {})->{body}{customer}{account}{accountId},
        $d->{body}{customer}{account}{accountId}, "$p repeat: the same account");
    is(hits('ok'), $hits + 1, "$p repeat: no second call to the provider");
    my $wrong = bvn_post($v, path => "/$p/onboarding/bvn", dob => '1970-01-01');
    assert_error($wrong, 422, 'E_VALIDATION_ERROR', "$p repeat with another date");
    is(hits('ok'), $hits + 1, "$p repeat with another date: judged on the kept record");

    # Another customer with this BVN: 409 only when the kept record matches, no call.
    my $other = verifiable(no_record => 1, bvn => $v->{bvn});
    assert_error(bvn_post($other, path => "/$p/onboarding/bvn"), 409, 'E_BVN_IN_USE',
        "$p: BVN of another customer");
    is(hits('ok'), $hits + 1, "$p: BVN of another customer judged without a call");
}

# --- every mismatch is the one 422, counted -----------------------------------------------------
for my $p (qw(dojah prembly)) {
    my @cases = (
        ['another date of birth', provider_customer(dob => '1980-02-29')],
        ['another first name',    provider_customer(first => 'Chinedu')],
        ['another last name',     provider_customer(last => 'Okafor')],
        ['an unknown BVN',        provider_customer(none => 1)],
    );
    for my $c (@cases) {
        my ($what, $v) = @$c;
        my $hits = hits('ok');
        my $res  = bvn_post($v, path => "/$p/onboarding/bvn");
        my $e    = assert_error($res, 422, 'E_VALIDATION_ERROR', "$p, $what");
        is_deeply([map { [$_->{field}, $_->{rule}] } @{ $e->{errors} }],
            [['bvn_number', 'bvn_mismatch']], "$p, $what: the one bvn_mismatch entry");
        $mismatch_body //= $res->content;
        is($res->content, $mismatch_body, "$p, $what: the same bytes as every mismatch");
        is($res->header('X-RateLimit-Remaining'), 4, "$p, $what: counted (4 left)");
        is(throttle_count($v), 1, "$p, $what: one failure in throttle_counts");
        is(hits('ok'), $hits + 1, "$p, $what: one call");
        is(customer_row($v->{c}{id}), '|', "$p, $what: customer unchanged");
        is(account_count($v->{c}{id}), 0, "$p, $what: no account");
        is(record_row($v->{bvn}), '', "$p, $what: nothing kept");
    }
}

# Past BankBvnThrottle the provider is not asked at all.
{
    my $v = provider_customer(none => 1);
    bvn_post($v, path => '/dojah/onboarding/bvn') for 1 .. 5;
    my $hits = hits('ok');
    my $res  = bvn_post($v, path => '/dojah/onboarding/bvn');
    assert_error($res, 429, 'E_TOO_MANY_REQUESTS', 'throttled');
    ok($res->header('Retry-After'), 'throttled: Retry-After');
    is(hits('ok'), $hits, 'throttled: no call to the provider');
}

# --- every failure: 503 with Retry-After, nothing written, nothing counted --------------------
my @failures = (
    ['e500',      'answers 500'],
    ['slow',      'slow past BankBvnProviderTimeout'],
    ['malformed', 'malformed JSON'],
    ['oversized', 'an oversized answer'],
    ['refused',   'refuses the credentials'],
);
for my $p (qw(dojah prembly)) {
    for my $f (@failures, $p eq 'dojah' ? (['down', 'down (connection refused)']) : ()) {
        my ($mode, $what) = @$f;
        my $v  = provider_customer();
        my $t0 = Time::HiRes::time();
        my $res = bvn_post($v, path => "/$p/$mode/onboarding/bvn");
        my $took = Time::HiRes::time() - $t0;
        my $e = assert_error($res, 503, 'E_UNAVAILABLE', "$p $what");
        is($res->header('Retry-After'), 30, "$p $what: Retry-After 30");
        is(customer_row($v->{c}{id}), '|', "$p $what: customer unchanged");
        is(account_count($v->{c}{id}), 0, "$p $what: no account");
        is(record_row($v->{bvn}), '', "$p $what: nothing kept");
        is(throttle_count($v), 0, "$p $what: not counted as a failure of the customer");
        cmp_ok($took, '<', 2.5, "$p $what: answered within the 1 s timeout and some")
          if $mode eq 'slow';
    }
}

my $log = error_log_since($mark);
like($log, qr/BANK1007: identity provider dojah at http:\/\/127\.0\.0\.1:\d+\/fake\/ok refused/,
    'refused: the error log names the provider');
like($log, qr/BANK1007: .*check BankBvnProviderCredentials/, 'refused: and the directive to check');
like($log, qr/BANK1008: identity provider prembly .* no answer within 1 seconds/,
    'slow: logged as a timeout');
like($log, qr/BANK1008: identity provider dojah .* larger than 524288 bytes/,
    'oversized: logged as such');

# Each call says whether it opened a connection (reuse by one thread: t/unit/test_idp.c).
# Whether this file's calls open one depends on which threads serve them (a thread keeps
# its connection from earlier files' calls), so: every call here says new or reused, and
# the server's log since its start shows a call that opened one (each thread's first).
my @calls = $log =~ /BANK1006: identity provider \w+: matched \(HTTP 200\) in \d+ ms, (\w+) connection/g;
ok(@calls > 0, 'connections: the matched calls are logged');
is(scalar(grep { $_ ne 'new' && $_ ne 'reused' } @calls), 0,
    'connections: each says whether it opened one');
like(error_log_since(0), qr/BANK1006: identity provider (dojah|prembly): matched \(HTTP 200\) in \d+ ms, new connection/,
    'connections: the log says a call opened one');

# --- misconfigured: no credentials ---------------------------------------------------------------
{
    my $v = provider_customer();
    my $res = bvn_post($v, path => '/nocreds/onboarding/bvn');
    assert_error($res, 503, 'E_UNAVAILABLE', 'no credentials');
    like(error_log_since($mark), qr/BANK1003: BankBvnProvider prembly is set here but BankBvnProviderCredentials is not/,
        'no credentials: the log names the misconfiguration');
}

# --- the circuit breaker ------------------------------------------------------------------------
# Shared by the server's processes: after 5 failures in a row the provider is not called for
# 30 s, whichever process the next requests reach (503s close the connection, so they are
# spread over processes).
{
    my @v = map { provider_customer() } 1 .. 6;
    my $res;
    for my $n (1 .. 6) {
        my $before = hits('brk');
        $res = bvn_post($v[$n - 1], path => '/dojah/breaker/onboarding/bvn');
        assert_error($res, 503, 'E_UNAVAILABLE', "breaker: request $n");
        is(hits('brk'), $n < 6 ? $before + 1 : $before,
            $n < 6 ? "breaker: request $n called the provider" : 'breaker: request 6 did not');
    }
    my $ra = $res->header('Retry-After') // 0;
    ok($ra >= 1 && $ra <= 30, "breaker: Retry-After is what is left of 30 s ($ra)");
    my $log = error_log_since($mark);
    like($log, qr/BANK1009: identity provider dojah at \S+\/fake\/brk failed 5 times in a row/,
        'breaker: opening logged');
    like($log, qr/BANK1004: identity provider dojah at \S+\/fake\/brk: circuit breaker open/,
        'breaker: the refused call logged');
    my $health = json_request(GET => '/health');
    is(((decode_body($health) || {})->{body} || {})->{identityProvider}, 'circuit_open',
        'breaker: GET /health says identityProvider circuit_open');
    is($health->code, 200, 'breaker: /health still 200 (the database answers)');
    like(Apache::TestRequest::GET('/metrics')->content, qr/^bank_idp_breaker_open 1$/m, 'breaker: /metrics says it is open');
}

# --- the table, configured back under a provider's Location ------------------------------------
{
    my $v = verifiable();
    my $hits = hits('ok');
    my $res = bvn_post($v, path => '/dojah/table/onboarding/bvn');
    is($res->code, 200, 'BankBvnProvider table: verified against bvn_records');
    is(hits('ok'), $hits, 'BankBvnProvider table: no provider call');
}

# --- concurrent requests for one customer open one account ---------------------------------------
for my $p (qw(dojah prembly)) {
    my $v   = provider_customer();
    my $one = main_server();
    my @res = concurrent(map { [$one, bvn_req($v, path => "/$p/onboarding/bvn")] } 1 .. 8);
    is(scalar(grep { $_->code == 200 } @res), 8, "$p race: all 200")
      or diag(join ' ', map { $_->code } @res);
    my @msg = map { (decode_body($_) || {})->{message} // '' } @res;
    is(scalar(grep { $_ eq 'BVN verified successfully' } @msg), 1, "$p race: one opened it");
    my %acc = map { ((decode_body($_) || {})->{body}{customer}{account}{accountId} // '') => 1 } @res;
    is(scalar keys %acc, 1, "$p race: one account in every answer");
    is(account_count($v->{c}{id}), 1, "$p race: one account in the database");
}

# --- bankctl bvn check: the same client and rules from the command line ----------------------
{
    my $base = 'http://127.0.0.1:' . Apache::Test::vars('port') . '/fake';
    my $v = provider_customer(first => 'OBI', last => 'ada');
    my @who = ('--bvn', $v->{bvn}, '--dob', $v->{dob}, '--first', 'Ada', '--last', 'Obi');
    local $ENV{BANK_BVN_PROVIDER_APP_ID} = 'test-app-id';
    local $ENV{BANK_BVN_PROVIDER_KEY}    = 'test-idp-secret-1';
    for my $p (qw(dojah prembly)) {
        my @out = bankctl('bvn', 'check', @who, '--provider', $p, '--url', "$base/ok");
        is_deeply([@out[0, 1]], [$p eq 'dojah' ? 3 : 0, $p eq 'dojah' ? 'mismatch' : 'match'],
            "bankctl bvn check, $p: the provider's own rules (Dojah's names in order)");
        @out = bankctl('bvn', 'check', @who[0 .. 3], '--first', 'Ada', '--last', 'Okafor',
            '--provider', $p, '--url', "$base/ok");
        is_deeply([@out[0, 1]], [3, 'mismatch'], "bankctl bvn check, $p: mismatch, exit 3");
        @out = bankctl('bvn', 'check', @who, '--provider', $p, '--url', "$base/e500");
        is($out[0], 1, "bankctl bvn check, $p: provider failing, exit 1");
        is($out[1], '', "bankctl bvn check, $p: prints neither match nor mismatch then");
        like($out[2], qr/^bankctl: bvn check: $p at \Q$base\E\/e500: unavailable: the provider answered HTTP 500$/,
            "bankctl bvn check, $p: says why on stderr");
    }
    local $ENV{BANK_BVN_PROVIDER}     = 'dojah';
    local $ENV{BANK_BVN_PROVIDER_URL} = "$base/ok";
    my $w = provider_customer();
    my @out = bankctl('bvn', 'check', '--bvn', $w->{bvn}, '--dob', $w->{dob}, '--first', 'Ada',
        '--last', 'Obi');
    is_deeply([@out[0, 1]], [0, 'match'], 'bankctl bvn check: provider and URL from the environment');
    @out = bankctl('bvn', 'check', '--bvn', $w->{bvn}, '--dob', $w->{dob}, '--first', 'Ada',
        '--last', 'Obi', '--key', 'wrong-idp-secret-9');
    is($out[0], 1, 'bankctl bvn check: refused credentials, exit 1');
    like($out[2], qr/refused: the provider refused the credentials/, 'bankctl bvn check: says so');
    unlike(join('', @out[1, 2]), qr/wrong-idp-secret-9|test-idp-secret-1|\Q$w->{bvn}\E/,
        'bankctl bvn check: never prints the key or the BVN');
    @out = bankctl('bvn', 'check', '--bvn', '123', '--dob', $w->{dob}, '--first', 'A', '--last', 'B');
    is($out[0], 2, 'bankctl bvn check: a bad BVN is a usage error');
    unlike($out[2], qr/123/, 'bankctl bvn check: without repeating it');
    @out = bankctl('bvn', 'check', '--bvn', $w->{bvn}, '--dob', $w->{dob}, '--first', 'A',
        '--last', 'B', '--provider', 'table');
    is($out[0], 2, 'bankctl bvn check: the table is no provider to ask');
    @out = bankctl('bvn', 'check', '--bvn', $w->{bvn}, '--dob', $w->{dob}, '--first', 'A',
        '--last', 'B', '--url', 'http://203.0.113.9');
    is($out[0], 2, 'bankctl bvn check: plain http only to loopback');
}

# --- TLS is verified: a provider with a self-signed certificate is not talked to -------------
{
    my $tls  = "$dir/tls";
    mkdir $tls;
    system("openssl req -x509 -newkey rsa:2048 -nodes -keyout $tls/key.pem -out $tls/cert.pem"
          . " -days 1 -subj /CN=127.0.0.1 >/dev/null 2>&1") == 0 or die 'openssl req failed';
    my $port = free_port();
    my $pid  = fork // die "fork: $!";
    if (!$pid) {
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', '/dev/null';
        exec('openssl', 's_server', '-accept', $port, '-cert', "$tls/cert.pem", '-key',
            "$tls/key.pem", '-www', '-quiet') or POSIX::_exit(1);
    }
    for (1 .. 50) {
        last if IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port");
        select undef, undef, undef, 0.1;
    }
    local $ENV{BANK_BVN_PROVIDER_APP_ID} = 'test-app-id';
    local $ENV{BANK_BVN_PROVIDER_KEY}    = 'test-idp-secret-1';
    my @out = bankctl('bvn', 'check', '--bvn', '22212345678', '--dob', '1990-04-12', '--first',
        'Ada', '--last', 'Obi', '--provider', 'dojah', '--url', "https://127.0.0.1:$port");
    is($out[0], 1, 'TLS: a self-signed provider certificate is refused');
    like($out[2], qr/unavailable: no answer: SSL peer certificate or SSH remote key was not OK/,
        'TLS: because the certificate does not verify');
    kill 'TERM', $pid;
    waitpid $pid, 0;
}

# --- nothing personal or secret in the error log (LogLevel bank:trace8) ---------------------------
$log = error_log_since($mark);
my @leaks = grep { index($log, $_) >= 0 } used_bvns(), 'test-idp-secret-1', 'wrong-idp-secret-9',
  '1980-02-29', '1990-04-12', '12-Apr-1990';
is(scalar @leaks, 0, 'log: no BVN, date of birth or credential in any line')
  or diag("leaked: @leaks");

done_testing();
