package Bank::Graceful;
# Graceful restarts under load: request loops run against a running httpd while it is
# restarted gracefully (apache2 -k graceful) again and again; every request must be answered
# 200 (no 503, no connection error) and the error log must hold no line at crit or worse
# (AH00636 child init failed), no failed prepare (AH00632) and no "database is locked".
#
#   under_restarts($h, 'what', dir => $dir, token => $token, webhook => '/webhook/load',
#       secret => 'load-test-secret', hmac_header => ..., hmac_key => ...);
#
# $h is a Bank::Docs::Httpd (its base, graceful and log_since). Each loop requests, in turn,
# GET /health, the bank list with the token, a payment notice (a write: a new notice each
# time) and the bank list again. Odd loops open a new connection per request; even loops keep
# theirs alive from request to request (as a partner's client or a load balancer does) and
# pause up to 20 ms between requests, so that restarts find their connections idle as well as
# busy. A kept connection the server has closed is not reused (LWP, like most clients, checks
# that it is not readable first). A request that goes out on a kept connection just as the
# server closes it gets no answer (the keep-alive race); it is sent again once on a new
# connection, as clients do, and counted. Under the worker MPM an answer whose headers were
# made just before the restart's signal still promises keep-alive and the connection is closed
# after it: a request its client sends on it before the close arrives is cut, at most one per
# restart. The event MPM closes idle keep-alive connections at a restart: the options cuts
# (why) and most (how many) say so.
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use Digest::SHA qw(hmac_sha512_hex);
use HTTP::Request ();
use LWP::UserAgent ();
use POSIX ();
use Time::HiRes qw(sleep time);
use Apache::Test qw(-withtestmore);
use Bank::Test qw(slurp spew);
use Bank::Webhook qw(notice notice_json);

our @EXPORT_OK = qw(under_restarts);

# Options: dir (a directory of the test's own), token, webhook (its path), secret,
# hmac_header and hmac_key (a signed webhook), health (its path, /health), loops (8),
# restarts (10), host (a Host header, for a name-based virtual host), cuts (why requests may
# be cut on kept connections, beyond the answer in flight at a signal) and most (how many may
# be: one per restart unless said).
sub under_restarts {
    my ($h, $what, %o) = @_;
    my $loops    = $o{loops}    // 8;
    my $restarts = $o{restarts} // 10;
    my $dir      = $o{dir};
    my $base     = $h->base;
    my $mark     = $h->log_mark;
    my $started  = time;
    unlink "$dir/stop";

    my @kids;
    for my $k (1 .. $loops) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            my $keep = $k % 2 == 0;
            my $ua   = LWP::UserAgent->new(keep_alive => $keep ? 1 : 0, timeout => 30,
                ssl_opts => { verify_hostname => 0, SSL_verify_mode => 0 });
            $ua->default_header(Host => $o{host}) if $o{host};
            my %count;
            my $i = 0;
            until (-e "$dir/stop") {
                my $n = $i++ % 4;
                my ($path, @req);
                if ($n == 2) {
                    $path = $o{webhook};
                    my $body = notice_json(notice());
                    my @sig = $o{hmac_key}
                      ? ($o{hmac_header} => hmac_sha512_hex($body, $o{hmac_key})) : ();
                    @req = (POST => "$base$path", [Authorization => "Bearer $o{secret}",
                        'Content-Type' => 'application/json', @sig], $body);
                } elsif ($n == 0) {
                    $path = $o{health} // '/health';
                    @req  = (GET => "$base$path");
                } else {
                    $path = '/misc/payment_banks';
                    @req  = (GET => "$base$path", [Authorization => "Bearer $o{token}"]);
                }
                # Sent on a kept connection: one LWP will reuse (it drops a readable one, closed
                # by the server, and opens a new connection instead).
                my ($kept_conn) = $keep ? $ua->conn_cache->get_connections : ();
                my $reused = $kept_conn && !$kept_conn->can_read(0);
                my $res    = $ua->request(HTTP::Request->new(@req));
                # A kept connection the server closed or reset as the request went out on it
                # (the keep-alive race): sent again once on a new connection, as clients do
                # (the webhook's notice is the same notice: a duplicate if the first was stored).
                if ($reused && ($res->header('Client-Warning') // '') eq 'Internal response'
                    && $res->content =~ /^(?:Server closed connection without sending any data back|Status read failed: Connection reset by peer)/)
                {
                    $count{cut}++;
                    printf STDERR "%s, loop %d, %.3f: %s cut on a kept connection, sent again\n",
                      $what, $k, time, $path;
                    $ua->conn_cache->drop;
                    $res = $ua->request(HTTP::Request->new(@req));
                }
                my $code = $res->header('Client-Warning') ? '000' : $res->code;
                $count{$code}++;
                $count{kept}++ if $keep && ($res->header('Client-Response-Num') // 1) > 1;
                printf STDERR "%s, loop %d, %.3f: %s %s %s\n", $what, $k, time, $path, $code,
                  substr($res->content, 0, 200)
                  if $code ne '200';
                # at least 2 ms: a connection the server closes after its answer is seen closed
                sleep 0.002 + rand 0.02 if $keep;
            }
            spew("$dir/loop$k", join '', map { "$_ $count{$_}\n" } sort keys %count);
            # Not exit: the parent's objects (a Bank::Docs::Httpd stops its server when
            # destroyed) belong to the parent.
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    sleep 1;
    for (1 .. $restarts) {
        $h->graceful("$what, graceful restart $_");
        sleep 0.5;
    }
    sleep 1;
    spew("$dir/stop", '');
    waitpid $_, 0 for @kids;

    my %total;
    for my $k (1 .. $loops) {
        for (split /\n/, -e "$dir/loop$k" ? slurp("$dir/loop$k") : "lost 1\n") {
            my ($code, $count) = split / /;
            $total{$code} += $count;
        }
    }
    # requests sent on a kept connection (its second or later), and those cut on one and sent
    # again: not answers, counted apart
    my $kept = delete($total{kept}) // 0;
    my $cut  = delete($total{cut})  // 0;
    my $all = 0;
    $all += $_ for values %total;
    diag(sprintf "%s: %d requests (%d on kept connections, %d cut on one and sent again) from "
          . "%d loops across %d graceful restarts in %.1f s: %s",
        $what, $all, $kept, $cut, $loops, $restarts, time - $started,
        join(', ', map { "$_ x $total{$_}" } sort keys %total));
    cmp_ok($all, '>', 100, "$what: the loops ran");
    cmp_ok($kept, '>', 20, "$what: requests were sent on kept-alive connections") if $loops > 1;
    # Under the worker MPM only an answer in flight at the signal can leave a kept connection
    # that closes as its client reuses it: at most one request per restart. The event MPM
    # closes every idle kept connection of an old process (the caller says so and how many).
    my $why  = $o{cuts} // 'an answer made just before the signal keeps its keep-alive promise '
      . 'and the connection closes after it';
    my $most = $o{most} // $restarts;
    cmp_ok($cut, '<=', $most,
        "$what: $cut request(s) cut on a kept connection by a restart and sent again "
          . "($why; at most $most)");
    is($all - ($total{200} // 0), 0, "$what: every request answered 200 (no 503, no connection error)");
    my $log = $h->log_since($mark);
    my @bad = grep { /\[[\w:]*(crit|alert|emerg)\]|AH00632|AH00636|database is locked/ }
      split /\n/, $log;
    is(join("\n", @bad), '', "$what: no crit line, no failed prepare in the error log");
    # Only graceful restarts: nothing stopped the server while the loops ran (AH00491 is
    # httpd's "caught SIGTERM, shutting down"), and it still accepts connections.
    unlike($log, qr/AH00491/, "$what: the server was not stopped during the run");
    ok($h->answers, "$what: the server still answers after the loops");
    return;
}

1;
