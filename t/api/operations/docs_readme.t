# README.md's "Installing on a Debian 12 server", run as written on a copy of Debian's
# /etc/apache2: its conf-available file (the block marked docs-test: readme-debian-conf) and
# its steps (docs-test: readme-debian-steps: the identity keys, the directory, the migration, a2enmod dbd,
# a2enconf mod_bank), with only the paths, the port and the run directories replaced. The
# server must pass apache2 -t, start, answer every endpoint, and log nothing at warn or worse
# at start-up or after a graceful restart.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Test;
use Bank::Docs qw(doc_block substitute free_port run_user spew slurp exercise bad_log_lines
  debian_apache2);

plan skip_all => "README's installation is for SQLite (this run: $ENV{BANK_DBDRIVER})"
  unless $ENV{BANK_DBDRIVER} eq 'sqlite3';
plan skip_all => "needs Debian's /etc/apache2 (the apache2 package)"
  unless -e '/etc/apache2/apache2.conf' && -x '/usr/sbin/a2enmod';

my $work = $ENV{BANK_TEST_ROOT};
my $dir  = tempdir(CLEANUP => 1, DIR => $work);
chmod 0755, $dir;
my $port = free_port();
my $user = run_user();
my $root = $> == 0;

# Debian's configuration as the apache2 package ships it (whatever else the host has
# installed or enabled); its port and directories are what the test changes.
debian_apache2("$dir/apache2");
mkdir "$dir/$_" for qw(run lock log state etc);
spew("$dir/apache2/ports.conf",
    slurp("$dir/apache2/ports.conf") =~ s/^Listen 80$/Listen 127.0.0.1:$port/mr);
spew("$dir/apache2/sites-available/000-default.conf",
    slurp("$dir/apache2/sites-available/000-default.conf") =~ s/\*:80\b/*:$port/r);
local $ENV{APACHE_CONFDIR}          = "$dir/apache2";
local $ENV{APACHE_RUN_USER}         = $user;
local $ENV{APACHE_RUN_GROUP}        = (getgrgid((getpwnam($user))[3]))[0];
local $ENV{APACHE_PID_FILE}         = "$dir/run/apache2.pid";
local $ENV{APACHE_RUN_DIR}          = "$dir/run";
local $ENV{APACHE_LOCK_DIR}         = "$dir/lock";
local $ENV{APACHE_LOG_DIR}          = "$dir/log";
local $ENV{APACHE_STATE_DIRECTORY}  = "$dir/state";
local $ENV{BANK_SQL_DIR}            = "$work/sql";

# make install's bank.conf, where the README includes it from.
mkdir "$dir/apache2/mod_bank";
spew("$dir/apache2/mod_bank/bank.conf", slurp('conf/bank.conf'));

my $conf = substitute(doc_block('README.md', 'readme-debian-conf'), 'README conf',
    '/usr/lib/apache2/modules/mod_bank.so' => $ENV{BANK_MODULE},
    '/var/lib/mod_bank/bank.db'            => "$dir/lib/bank.db",
    '/etc/mod_bank/identity-keys.conf'     => "$dir/etc/mod_bank/identity-keys.conf",
    '/etc/apache2/mod_bank/bank.conf'      => "$dir/apache2/mod_bank/bank.conf");
spew("$dir/apache2/conf-available/mod_bank.conf", $conf);
my ($client_key) = $conf =~ /^BankClientKey (\S+)/m;
my ($secret)     = $conf =~ /^BankWebhookSecret (\S+)/m;

# The steps, line by line; apache2ctl and service are this test's own -t and start. Not
# as root, nothing can be given to www-data: those parts are dropped.
my @steps = grep { /\S/ && !/^\s*#/ } split /\n/, doc_block('README.md', 'readme-debian-steps');
for my $step (@steps) {
    next if $step =~ /^(apache2ctl|service apache2)\b/;
    my $cmd = $step =~ s{/var/lib/mod_bank}{$dir/lib}gr =~ s{/etc/mod_bank}{$dir/etc/mod_bank}gr
      =~ s{/etc/apache2}{$dir/apache2}gr =~ s{(^|\s)bankctl\b}{$1$work/bin/bankctl}r;
    $cmd .= " -f $dir/apache2/apache2.conf" if $step eq 'bankctl check';
    $cmd =~ s/ -o (?:root|www-data) -g (?:root|www-data)// unless $root;
    $cmd =~ s/^runuser -u www-data -- // unless $root;
    my $out = `$cmd 2>&1`;
    is($?, 0, "README step runs: $step") or diag($out);
    if ($step eq 'bankctl check') {
        is(join("\n", grep { !/^ok   / && !/^bankctl check: all ok$/ } split /\n/, $out), '',
            'bankctl check: every line ok');
        like($out, qr/^ok   schema: /m, 'bankctl check: the schema checked');
    }
}
is(sprintf('%04o', (stat "$dir/apache2/conf-available/mod_bank.conf")[2] & 07777), '0600',
    'the file with the keys is 0600');
is(sprintf('%04o', (stat "$dir/lib")[2] & 07777), '0700', 'the database directory is 0700');
ok((grep { /^a2enmod dbd$/ } @steps) && (grep { /^a2enconf mod_bank$/ } @steps),
    'README enables mod_dbd and the file');

my $h = Bank::Docs::Httpd->new(args => ['-d', "$dir/apache2", '-f', "$dir/apache2/apache2.conf"],
    port => $port, log => "$dir/log/error.log", pidfile => "$dir/run/apache2.pid");
$h->check_syntax('README');
$h->start('README') or BAIL_OUT('README configuration does not serve');

# bankctl as the README says: as root (it reads the keys, then works as the database's owner)
local $ENV{BANK_CTL} =
  "$work/bin/bankctl --db 'sqlite:$dir/lib/bank.db' --keys '$dir/etc/mod_bank/identity-keys.conf'";
exercise($h->base, 'README', client_key => $client_key, webhook_secret => $secret);
SKIP: {
    skip 'as root only: the owners', 3 unless $root;
    my $wd = getpwnam('www-data');
    is_deeply([grep { -e $_ && (stat $_)[4] != $wd } map { "$dir/lib/bank.db$_" } '', '-wal', '-shm'],
        [], 'bankctl run as root left every database file www-data\'s');
    is(join(' ', map { (stat "$dir/etc/mod_bank/keys/$_.key")[4] } qw(k1 hash)), '0 0',
        'the identity keys are root\'s');
    is(join(' ', map { sprintf '%04o', (stat "$dir/etc/mod_bank/keys/$_.key")[2] & 07777 } qw(k1 hash)),
        '0600 0600', 'the identity keys are 0600');
}
sleep 1;
is(join("\n", bad_log_lines($h->log_since(0))), '', 'README: nothing at warn or worse after a start');

my $mark = $h->log_mark;
$h->graceful('README');
exercise($h->base, 'README after a graceful restart', client_key => $client_key,
    webhook_secret => $secret);
sleep 1;
is(join("\n", bad_log_lines($h->log_since($mark))), '',
    'README: nothing at warn or worse after a graceful restart');
$h->stop;

done_testing();
