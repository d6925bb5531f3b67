# Holding the line (docs/deployment.md, "Holding connections"): the dev server's
# configuration, on the suite's driver, under each attack of 3,000 connections from one
# process for 15 s (BANK_FLOOD_CONNS and BANK_FLOOD_SECONDS: scripts/bench flood's 10,000
# for 60 s) - (a) idle keep-alive with a cheap request every 4 s, (b) slow bodies at
# 1 byte every 2 s, (c) slow headers at one line every 4 s, (d) opened and never written to,
# (e) idle spread over 127.0.0.2-127.0.0.101 - while a legitimate client opens a fresh
# connection each second for the bank list (with a token), a webhook and /health. Every
# probe is answered 200, at least 99% of them within 2 s, the attack held its connections,
# and every notice answered 200 is stored. (Before: 2 processes of 600 threads, and 2,420
# idle connections silenced every endpoint; docs/deployment.md.)
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(:DEFAULT slurp);
use Bank::Hold qw(probe_files check_hold flood_size);
use Bank::DevServer;

my $db = $ENV{BANK_DBDRIVER} eq 'pgsql' ? 'pgsql' : 'sqlite3';
my $d  = dev_server(db => $db);    # PostgreSQL: a throwaway cluster of its own
my ($top, $dir, $run, $port) = @$d{qw(top dir run port)};
plan skip_all => 'build/flood is not built (make build/flood)' unless -x "$top/build/flood";
my ($conns) = flood_size();

my $out = dev_start();
is($?, 0, "dev server started ($db)") or diag($out);
my ($token) = $out =~ /^  TOKEN=(oat_\S+)$/m;
ok($token, 'a token is printed');
my $conf = slurp("$run/httpd.conf");
my ($threads) = $conf =~ /^ThreadsPerChild\s+(\d+)$/m;
my ($started) = $conf =~ /^StartServers\s+(\d+)$/m;
cmp_ok($threads * $started, '>', $conns + 1000,
    "the started processes' threads ($started x $threads) hold the attack with room to spare");
like($conf, qr/^ExtendedStatus Off$/m, 'ExtendedStatus Off (a per-request cost in every thread)');
my $ppid = slurp("$run/httpd.pid") =~ s/\s+//gr;
my ($files) = slurp("/proc/$ppid/limits") =~ /^Max open files\s+(\d+)/m;
cmp_ok($files, '>=', 8192, 'httpd may open 8,192 descriptors per process');

my ($secret) = $conf =~ m{<Location /webhook/partner>\s+BankWebhookSecret (\S+)};
my @probes = probe_files($dir, token => $token, webhook_secret => $secret);

my ($results, $uniques) = check_hold(label => "dev server ($db)", connect => "127.0.0.1:$port",
    probes => \@probes, pidfile => "$run/httpd.pid");
my @uniques = @$uniques;

# No acknowledged notice lost: every webhook probe answered 200 is stored.
ok(scalar @uniques, 'notices were acknowledged');
my $list = join ',', map { "'TRF-probe-$_'" } @uniques;
my $sql  = "SELECT count(*) FROM payment_notices WHERE transaction_reference IN ($list)";
my $stored;
if ($db eq 'sqlite3') {
    $stored = `sqlite3 -cmd '.timeout 10000' '$run/bank.db' "$sql"`;
} else {
    my $conninfo = slurp("$run/pg.conninfo") =~ s/\s+$//r;
    $stored = `psql -X -q -t -A '$conninfo' -c "$sql"`;
}
is($stored + 0, scalar @uniques, 'every acknowledged notice is stored');

done_testing();
