package Bank::DevServer;
# The dev server (scripts/devserver, make start) for one test file: a run directory and a
# port of its own, set in %ENV for the rest of the file (PORT, BANK_RUN_DIR, BANK_DB; no
# BANK_PG_PARAMS, so that PostgreSQL is a throwaway cluster of its own in the run
# directory), and stopped when the file ends, whatever happened.
#
#   my $d   = dev_server(db => 'sqlite3', env => { BANK_SERVER_NICE => -5 });
#   my $out = dev_start();    # what devserver start printed; $? is its status
#   ... $d->{run}, $d->{port}, $d->{url}, $d->{top} ...
#   dev_stop();
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use File::Temp qw(tempdir);
use Cwd qw(getcwd);
use Bank::Test qw(free_port);

our @EXPORT = qw(dev_server dev_start dev_stop);

my $top = getcwd();    # run-tests runs the suite from the checkout
my @runs;

sub dev_server {
    my (%o) = @_;
    my $dir = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
    chmod 0755, $dir;    # as root, PostgreSQL's cluster and httpd's User reach into it
    my $d   = { top => $top, dir => $dir, run => "$dir/run", port => free_port() };
    $d->{url} = "http://127.0.0.1:$d->{port}";
    $ENV{PORT}         = $d->{port};
    $ENV{BANK_RUN_DIR} = $d->{run};
    $ENV{BANK_DB}      = $o{db} || 'sqlite3';
    delete $ENV{BANK_PG_PARAMS};
    my $env = $o{env} || {};
    for my $k (keys %$env) {
        if (defined $env->{$k}) { $ENV{$k} = $env->{$k} } else { delete $ENV{$k} }
    }
    push @runs, $d->{run};
    return $d;
}

sub _devserver { return "'$top/scripts/devserver' $_[0]" }

sub dev_start { return scalar `${\ _devserver('start')} 2>&1` }

sub dev_stop { system(_devserver('stop') . ' >/dev/null 2>&1') }

# The run directories named again (%ENV may have changed by the time END runs), the last
# started first: an earlier one may hold the database of a later one.
END {
    local $?;
    system("BANK_RUN_DIR='$_' " . _devserver('stop') . ' >/dev/null 2>&1') for grep { -e "$_/httpd.pid" } reverse @runs;
}

1;
