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
# time) and the bank list again.
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use Digest::SHA qw(hmac_sha512_hex);
use LWP::UserAgent ();
use POSIX ();
use Time::HiRes qw(sleep time);
use Apache::Test qw(-withtestmore);
use Bank::Test qw(slurp spew);
use Bank::Webhook qw(notice notice_json);

our @EXPORT_OK = qw(under_restarts);

# Options: dir (a directory of the test's own), token, webhook (its path), secret,
# hmac_header and hmac_key (a signed webhook), health (its path, /health), loops (8),
# restarts (10), host (a Host header, for a name-based virtual host).
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
            my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => 30,
                ssl_opts => { verify_hostname => 0, SSL_verify_mode => 0 });
            $ua->default_header(Host => $o{host}) if $o{host};
            my %count;
            my $i = 0;
            until (-e "$dir/stop") {
                my $n = $i++ % 4;
                my ($path, $res);
                if ($n == 2) {
                    $path = $o{webhook};
                    my $body = notice_json(notice());
                    my @sig = $o{hmac_key}
                      ? ($o{hmac_header} => hmac_sha512_hex($body, $o{hmac_key})) : ();
                    $res = $ua->post("$base$path", Authorization => "Bearer $o{secret}",
                        'Content-Type' => 'application/json', @sig, Content => $body);
                } elsif ($n == 0) {
                    $path = $o{health} // '/health';
                    $res  = $ua->get("$base$path");
                } else {
                    $path = '/misc/payment_banks';
                    $res  = $ua->get("$base$path", Authorization => "Bearer $o{token}");
                }
                my $code = $res->header('Client-Warning') ? '000' : $res->code;
                $count{$code}++;
                printf STDERR "%s, loop %d, %.3f: %s %s %s\n", $what, $k, time, $path, $code,
                  substr($res->content, 0, 200)
                  if $code ne '200';
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
    my $all = 0;
    $all += $_ for values %total;
    diag(sprintf "%s: %d requests from %d loops across %d graceful restarts in %.1f s: %s",
        $what, $all, $loops, $restarts, time - $started,
        join(', ', map { "$_ x $total{$_}" } sort keys %total));
    cmp_ok($all, '>', 100, "$what: the loops ran");
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
