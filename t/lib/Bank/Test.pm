package Bank::Test;
# Helpers for the mod_bank suite: requests with JSON bodies, error checks (docs/api.md), and the
# operator tool (bankctl) against the database the test server uses.
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use JSON::PP ();
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Time::Local qw(timegm_modern);
use IO::Socket::INET ();
use HTTP::Response ();
use Bank::OpenAPI ();    # every answer checked against docs/openapi.yaml

our @EXPORT = qw(json_request decode_body assert_error bankctl new_customer issue_token
  db_exec db_value db_bool db_time unique uuid4 error_log_since error_log_mark);
our @EXPORT_OK = qw(slurp spew free_port httpd_binary modules_dir http09_refused httpd_errors_json raw
  runs_processes mpm_block unweighable token_id db_wait);

# Why a server's session cannot be given a CPU weight here (docs/deployment.md, "The server's
# share of the CPUs"), or '' if it can: a kernel without autogroup scheduling, or not root.
sub unweighable {
    my $auto = '/proc/sys/kernel/sched_autogroup_enabled';
    return !(-r $auto && slurp($auto) =~ /^1/) ? 'no autogroup scheduling on this kernel'
      : $> != 0 ? 'weighting a session takes root' : '';
}

# A whole file, and a file written whole.
sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or die "$f: $!";
    local $/;
    return <$fh>;
}

sub spew {
    my ($f, $text) = @_;
    open my $fh, '>', $f or die "$f: $!";
    print $fh $text;
    close $fh or die "$f: $!";
}

# A TCP port on 127.0.0.1 that nothing listens on now.
sub free_port {
    my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1', LocalPort => 0,
        Proto => 'tcp') or die "no free port: $!";
    my $port = $s->sockport;
    close $s;
    return $port;
}

# Over a raw socket (LWP can send neither a broken chunk nor a body that stops half-way):
# sends the request text, then (after $pause seconds, if any) $more; returns the answer
# read until the server closes the connection, as an HTTP::Response.
sub raw {
    my ($hp, $text, %o) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => $hp, Timeout => 10) or die "connect $hp: $!";
    $s->autoflush(1);
    print $s $text;
    if (defined $o{more}) {
        select undef, undef, undef, $o{pause};
        print $s $o{more};
    }
    local $/;
    my $got = <$s> // '';
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $got, 2;
    my $res = HTTP::Response->parse(($head // '') =~ s/\r\n/\n/gr . "\n\n" . ($body // ''));
    return $res;
}

# What host:port answers to $text sent over a raw socket (tls => 1: inside TLS, the
# certificate not checked), as it came.
sub raw_text {
    my ($hostport, $text, %o) = @_;
    my $s = $o{tls}
      ? do {
        require IO::Socket::SSL;
        IO::Socket::SSL->new(PeerAddr => $hostport, Timeout => 30,
            SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_NONE())
          or die "TLS connect $hostport: $! " . IO::Socket::SSL::errstr();
      }
      : IO::Socket::INET->new(PeerAddr => $hostport, Timeout => 30) or die "connect $hostport: $!";
    $s->autoflush(1);
    print $s $text;
    local $/;
    my $got = <$s> // '';
    close $s;
    return $got;
}

# An HTTP/0.9 request (a request line without a version) sent to host:port over a raw
# socket (tls => 1: inside TLS, the certificate not checked): tests that httpd refused it
# (HttpProtocolOptions Require1.0) with a status line, headers and the API's JSON error
# (the host's ErrorDocument lines), rather than answering the bare body HTTP/0.9 gets.
# $name labels.
sub http09_refused {
    my ($hostport, $name, %o) = @_;
    my $got = raw_text($hostport, "GET /misc/payment_banks\r\n\r\n", %o);
    like($got, qr{\AHTTP/1\.[01] 400 }, "$name: HTTP/0.9 answered 400 with a status line")
      or diag($got);
    like($got, qr{\r\n\r\n}, "$name: with headers");
    unlike($got, qr{"banks"}, "$name: no bank list");
    like($got, qr{\r\n\r\n\{"body":null,.*"code":"E_BAD_REQUEST"}s, "$name: the API's JSON error");
}

# The errors httpd raises itself while it reads a request line and headers (CONTRACT C10),
# sent to host:port (tls => 1 as above): each answered with its status in the API's JSON
# error shape (the host's ErrorDocument lines), Content-Type JSON, Connection: close.
sub httpd_errors_json {
    my ($hostport, $name, %o) = @_;
    my $big = 'a' x 9000;
    my @cases = (
        ["GET /$big HTTP/1.1\r\nHost: x\r\n\r\n", 414, 'E_URI_TOO_LONG', 'a URL over LimitRequestLine'],
        ["GET /misc/payment_banks HTTP/1.1\r\nHost: x\r\nX-Big: $big\r\n\r\n", 400, 'E_BAD_REQUEST',
            'a header over LimitRequestFieldSize'],
        ["GET /misc/payment_banks HTTP/1.1\r\nHost: x\r\n" . join('', map { "X-H$_: v\r\n" } 1 .. 200)
              . "\r\n", 400, 'E_BAD_REQUEST', '200 headers'],
        ["POST /auth/sign_in HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
            400, 'E_BAD_REQUEST', 'two Content-Lengths'],
        ["POST /auth/sign_in HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello", 400,
            'E_BAD_REQUEST', 'Content-Length: +5'],
        ["POST /auth/sign_in HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n", 400,
            'E_BAD_REQUEST', 'Transfer-Encoding: xchunked'],
        ["GET /misc/payment_banks HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400, 'E_BAD_REQUEST',
            'a header line without a colon'],
    );
    for my $c (@cases) {
        my ($text, $status, $code, $what) = @$c;
        my $got = raw_text($hostport, $text, %o);
        my ($head, $body) = split /\r\n\r\n/, $got, 2;
        like($head // '', qr{\AHTTP/1\.1 $status }, "$name, $what: $status") or diag($got);
        like($head // '', qr{^Content-Type: application/json; charset=utf-8\r?$}mi,
            "$name, $what: JSON");
        like($head // '', qr{^Connection: close\r?$}mi, "$name, $what: Connection: close");
        my $d = eval { JSON::PP->new->decode($body // '') } || {};
        is($d->{code}, $code, "$name, $what: code $code");
        ok(exists $d->{body} && !defined $d->{body} && length($d->{message} // ''),
            "$name, $what: the error shape");
    }
}

my $json = JSON::PP->new->canonical;
my $seq  = 0;

# A string unique to this run and call, for e-mails and references.
sub unique { return sprintf '%d%d%04d', time, $$, $seq++ }

# (method, path, headers => {...}, body => ref|string, content_type => ..., ua => LWP agent)
# path may be a full URL (another server).
sub json_request {
    my ($method, $path, %o) = @_;
    my %h = %{ $o{headers} || {} };
    my @args;
    if (exists $o{body}) {
        my $b = ref $o{body} ? $json->encode($o{body}) : $o{body};
        $h{'Content-Type'} = exists $o{content_type} ? $o{content_type} : 'application/json'
          unless exists $h{'Content-Type'};
        delete $h{'Content-Type'} unless defined $h{'Content-Type'};
        push @args, content => $b;
    }
    require HTTP::Request;
    my $req = HTTP::Request->new($method, Apache::TestRequest::resolve_url($path), [%h],
        @args ? $args[1] : undef);
    $req->header('Content-Length' => length $args[1]) if @args && !$o{chunked};
    return ($o{ua} || Apache::TestRequest::user_agent())->request($req);
}

sub decode_body {
    my ($res) = @_;
    my $d = eval { $json->decode($res->content) };
    return $d;
}

# Checks an error answer against the error shape of docs/api.md and returns the decoded body.
sub assert_error {
    my ($res, $status, $code, $name) = @_;
    $name ||= "$status $code";
    is($res->code, $status, "$name: status");
    like($res->header('Content-Type') || '', qr{^application/json; charset=utf-8$}i,
        "$name: content type");
    my $d = decode_body($res);
    ok($d && ref $d eq 'HASH', "$name: JSON object body") or diag($res->content);
    $d ||= {};
    ok(exists $d->{body} && !defined $d->{body}, "$name: body is null");
    is($d->{code}, $code, "$name: code");
    ok(defined $d->{message} && length $d->{message}, "$name: message");
    ok(ref $d->{errors} eq 'ARRAY' && @{ $d->{errors} } >= 1
          && !grep({ !defined $_->{message} } @{ $d->{errors} }),
        "$name: errors[] with messages");
    return $d;
}

# Runs bankctl on the test database; returns its stdout (trimmed). Dies on failure unless
# called in list context, which returns (exit code, stdout, stderr).
sub bankctl {
    my @args = @_;
    my $cmd  = join ' ', $ENV{BANK_CTL}, map { _q($_) } @args;
    my $errf = "$ENV{BANK_TEST_ROOT}/bankctl.err.$$";
    my $out  = `$cmd 2>$errf`;
    my $rc   = $? >> 8;
    my $err  = do { local (@ARGV, $/) = $errf; <> } // '';
    unlink $errf;
    chomp $out;
    return ($rc, $out, $err) if wantarray;
    die "bankctl @args[0,1] failed ($rc): $err" if $rc;
    return $out;
}

# A random RFC 4122 version 4 UUID (test data only).
sub uuid4 {
    my @b = map { int rand 256 } 1 .. 16;
    $b[6] = ($b[6] & 0x0f) | 0x40;
    $b[8] = ($b[8] & 0x3f) | 0x80;
    my $h = join '', map { sprintf '%02x', $_ } @b;
    return join '-', substr($h, 0, 8), substr($h, 8, 4), substr($h, 12, 4), substr($h, 16, 4),
      substr($h, 20);
}

sub _q { my $s = shift; $s =~ s/'/'\\''/g; return "'$s'" }

# A fresh customer; returns a hash with id, email, password, first, last, phone.
sub new_customer {
    my (%o) = @_;
    my $u = unique();
    my %c = (
        email    => $o{email}    // "cust$u\@example.com",
        password => $o{password} // "pw-$u-secret",
        first    => $o{first}    // 'Ada',
        last     => $o{last}     // 'Obi',
        phone    => $o{phone}    // '+2348012345678',
    );
    $c{id} = bankctl('customer', 'add', '--email', $c{email}, '--password', $c{password},
        '--first', $c{first}, '--last', $c{last}, '--phone', $c{phone});
    return \%c;
}

sub issue_token {
    my ($email, @opts) = @_;
    return bankctl('token', 'issue', '--email', $email, @opts);
}

# A bearer token's row id (oat_<base64url of the id>.<secret>).
sub token_id {
    my ($t) = @_;
    my ($b) = $t =~ /^oat_([^.]+)\./ or return undef;
    $b =~ tr{-_}{+/};
    require MIME::Base64;
    return MIME::Base64::decode_base64($b . '=' x ((4 - length($b) % 4) % 4));
}

# Polls the boolean query $sql (db_bool) for up to $secs seconds: 1 once it is true, else 0.
sub db_wait {
    my ($secs, $sql) = @_;
    my $end = time + $secs;
    while (1) {
        return 1 if db_bool($sql);
        return 0 if time > $end;
        select undef, undef, undef, 0.1;
    }
}

# Runs SQL on the test database with the driver's own client (test set-up only).
sub db_exec {
    my ($sql) = @_;
    my $runas = $> == 0 ? 'runuser -u nobody -- ' : '';
    my $out;
    if ($ENV{BANK_DBDRIVER} eq 'sqlite3') {
        $out = `${runas}sqlite3 -cmd '.timeout 10000' $ENV{BANK_DBPARAMS} ${\ _q($sql)}`;
    } else {
        my $psql = $ENV{BANK_PSQL} // 'psql';
        $out = `$psql -X -q -t -A -v ON_ERROR_STOP=1 ${\ _q($ENV{BANK_PSQL_URL})} -c ${\ _q($sql)}`;
    }
    die "db_exec failed: $sql" if $?;
    chomp $out;
    return $out;
}
sub db_value { return db_exec(@_) }

# A boolean query result as 1 or 0 on both drivers (SQLite prints 1/0, psql t/f), undef for
# NULL or no row.
sub db_bool {
    my $v = db_exec(@_);
    return undef if $v eq '';
    return $v =~ /^(1|t|true)$/ ? 1 : $v =~ /^(0|f|false)$/ ? 0 : die "db_bool: not a boolean: $v";
}

# One timestamp read from the database (a query giving one value) in the API's form,
# 2026-11-22T07:40:22.123Z, to compare with answers and, as text, with other such values.
# SQLite: the stored text as it is, not normalised: the module stores that form and its SQL
# compares timestamps as text there. PostgreSQL: psql prints a timestamptz in its session
# TimeZone ('2026-11-22 04:10:22.123-03:30'); that instant in UTC with milliseconds. Kept as
# printed (so it fails a comparison with the API's form): NULL or no row (''), text that is
# no timestamptz, and a value with digits below the millisecond, which the API cannot show.
sub db_time {
    my $v = db_exec(@_);
    return $v if $ENV{BANK_DBDRIVER} eq 'sqlite3';
    my ($y, $mo, $d, $h, $mi, $s, $frac, $sign, $oh, $om, $os) = $v =~ /^(\d{4})-(\d\d)-(\d\d)
      [ ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?\z/x
      or return $v;
    $frac = ($frac // '') . '000';
    return $v if substr($frac, 3) =~ /[1-9]/;
    my $offset = ($sign eq '-' ? -1 : 1) * ($oh * 3600 + ($om // 0) * 60 + ($os // 0));
    my @g = gmtime(timegm_modern($s, $mi, $h, $d, $mo - 1, $y) - $offset);
    return sprintf '%04d-%02d-%02dT%02d:%02d:%02d.%sZ', $g[5] + 1900, $g[4] + 1, @g[3, 2, 1, 0],
      substr($frac, 0, 3);
}

# Error log position, and what was logged after it (for "logged why" checks).
sub error_log_mark {
    my $f = Apache::Test::vars('serverroot') . '/logs/error_log';
    return -s $f || 0;
}

sub error_log_since {
    my ($mark) = @_;
    my $f = Apache::Test::vars('serverroot') . '/logs/error_log';
    open my $fh, '<', $f or return '';
    seek $fh, $mark, 0;
    local $/;
    return <$fh> // '';
}


# The httpd binary and its modules directory as the build found them: Apache::Test's httpd
# (APACHE_TEST_HTTPD) and the LIBEXECDIR of the apxs scripts/run-tests found
# (APACHE_TEST_APXS), not one distribution's paths.
sub httpd_binary {
    return Apache::Test::vars('httpd') || die 'no httpd configured';
}

sub modules_dir {
    my $apxs = $ENV{APACHE_TEST_APXS} || die 'no apxs (APACHE_TEST_APXS: scripts/run-tests)';
    chomp(my $dir = `$apxs -q LIBEXECDIR`);
    die 'apxs -q LIBEXECDIR gave nothing' unless $dir;
    return $dir;
}


# Passes if httpd runs $procs children of $threads threads or more: the children of the
# parent $ppid, or of the pid a code ref returns (a pid file is written after the port
# answers); waits up to 5 s for them (children start their threads within a moment).
sub runs_processes {
    my ($ppid, $procs, $threads, $what) = @_;
    my @t;
    return fail("$what: how many processes of how many threads is not known")
      unless $procs && $threads;
    for (1 .. 50) {
        my $p = ref $ppid ? $ppid->() : $ppid;
        @t = $p ? map { scalar(() = glob("/proc/$_/task/*")) } split ' ', `ps -o pid= --ppid $p` : ();
        last if grep({ $_ >= $threads } @t) == $procs;
        select undef, undef, undef, 0.1;
    }
    return is(scalar(grep { $_ >= $threads } @t), $procs,
        "$what: $procs processes of at least $threads threads (threads: @t)");
}

# StartServers and ThreadsPerChild of a configuration's <IfModule mpm_NAME_module> block (an
# empty list without one).
sub mpm_block {
    my ($conf, $mpm) = @_;
    my ($block) = $conf =~ /^<IfModule mpm_\Q$mpm\E_module>\n(.*?)^<\/IfModule>/ms;
    return ($block // '') =~ /^\s*(StartServers|ThreadsPerChild)\s+(\d+)\s*$/mg;
}

1;
