package Bank::Deb;
# The package on this machine's own apache2 (t/package/deb_install.t, deb_upgrade.t), as
# root: one test at a time (a lock), the machine kept and put back as it was (/etc/apache2
# and /var/lib/apache2 compared with a copy taken first, the package purged, apache2
# stopped), dpkg waiting for the lock other installs may hold, and apache2 started and asked
# as Debian's own scripts do.
#
#   Bank::Deb::machine_or_skip();            # plan skip_all unless the machine allows it
#   my ($rc, $text) = dpkg('-i', $deb);
#   starts('installed');                      # apache2ctl stop, then start: answers on :80
#   my $res = get('/health');                 # Host: bank.example.org
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use Fcntl qw(:flock);
use File::Temp qw(tempdir);
use LWP::UserAgent ();
use Test::More;
use Bank::Test qw(slurp);

our @EXPORT_OK = qw(apache_running dpkg configtest get starts stops links_to_bank crashes $PKG $PIDFILE);

our $PKG     = 'libapache2-mod-bank';
our $PIDFILE = '/run/apache2/apache2.pid';
my ($lock, $keep);

sub apache_running {
    my $pid = -e $PIDFILE ? slurp($PIDFILE) : '';
    return $pid =~ /(\d+)/ && kill(0, $1) ? $1 : 0;
}

# Skips the whole test unless it may replace the machine's apache2 and package; then takes
# the lock and a copy of what restore() puts back.
sub machine_or_skip {
    plan skip_all => 'installs a package on the real apache2: root only' unless $> == 0;
    plan skip_all => 'needs dpkg and Debian\'s apache2 (apache2ctl, a2query)'
      unless -x '/usr/bin/dpkg' && -x '/usr/sbin/apache2ctl' && -x '/usr/sbin/a2query';
    open $lock, '>', '/run/lock/mod_bank-deb-install.lock' or die "lock: $!";
    flock $lock, LOCK_EX;
    plan skip_all => "$PKG is installed on this machine: the test would replace it"
      if `dpkg-query -W -f '\${Status}' $PKG 2>/dev/null` =~ /installed/;
    plan skip_all => 'the machine\'s apache2 is running: the test restarts it' if apache_running();
    plan skip_all => 'port 80 is in use' if `ss -Hltn 'sport = :80'` =~ /\S/;
    # Killed (a CI timeout, Ctrl-C): END blocks still put the machine back.
    $SIG{$_} = sub { exit 1 } for qw(INT TERM HUP);
    $keep = tempdir('/tmp/mod_bank-deb-install.XXXXXX', CLEANUP => 1);
    system('cp', '-a', '/etc/apache2', "$keep/etc-apache2") == 0 or die 'cp /etc/apache2';
    system('cp', '-a', '/var/lib/apache2', "$keep/var-lib-apache2") == 0
      or die 'cp /var/lib/apache2';
}

# Debian's maintainer scripts act on services through invoke-rc.d, which a container's
# /usr/sbin/policy-rc.d (exit 101) forbids; a server has none. Moved aside until the test
# ends.
my $policy = '/usr/sbin/policy-rc.d';
my $policy_kept;
sub policy_aside {
    return unless -e $policy;
    $policy_kept = "$policy.mod_bank-test";
    rename $policy, $policy_kept or die "rename $policy: $!";
}
END { rename $policy_kept, $policy if $policy_kept && -e $policy_kept }

# A child of the test's apache2 that crashes leaves a core here (CoreDumpDirectory, which
# also keeps a child dumpable once it has become www-data; the snippet is there only while
# the test's apache2 runs), and crashes() says so with the crashing thread's stack.
my $CORES     = '/tmp/apache2-test-cores';
my $CORE_CONF = '/etc/apache2/conf-enabled/zz-test-cores.conf';
my $log       = '/var/log/apache2/error.log';
my $log_from  = -e $log ? -s $log : 0;

# apache2 stopped: returns once its parent is gone, up to 60 s (a site of thousands of threads
# that held a flood's connections takes more than 10 s to end on a loaded machine).
sub stops {
    system('apache2ctl', 'stop') if apache_running();
    for (1 .. 600) { last unless apache_running(); select undef, undef, undef, 0.1 }
    unlink $CORE_CONF;
}

sub cores_on {
    mkdir $CORES;
    chmod 01777, $CORES;
    open my $fh, '>', $CORE_CONF or die "$CORE_CONF: $!";
    print $fh "CoreDumpDirectory $CORES\n";
    close $fh;
}

# The crashes of apache2's children since the test began (AH00052 lines of Debian's error
# log, with the stack of each core left), as text; '' when none.
sub crashes {
    open my $fh, '<', $log or return '';
    seek $fh, $log_from, 0;
    my @lines = grep { /AH00052: child pid \d+ exit signal/ } <$fh>;
    return '' unless @lines;
    my $text = join '', @lines;
    for my $core (glob "$CORES/core*") {
        $text .= "$core:\n" . `gdb -q -batch -ex bt /usr/sbin/apache2 '$core' 2>&1 | grep -v '^\\[New LWP'`;
    }
    return $text;
}

sub restore {
    stops();
    if (`dpkg-query -W -f '\${Status}' $PKG 2>/dev/null` =~ /installed|config-files/) {
        dpkg('-P', $PKG);
    }
    for (['/etc/apache2', "$keep/etc-apache2"], ['/var/lib/apache2', "$keep/var-lib-apache2"]) {
        my ($dir, $copy) = @$_;
        next unless -d $copy;
        next if system('diff', '-r', '--no-dereference', '-q', $dir, $copy) == 0;
        diag("putting $dir back as it was:\n" . `diff -r --no-dereference -q '$copy' '$dir'`);
        system("rm -rf '$dir' && cp -a '$copy' '$dir'");
    }
}
END { restore() if $keep }

# dpkg, waiting for the lock other package installs may hold.
sub dpkg {
    my @args = @_;
    my $text;
    for (1 .. 120) {
        $text = `DEBIAN_FRONTEND=noninteractive dpkg --force-confdef --force-confold @args 2>&1`;
        return ($?, $text) unless $? && $text =~ /lock/i;
        sleep 1;
    }
    return (1, $text);
}

sub configtest {
    my ($what) = @_;
    my $t = `apache2ctl configtest 2>&1`;
    is($?, 0, "$what: apache2ctl configtest") or diag($t);
    like($t, qr/Syntax OK/, "$what: Syntax OK");
}

my $ua = LWP::UserAgent->new(timeout => 10);
sub get {
    my ($path, %h) = @_;
    my $res;
    for (1 .. 50) {
        $res = $ua->get("http://127.0.0.1$path", Host => 'bank.example.org', %h);
        last unless $res->header('Client-Warning');
        select undef, undef, undef, 0.1;
    }
    return $res;
}

# apache2 (re)started as Debian's init script would: 1 when it answers on port 80.
sub starts {
    my ($what) = @_;
    stops();
    cores_on();
    my $t = `ulimit -c 2097152; apache2ctl start 2>&1`;    # cores up to 2 GiB
    is($?, 0, "$what: apache2 starts") or diag($t);
    my $res = get('/');
    ok(!$res->header('Client-Warning'), "$what: apache2 answers on port 80") or diag($res->as_string);
    return $res;
}

sub links_to_bank {
    return grep { (readlink($_) // "") =~ m{/bank\.(load|conf)$} } glob '/etc/apache2/*-enabled/*';
}

1;
