package Bank::Ha;
# A PostgreSQL primary and a synchronous standby of their own (scripts/pgcluster), servers on
# the multi-host conninfo, and request loops whose every answer is recorded with its start
# and end time: what the failover and commit-wait tests read.
#
#   my $ha = Bank::Ha->new;                  # primary "a", standby "b" (synchronous)
#   $ha->sql('a', $sql);                     # psql on one node's bank database
#   my @s = $ha->servers(2, %start_server_options);
#   my $load = $ha->load(\@s, token => $t, workers => 8);   # in the background
#   $ha->stop_load($load);                   # the records: [{kind, status, start, end, ...}]
use strict;
use warnings FATAL => 'all';
use File::Path qw(make_path);
use LWP::UserAgent ();
use POSIX ();
use Time::HiRes ();
use Apache::Test qw(-withtestmore);
use Bank::Test qw(json_request decode_body slurp spew);
use Bank::Servers qw(start_server);
use Bank::Webhook qw(delivery notice);

my $seq = 0;

sub new {
    my ($class) = @_;
    my $root = "$ENV{BANK_TEST_ROOT}/ha";
    make_path($root);
    chmod 0755, $root;
    my $self = bless { root => $root }, $class;
    local $ENV{BANK_PG_REPLICATED} = 1;
    $self->pgcluster(start => 'a');
    # The schema on the primary; the standby starts as a copy of it.
    my ($rc, $out) = $self->bankctl('migrate');
    die "migrate on the primary failed: $out" if $rc;
    $self->pgcluster(standby => 'b', $self->dir('a'));
    $self->pgcluster(sync => 'a', 'b');
    $self->{primary} = 'a';
    return $self;
}

# Waits (10 s at most) until the node's standby is attached synchronously; its sync_state.
sub wait_sync {
    my ($self, $node) = @_;
    my $state = '';
    for (1 .. 100) {
        $state = $self->sql($node, 'SELECT sync_state FROM pg_stat_replication', 'postgres');
        last if $state eq 'sync';
        Time::HiRes::sleep(0.1);
    }
    return $state;
}

sub dir { my ($self, $node) = @_; return "$self->{root}/$node" }

sub pgcluster {
    my ($self, $cmd, $node, @arg) = @_;
    local $ENV{BANK_PG_REPLICATED} = 1;
    local $ENV{BANK_PG_TIMEZONE};
    my $out = `"$ENV{BANK_PGCLUSTER}" $cmd "${\ $self->dir($node)}" @arg 2>&1`;
    die "pgcluster $cmd $node failed: $out" if $?;
    return $out;
}

sub url {
    my ($self, $node, $user) = @_;
    return "postgresql:///bank?host=" . $self->dir($node) . "&port=5432&user=" . ($user // 'bank');
}

# Both nodes, the writable one first to be found: what a server is configured with.
sub conninfo {
    my ($self) = @_;
    return sprintf('host=%s,%s port=5432,5432 dbname=bank user=bank'
          . ' target_session_attrs=read-write connect_timeout=2', $self->dir('a'), $self->dir('b'));
}

# psql on a node's bank database, as the role bank (or $user: replication state is shown to
# superusers only).
sub sql {
    my ($self, $node, $sql, $user) = @_;
    my $psql = $ENV{BANK_PSQL} // 'psql';
    my $q    = $sql =~ s/'/'\\''/gr;
    my $out  = `$psql -X -q -t -A -v ON_ERROR_STOP=1 '${\ $self->url($node, $user)}' -c '$q' 2>&1`;
    die "sql on $node failed: $sql: $out" if $?;
    chomp $out;
    return $out;
}

# bankctl on the current primary: (exit code, stdout).
sub bankctl {
    my ($self, @args) = @_;
    my $node = $self->{primary} // 'a';
    (my $cmd = $ENV{BANK_CTL}) =~ s{--db '[^']*'}{--db '${\ $self->url($node)}'};
    $cmd .= join '', map { " '" . (s/'/'\\''/gr) . "'" } @args;
    my $out = `$cmd 2>&1`;
    chomp $out;
    return ($? >> 8, $out);
}

sub bankctl_ok {
    my ($self, @args) = @_;
    my ($rc, $out) = $self->bankctl(@args);
    die "bankctl @args[0,1] failed: $out" if $rc;
    return $out;
}

# Another session on a node runs $sql in a transaction, then sleeps $secs and rolls back, in
# the background: what $sql locks is held meanwhile. Returns its pid once it holds.
sub hold {
    my ($self, $node, $secs, $sql) = @_;
    my $app = "bank_hold_$$" . '_' . $seq++;
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        $ENV{PGAPPNAME} = $app;
        { exec($ENV{BANK_PSQL} // 'psql', '-X', '-q', '-o', '/dev/null', '-v', 'ON_ERROR_STOP=1',
            $self->url($node), '-c', "BEGIN; $sql; SELECT pg_sleep($secs); ROLLBACK;") }
        POSIX::_exit(1);
    }
    for (1 .. 400) {
        return $pid if $self->sql($node, "SELECT count(*) FROM pg_stat_activity"
              . " WHERE application_name = '$app' AND wait_event = 'PgSleep'", 'postgres');
        last if waitpid($pid, POSIX::WNOHANG()) == $pid;
        Time::HiRes::sleep(0.025);
    }
    kill 'TERM', $pid;
    waitpid $pid, 0;
    die "hold: the session never slept holding ($sql)";
}

# The pids of a node's postmaster and of every process it started.
sub processes {
    my ($self, $node) = @_;
    my $pm = slurp($self->dir($node) . '/data/postmaster.pid');
    ($pm) = $pm =~ /^(\d+)/;
    my @kids = split /\s+/, `pgrep -P $pm`;
    return ($pm, grep { /^\d+$/ } @kids);
}

# n httpd servers on the multi-host conninfo (start_server's options).
sub servers {
    my ($self, $n, %o) = @_;
    local $ENV{BANK_DBPARAMS} = $self->conninfo;
    return map { start_server(%o) } 1 .. $n;
}

# Request loops in the background, one process each, alternating a new notice and the bank
# list (token => ...), on the servers in turn, each request on a new connection (so every
# httpd process takes some). Each answer: kind, status, start, end (epoch seconds), code,
# Retry-After, reference (notices).
sub load {
    my ($self, $servers, %o) = @_;
    my $n    = $o{workers} // 8;
    my $tag  = $seq++;
    my $stop = "$self->{root}/stop.$tag";
    unlink $stop;
    my @kids;
    for my $w (0 .. $n - 1) {
        my $file = "$self->{root}/load.$tag.$w";
        my $pid  = fork // die "fork: $!";
        if (!$pid) {
            my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => $o{timeout} // 60);
            open my $fh, '>', $file or POSIX::_exit(1);
            $fh->autoflush(1);
            my $server = $servers->[$w % @$servers];
            for (my $i = 0; !-e $stop; $i++) {
                my ($kind, @req);
                if ($i % 2 == 0 && !$o{reads_only}) {
                    my $nt = notice();
                    $kind = "webhook $nt->{data}{transactionReference}";
                    @req  = delivery($nt);
                } else {
                    $kind = 'banks -';
                    @req  = (GET => '/misc/payment_banks',
                        headers => { Authorization => "Bearer $o{token}" });
                }
                my $t0  = Time::HiRes::time();
                my $res = $server->request(@req, ua => $ua);
                my $t1  = Time::HiRes::time();
                my $d   = decode_body($res) // {};
                my $internal = $res->header('Client-Warning') ? 'client' : 'server';
                printf $fh "%s %d %.3f %.3f %s %s %s %d\n", $kind, $res->code, $t0, $t1,
                  $d->{code} // '-', $res->header('Retry-After') // '-', $internal, $w % @$servers;
                select undef, undef, undef, $o{pause} // 0;
            }
            close $fh;
            POSIX::_exit(0);
        }
        push @kids, [$pid, $file];
    }
    return { kids => \@kids, stop => $stop };
}

sub stop_load {
    my ($self, $load) = @_;
    spew($load->{stop}, '');
    my @out;
    for my $k (@{ $load->{kids} }) {
        waitpid $k->[0], 0;
        for (split /\n/, -e $k->[1] ? slurp($k->[1]) : '') {
            my ($kind, $ref, $status, $t0, $t1, $code, $ra, $origin, $server) = split / /;
            push @out, { kind => $kind, ref => $ref, status => $status, start => $t0,
                end => $t1, code => $code, retry_after => $ra, origin => $origin,
                server => $server };
        }
    }
    unlink $load->{stop};
    return sort { $a->{start} <=> $b->{start} } @out;
}

sub DESTROY {
    my ($self) = @_;
    for my $node ('a', 'b') {
        `"$ENV{BANK_PGCLUSTER}" stop "${\ $self->dir($node)}" 2>&1` if -d $self->dir($node);
    }
}

1;
