# Answers httpd gives itself on the API's host, in the API's JSON error shape through the
# ErrorDocument lines of conf/bank.conf (docs/deployment.md): a malformed chunked body
# (400), a stalled body or stalled headers (408, mod_reqtimeout), a chunked body over
# LimitRequestBody (413), a URL too long (414), malformed, oversized or too many headers,
# two Content-Lengths, a signed one, an unknown Transfer-Encoding (400).
# And TRACE, which would echo the Authorization header, is off; HTTP/0.9, which would be
# answered with a bare body, is refused.
# Raw sockets: LWP can send neither a broken chunk nor a body that stops half-way.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use HTTP::Response ();
use IO::Socket::INET ();
use Time::HiRes qw(time);
use Bank::Test qw(:DEFAULT raw);
use Bank::Webhook;

my $hostport = Apache::TestRequest::hostport();
Apache::TestRequest::module('bank_slow');
my $slow_hostport = Apache::TestRequest::hostport();
Apache::TestRequest::module('default');

sub post_head {
    my ($path, @h) = @_;
    return join "\r\n", "POST $path HTTP/1.1", "Host: $hostport",
      "Authorization: Bearer $Bank::Webhook::SECRET_NEW", 'Content-Type: application/json', @h,
      '', '';
}

sub headers_ok {
    my ($res, $name) = @_;
    is($res->header('Connection') // '', 'close', "$name: Connection: close");
    is($res->header('Cache-Control') // '', 'no-store', "$name: Cache-Control: no-store");
    is($res->header('X-Content-Type-Options') // '', 'nosniff', "$name: nosniff");
    is($res->header('Content-Length') // '', length($res->content), "$name: Content-Length");
    my @types = $res->header('Content-Type');
    is(scalar @types, 1, "$name: one Content-Type");
}

# --- 413: a chunked body crossing LimitRequestBody (300 bytes at /limited/webhook) ----------
{
    my $n    = notice(narration => 'x' x 600);
    my $text = notice_json($n);
    my $res  = raw($hostport,
        post_head('/limited/webhook', 'Transfer-Encoding: chunked')
          . sprintf("%x\r\n%s\r\n0\r\n\r\n", length $text, $text));
    my $d = assert_error($res, 413, 'E_PAYLOAD_TOO_LARGE', 'chunked over LimitRequestBody');
    headers_ok($res, 'chunked over LimitRequestBody');
    is_deeply([map { $_->{message} } @{ $d->{errors} || [] }], [$d->{message}],
        'chunked over LimitRequestBody: one entry with the message');
    is(stored_count($n->{data}{transactionReference}), 0,
        'chunked over LimitRequestBody: nothing stored');
}

# --- 400: a malformed chunked body, at the Location conf/bank.conf maps -------------------
for my $bad ("zz\r\n{}\r\n0\r\n\r\n", "5\r\n{}\r\n0\r\n\r\n") {
    my $res = raw($hostport, post_head('/webhook/partner', 'Transfer-Encoding: chunked') . $bad);
    my $name = 'malformed chunk ' . ($bad =~ /^zz/ ? 'size' : 'data');
    assert_error($res, 400, 'E_BAD_REQUEST', $name);
    headers_ok($res, $name);
}

# --- 408: a body that stops half-way (RequestReadTimeout body=1 on bank_slow) -------------
{
    my $n     = notice();
    my $text  = notice_json($n);
    my $start = time;
    my $res   = raw($slow_hostport,
        post_head('/webhook/partner', 'Content-Length: ' . length $text)
          . substr($text, 0, 20));
    my $took = time - $start;
    assert_error($res, 408, 'E_REQUEST_TIMEOUT', 'stalled body');
    headers_ok($res, 'stalled body');
    cmp_ok($took, '>=', 0.9, 'stalled body: answered at the one-second time-out');
    cmp_ok($took, '<', 8, 'stalled body: not much later');
    is(stored_count($n->{data}{transactionReference}), 0, 'stalled body: nothing stored');
    # the same server answers a body that arrives in time
    my $n2 = notice();
    my $t2 = notice_json($n2);
    my $ok = raw($slow_hostport,
        post_head('/webhook/partner', 'Content-Length: ' . length $t2, 'Connection: close')
          . substr($t2, 0, 10),
        pause => 0.2, more => substr($t2, 10));
    is($ok->code, 200, 'body within the time-out: 200');
}

# --- the ErrorDocument target asked for directly -----------------------------------------
{
    my $res = raw($hostport, "GET /_bank/error HTTP/1.1\r\nHost: $hostport\r\nConnection: close\r\n\r\n");
    assert_error($res, 404, 'E_ROUTE_NOT_FOUND', 'error document asked for directly');
}

# --- HTTP/0.9 is refused (HttpProtocolOptions Require1.0) ----------------------------------
Bank::Test::http09_refused($hostport, 'test server');

# --- httpd's errors while it reads the request line and headers, in the API's shape -------
Bank::Test::httpd_errors_json($hostport, 'test server');

# --- 408: headers that stop half-way (RequestReadTimeout header=1 on bank_slow) -----------
{
    my $start = time;
    my $res   = raw($slow_hostport, "GET /misc/payment_banks HTTP/1.1\r\nHost: $slow_hostport\r\n");
    my $took  = time - $start;
    assert_error($res, 408, 'E_REQUEST_TIMEOUT', 'stalled headers');
    headers_ok($res, 'stalled headers');
    cmp_ok($took, '>=', 0.9, 'stalled headers: answered at the one-second time-out');
    cmp_ok($took, '<', 8, 'stalled headers: not much later');
}

# --- TRACE is off (TraceEnable off), so no header is echoed -------------------------------
for my $path ('/webhook/partner', '/auth/sign_in') {
    my $res = raw($hostport,
        "TRACE $path HTTP/1.1\r\nHost: $hostport\r\nAuthorization: Bearer trace-secret-42\r\n"
          . "Connection: close\r\n\r\n");
    is($res->code, 405, "TRACE $path: 405");
    unlike($res->as_string, qr/trace-secret-42/, "TRACE $path: the Authorization header is not echoed");
}

done_testing();
