# glibc's fast bins (docs/deployment.md, "glibc's fast bins"): every httpd child turns them off
# as it starts (mallopt succeeded: BANK2301 at debug level, with the child's pid), unless
# GLIBC_TUNABLES in httpd's environment names glibc.malloc.mxfast: then the operator's value
# stays (BANK2303) and mallopt is not called. Each case is an httpd of its own, started with
# that environment.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Servers qw(start_server);

plan skip_all => 'glibc only: elsewhere mod_bank leaves malloc as it is'
  unless `getconf GNU_LIBC_VERSION 2>/dev/null` =~ /glibc/;

# The pids of the server's children, once each has logged one of the tags (up to 10 s).
sub children_logged {
    my ($srv, $tag) = @_;
    my ($log, @kids);
    for (1 .. 100) {
        my $ppid = do { local (@ARGV, $/) = $srv->{pidfile}; <> };
        chomp $ppid;
        # the MPM's children: each runs its threads (a helper process another module forks
        # from the parent runs no child_init and has one)
        @kids = map { /^\s*(\d+)\s+(\d+)/ && $2 > 1 ? $1 : () } `ps -o pid=,nlwp= --ppid $ppid`;
        $log = $srv->error_log_since(0);
        last if @kids && !grep { $log !~ /BANK$tag: .* in process $_\b/ } @kids;
        select undef, undef, undef, 0.1;
    }
    # only these children's lines: a log file of an earlier server on the same port is
    # appended to, not replaced
    my %kid = map { $_ => 1 } @kids;
    $log = join '', grep { /\[pid (\d+):/ && $kid{$1} } split /^/, $log;
    return ($log, @kids);
}

# One httpd started with GLIBC_TUNABLES as given (undef: not set): every child logs the tag
# wanted, with its pid, and none logs the other.
sub case {
    my ($name, $tunables, $want, $other, $line) = @_;
    local $ENV{GLIBC_TUNABLES} = $tunables;
    delete $ENV{GLIBC_TUNABLES} unless defined $tunables;
    my $srv = start_server(extra => "LogLevel bank:debug\n");
    my ($log, @kids) = children_logged($srv, $want);
    ok(@kids >= 1, "$name: the server has children") or diag($log);
    like($log, qr/BANK$want: \Q$line\E in process $_\b/, "$name: child $_ logged BANK$want")
      for @kids;
    unlike($log, qr/BANK$other/, "$name: no child logged BANK$other");
    $srv->stop;
}

my $off  = "glibc's fast bins off";
my $left = "glibc's fast bins left as GLIBC_TUNABLES sets them (glibc.malloc.mxfast)";
case('default', undef, 2301, 2303, $off);
case('GLIBC_TUNABLES', 'glibc.malloc.mxfast=64', 2303, 2301, $left);
# another tunable in the variable is not this one
case('another tunable', 'glibc.malloc.tcache_count=7', 2301, 2303, $off);

done_testing();
