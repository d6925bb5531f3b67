# Graceful restarts lose nothing: 8 request loops run against a server of the suite's driver
# while it is restarted gracefully 10 times (apache2 -k graceful), once for each database
# pool a configuration may have, with reads, writes and health checks (README's and
# deployment.md's SQLite pool, mod_dbd's defaults, deployment.md's PostgreSQL pool), under
# the worker MPM the dev server and the production configuration run; the shipped files
# themselves: t/api/load/graceful_shipped.t. Every answer must be 200 (no 503, no connection
# error, at most one request per restart cut on a kept connection and sent again) and the
# error log must have no line at crit or worse (AH00636 child init failed) and no failed
# prepare (AH00632).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Test;
use Bank::Docs qw(free_port private_conf spew);
use Bank::Graceful qw(under_restarts);

my $loops     = 8;
my $restarts  = 10;
my $work      = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
chmod 0755, $work;
my $c     = new_customer();
my $token = issue_token($c->{email});

my %pools = (
    'DBDMin 0, DBDKeep 4, DBDMax 8 (README, deployment.md SQLite)' => "DBDMin 0\nDBDKeep 4\nDBDMax 8\n",
    'mod_dbd defaults (no DBD pool directive)' => '',
    'DBDMin 2, DBDKeep 10, DBDMax 25 (deployment.md PostgreSQL)' => "DBDMin 2\nDBDKeep 10\nDBDMax 25\n",
);

my $n = 0;
for my $what (sort keys %pools) {
    my $dir = "$work/" . $n++;
    mkdir $dir;
    chmod 0755, $dir;
    my $port = free_port();
    # the worker MPM of the dev server and the production configuration (httpd's defaults
    # for it: free slots for a restart's new processes)
    my $conf = private_conf($dir, 'httpd', $port);
    ok($conf =~ s{mpm_event}{mpm_worker}g, "$what: the worker MPM");
    spew("$dir/httpd.conf", $conf . $pools{$what} . <<'CONF');
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

    under_restarts($h, $what, dir => $dir, token => $token, webhook => '/webhook/load',
        secret => 'load-test-secret', loops => $loops, restarts => $restarts);
    $h->stop;
}

done_testing();
