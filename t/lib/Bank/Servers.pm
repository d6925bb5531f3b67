package Bank::Servers;
# Helpers for running mod_bank as several servers on one PostgreSQL (issue 6): a second
# httpd instance started from the test server's own configuration, requests fired at the
# same moment across servers, and stopping/starting the database under httpd.
#
#   require_pgsql($why);                 # skip the file (visibly) unless DB=pgsql
#   my $one = main_server();             # the Apache::Test server
#   my $two = start_server();            # another httpd, same module, config and database
#   $two->request(GET => '/misc/payment_banks', headers => {...});   # json_request's options
#   my @res = concurrent(map { [$_ % 2 ? $one : $two, POST => '/path', body => {...}] } 1..10);
#   my $mark = $two->error_log_mark;     # then $two->error_log_since($mark)
#   pg_stop(); pg_start();               # the throwaway cluster of scripts/run-tests
#   my $pid = pg_hold(3, $sql);          # another session holds what $sql locks, 3 s
#   start_server(extra => one_process(8));  # a server of one process of 8 threads
#   start_server(extra => processes(2, 8)); # two processes, none added or stopped
#   start_server(mpm => 'worker', extra => ...); # another MPM than the suite's event MPM
#   my @s = feed_servers('bank_two');    # [name, server]: the test server, and on PostgreSQL a
#                                        # second whose connections carry that application_name
#   my ($last, @r) = poll_a_second($round, $old);  # the caches' 1 s rule (below)
#
# t/api/resilience/pg_servers.t uses them for the cross-server cases of issue 6, point 4.
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use IO::Socket::INET ();
use File::Path qw(make_path);
use HTTP::Response ();
use LWP::UserAgent ();
use POSIX ();
use Time::HiRes ();
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Bank::Test qw(json_request db_value slurp spew free_port);

our @EXPORT_OK = qw(require_pgsql require_sqlite main_server start_server concurrent pg_stop pg_start
  pg_hold feed_servers poll_a_second one_process processes);

# Skips the whole file unless the suite runs on PostgreSQL. The harness prints the reason
# ("skipped: needs PostgreSQL ...") and scripts/run-tests repeats it in its summary.
sub require_pgsql {
    my ($why) = @_;
    return if ($ENV{BANK_DBDRIVER} // '') eq 'pgsql';
    plan(skip_all => "needs PostgreSQL (make test DB=pgsql): $why");
    exit 0;
}

# The same the other way round, for faults only a SQLite file can have.
sub require_sqlite {
    my ($why) = @_;
    return if ($ENV{BANK_DBDRIVER} // '') eq 'sqlite3';
    plan(skip_all => "needs SQLite (make test): $why");
    exit 0;
}

# ---- the database --------------------------------------------------------------------------

sub _pgcluster {
    my ($cmd) = @_;
    my $out = `"$ENV{BANK_PGCLUSTER}" $cmd "$ENV{BANK_PG_DIR}" 2>&1`;
    die "pgcluster $cmd failed: $out" if $?;
}

# Fast shutdown: PostgreSQL ends every session, as in a restart or a failover.
sub pg_stop  { _pgcluster('stop') }
sub pg_start { _pgcluster('start') }

# Runs $sql in a transaction of another session that then sleeps $secs seconds and rolls
# back, in the background: what $sql locks (a row, or a unique key it inserts) is held
# meanwhile. Returns the holder's pid (waitpid it; $? 0: it held and ended) once it sleeps,
# that is once it holds.
my $holds = 0;

sub pg_hold {
    my ($secs, $sql) = @_;
    my $app = "bank_hold_${$}_" . $holds++;
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        $ENV{PGAPPNAME} = $app;
        { exec($ENV{BANK_PSQL} // 'psql', '-X', '-q', '-o', '/dev/null', '-v', 'ON_ERROR_STOP=1',
            $ENV{BANK_PSQL_URL}, '-c', "BEGIN; $sql; SELECT pg_sleep($secs); ROLLBACK;") }
        POSIX::_exit(1);
    }
    for (1 .. 400) {
        return $pid if db_value("SELECT count(*) FROM pg_stat_activity"
              . " WHERE application_name = '$app' AND wait_event = 'PgSleep'");
        last if waitpid($pid, POSIX::WNOHANG()) == $pid;    # it failed
        select undef, undef, undef, 0.025;
    }
    kill 'TERM', $pid;
    waitpid $pid, 0;
    die "pg_hold: the holder never slept holding ($sql)";
}

# ---- servers -------------------------------------------------------------------------------

# The Apache::Test server, or one of its virtual hosts by name (its error log is the same).
sub main_server {
    my ($vhost) = @_;
    Apache::TestRequest::module($vhost) if $vhost;
    (my $base = Apache::TestRequest::resolve_url('/')) =~ s{/$}{};
    Apache::TestRequest::module('default') if $vhost;
    return bless { base => $base, main => 1 }, 'Bank::Servers::One';
}


# Another httpd: the test server's httpd.conf and extra.conf with their own Listen, pid file,
# logs and run-time directory, and without the test server's <VirtualHost>s. (extra => TEXT)
# appends configuration.
sub start_server {
    my (%o) = @_;
    my $vars = Apache::Test::vars();
    my $port = free_port();
    my $dir  = "$ENV{BANK_TEST_ROOT}/server-$port";
    make_path("$dir/logs", "$dir/state");

    my $extra = slurp("$vars->{t_conf}/extra.conf");
    $extra =~ s{^\s*Listen\s.*$}{}mg;
    $extra =~ s{^\s*<VirtualHost\b.*?^\s*</VirtualHost>\s*$}{}msg;
    spew("$dir/extra.conf", $extra . ($o{extra} // ''));

    my @conf = ("Listen 127.0.0.1:$port");
    for (split /\n/, slurp("$vars->{t_conf}/httpd.conf")) {
        next if /^\s*Listen\s/;
        s{^(\s*)ServerName\s.*}{${1}ServerName 127.0.0.1:$port};
        s{^(\s*)(PidFile|ErrorLog|TransferLog|ScriptSock|LockFile)\s+"?([^"]*?)"?\s*$}
         {my ($i, $d, $b) = ($1, $2, $3); $b =~ s{.*/}{}; "$i$d \"$dir/logs/$b\""}e;
        s{^(\s*)DefaultRunTimeDir\s.*}{$1DefaultRunTimeDir "$dir/logs"};
        s{^(\s*)DefaultStateDir\s.*}{$1DefaultStateDir "$dir/state"};
        s{^(\s*)Include\s+"?\S*/extra\.conf"?\s*$}{$1Include "$dir/extra.conf"};
        s{mpm_event}{mpm_$o{mpm}}g if $o{mpm};    # another MPM: its LoadModule and IfModule
        push @conf, $_;
    }
    spew("$dir/httpd.conf", join("\n", @conf) . "\n");

    my $self = bless { base => "http://127.0.0.1:$port", port => $port, dir => $dir,
        conf => "$dir/httpd.conf", pidfile => "$dir/logs/httpd.pid", httpd => $vars->{httpd} },
      'Bank::Servers::One';
    my $out = `"$self->{httpd}" -d "$vars->{serverroot}" -f "$self->{conf}" -D APACHE2 -D APACHE2_4 -k start 2>&1`;
    die "second httpd did not start: $out" if $?;
    for (1 .. 150) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp');
        return $self if $s && -s $self->{pidfile};
        select undef, undef, undef, 0.1;
    }
    $self->stop;
    die "second httpd did not answer on port $port: " . $self->error_log_since(0);
}

# The MPM lines of a server of $n processes of $threads threads each, all started at once and
# none stopped or added while it runs (start_server's extra).
sub processes {
    my ($n, $threads) = @_;
    my $all = $n * $threads;
    return join '', map { "$_\n" } "StartServers $n", "ServerLimit $n", "ThreadLimit $threads",
      "ThreadsPerChild $threads", "MaxRequestWorkers $all", 'MinSpareThreads 1',
      "MaxSpareThreads $all";
}

# A server of one process of $threads threads.
sub one_process { return processes(1, $_[0]) }

# The servers of the revocation-feed tests, each of two processes that live as long as it
# does (so that "every process" is the same processes from one round to the next): one, and
# on PostgreSQL a second whose connections carry application_name $app (its last
# DBDInitSQL), so that a test can kill them alone. Stop them with ->stop.
sub feed_servers {
    my ($app) = @_;
    my @servers = (['one', start_server(extra => processes(2, 8))]);
    push @servers, ['two', start_server(extra => processes(2, 8)
        . qq{DBDInitSQL "SET application_name = '$app'"\n})]
      if $ENV{BANK_DBDRIVER} ne 'sqlite3';
    return @servers;
}

# Runs $round->() every 50 ms for 1.5 s after a change committed (the caller made it just
# before): how long after it the last answer $old->($answer) held was asked for (undef: none),
# and the last round's answers. A round of concurrent() requests is stamped when they were
# sent (after its forks), not when the slowest came back.
our $sent_at;
sub poll_a_second {
    my ($round, $old) = @_;
    my $t0 = Time::HiRes::time();
    my ($last_old, @last) = (undef);
    while (Time::HiRes::time() - $t0 < 1.5) {
        my $at = Time::HiRes::time();
        $sent_at = undef;
        @last = $round->();
        $last_old = ($sent_at // $at) - $t0 if grep { $old->($_) } @last;
        my $spent = Time::HiRes::time() - $at;
        Time::HiRes::sleep(0.05 - $spent) if $spent < 0.05;
    }
    return ($last_old, @last);
}

# Fires every request at the same moment, each from its own process; returns the
# HTTP::Response objects in order. A job: [$server, METHOD => $path, json_request options].
sub concurrent {
    my @jobs = @_;
    pipe(my $go_r, my $go_w) or die "pipe: $!";
    my @kids;
    for my $i (0 .. $#jobs) {
        my $file = "$ENV{BANK_TEST_ROOT}/concurrent.$$.$i";
        my $pid  = fork // die "fork: $!";
        if (!$pid) {
            close $go_w;
            my $go = <$go_r>;    # end of file: the parent has forked everyone
            my ($server, $method, $path, %o) = @{ $jobs[$i] };
            my $ua  = LWP::UserAgent->new(keep_alive => 0, timeout => 60);
            my $res = json_request($method, $server->url($path), %o, ua => $ua);
            spew($file, $res->as_string("\n"));
            POSIX::_exit(0);
        }
        push @kids, [$pid, $file];
    }
    $sent_at = Time::HiRes::time();    # every child forked: the requests go now
    close $go_r;
    close $go_w;
    my @out;
    for my $k (@kids) {
        waitpid $k->[0], 0;
        my $text = -e $k->[1] ? slurp($k->[1]) : "599 no answer\n\n";
        unlink $k->[1];
        push @out, HTTP::Response->parse($text);
    }
    return @out;
}

package Bank::Servers::One;
use strict;
use warnings FATAL => 'all';
use Bank::Test qw(json_request);

sub url  { my ($self, $path) = @_; return $self->{base} . $path }
sub port { return $_[0]->{port} }

# json_request against this server.
sub request {
    my ($self, $method, $path, %o) = @_;
    return json_request($method, $self->url($path), %o);
}

sub error_log { my ($self) = @_; return "$self->{dir}/logs/error_log" }

sub error_log_mark {
    my ($self) = @_;
    return Bank::Test::error_log_mark() if $self->{main};
    return -s $self->error_log || 0;
}

sub error_log_since {
    my ($self, $mark) = @_;
    return Bank::Test::error_log_since($mark) if $self->{main};
    open my $fh, '<', $self->error_log or return '';
    seek $fh, $mark, 0;
    local $/;
    return <$fh> // '';
}

sub stop {
    my ($self) = @_;
    return if $self->{main} || $self->{stopped}++;
    my $pid = -s $self->{pidfile} ? do { local (@ARGV, $/) = $self->{pidfile}; <> } : 0;
    chomp $pid if $pid;
    system($self->{httpd}, '-f', $self->{conf}, '-k', 'stop');
    for (1 .. 100) {
        last unless $pid && kill 0, $pid;
        select undef, undef, undef, 0.1;
    }
}

sub DESTROY { $_[0]->stop }

1;
