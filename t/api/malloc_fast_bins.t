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

{
    local $ENV{GLIBC_TUNABLES};
    delete $ENV{GLIBC_TUNABLES};
    my $srv = start_server(extra => "LogLevel bank:debug\n");
    my ($log, @kids) = children_logged($srv, 2301);
    ok(@kids >= 1, 'default: the server has children') or diag($log);
    for my $pid (@kids) {
        like($log, qr/BANK2301: glibc's fast bins off in process $pid\b/,
            "default: child $pid turned its fast bins off");
    }
    unlike($log, qr/BANK2302/, 'default: glibc refused nothing');
    unlike($log, qr/BANK2303/, 'default: nothing left to GLIBC_TUNABLES');
    $srv->stop;
}

{
    local $ENV{GLIBC_TUNABLES} = 'glibc.malloc.mxfast=64';
    my $srv = start_server(extra => "LogLevel bank:debug\n");
    my ($log, @kids) = children_logged($srv, 2303);
    ok(@kids >= 1, 'GLIBC_TUNABLES: the server has children') or diag($log);
    for my $pid (@kids) {
        like($log, qr/BANK2303: glibc's fast bins left as GLIBC_TUNABLES sets them \(glibc\.malloc\.mxfast\) in process $pid\b/,
            "GLIBC_TUNABLES: child $pid left the operator's setting");
    }
    unlike($log, qr/BANK2301/, 'GLIBC_TUNABLES: no child turned its fast bins off');
    $srv->stop;
}

{
    # another tunable in the variable is not this one
    local $ENV{GLIBC_TUNABLES} = 'glibc.malloc.tcache_count=7';
    my $srv = start_server(extra => "LogLevel bank:debug\n");
    my ($log, @kids) = children_logged($srv, 2301);
    ok(@kids >= 1, 'another tunable: the server has children') or diag($log);
    for my $pid (@kids) {
        like($log, qr/BANK2301: glibc's fast bins off in process $pid\b/,
            "another tunable: child $pid turned its fast bins off");
    }
    unlike($log, qr/BANK2303/, 'another tunable: nothing left to GLIBC_TUNABLES');
    $srv->stop;
}

done_testing();
