# Graceful restarts lose nothing: 8 request loops run against a server of the suite's driver
# while it is restarted gracefully 10 times (apache2 -k graceful), once for each database
# pool the shipped configurations use, with reads, writes and health checks, (README's and deployment.md's SQLite pool, mod_dbd's
# defaults as in the package's example site, deployment.md's PostgreSQL pool). Every answer
# must be 200 (no 503, no connection error) and the error log must have no line at crit or
# worse (AH00636 child init failed) and no failed prepare (AH00632).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use LWP::UserAgent ();
use Time::HiRes qw(sleep);
use Bank::Test;
use Bank::Docs qw(free_port private_conf slurp spew);
use Bank::Webhook qw(notice notice_json);

my $loops     = 8;
my $restarts  = 10;
my $work      = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
chmod 0755, $work;
my $c     = new_customer();
my $token = issue_token($c->{email});

my %pools = (
    'DBDMin 0, DBDKeep 4, DBDMax 8 (README, deployment.md SQLite)' => "DBDMin 0\nDBDKeep 4\nDBDMax 8\n",
    'mod_dbd defaults (package example site)' => '',
    'DBDMin 2, DBDKeep 10, DBDMax 25 (deployment.md PostgreSQL)' => "DBDMin 2\nDBDKeep 10\nDBDMax 25\n",
);

my $n = 0;
for my $what (sort keys %pools) {
    my $dir = "$work/" . $n++;
    mkdir $dir;
    chmod 0755, $dir;
    my $port = free_port();
    spew("$dir/httpd.conf", private_conf($dir, 'httpd', $port) . $pools{$what} . <<'CONF');
MaxConnectionsPerChild 0
<Location /misc/payment_banks>
    SetHandler bank-banks
</Location>
<Location /health>
    SetHandler bank-health
</Location>
<Location /webhook/load>
    SetHandler bank-webhook
    BankWebhookSecret load-test-secret
</Location>
CONF
    my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $port,
        log => "$dir/httpd.log", pidfile => "$dir/httpd.pid");
    $h->start($what) or next;

    # The loops: each counts its answers by status (000: no answer) until the stop file.
    my @kids;
    for my $k (1 .. $loops) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => 30);
            my %count;
            my $i = 0;
            until (-e "$dir/stop") {
                # reads, a write (a new notice: the database's journal grows), the health check
                my $n = $i++ % 4;
                my ($path, $res);
                if ($n == 2) {
                    $path = '/webhook/load';
                    $res  = $ua->post("http://127.0.0.1:$port$path",
                        Authorization => 'Bearer load-test-secret',
                        'Content-Type' => 'application/json', Content => notice_json(notice()));
                } else {
                    $path = $n ? '/misc/payment_banks' : '/health';
                    $res = $ua->get("http://127.0.0.1:$port$path",
                        Authorization => "Bearer $token");
                }
                my $code = $res->header('Client-Warning') ? '000' : $res->code;
                $count{$code}++;
                print STDERR "loop $k: $path $code " . substr($res->content, 0, 200) . "\n"
                  if $code ne '200';
            }
            spew("$dir/loop$k", join '', map { "$_ $count{$_}\n" } sort keys %count);
            exit 0;
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
        for (split /\n/, slurp("$dir/loop$k")) {
            my ($code, $count) = split / /;
            $total{$code} += $count;
        }
    }
    my $all = 0;
    $all += $_ for values %total;
    diag("$what: $all requests across $restarts graceful restarts: "
          . join(', ', map { "$_ x $total{$_}" } sort keys %total));
    cmp_ok($all, '>', 100, "$what: the loops ran");
    is($all - ($total{200} // 0), 0, "$what: every request answered 200");
    my @bad = grep { /\[[\w:]*(crit|alert|emerg)\]|AH00632|AH00636|database is locked/ }
      split /\n/, $h->log_since(0);
    is(join("\n", @bad), '', "$what: no crit line, no failed prepare in the error log");
    $h->stop;
}

done_testing();
