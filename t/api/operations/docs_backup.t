# docs/deployment.md's section 7 on SQLite, as root types it: the backup script (the block
# marked docs-test: deployment-backup-sqlite) and the restore (docs-test:
# deployment-restore-sqlite), run as written with only the directories replaced
# (/usr/local/sbin, /etc/cron.d, /backup, /var/backups/mod_bank-keys, /etc/mod_bank,
# /var/lib/mod_bank) and the service lines left to the test (it stops and starts its own
# httpd around the restore). The layout is the document's: the identity keys made as
# docs/operations.md says, the database www-data's in a 0700 directory, httpd's children
# www-data. Checked: two runs while httpd serves make two copies and two keys archives, each
# 0600 and root's, in root-only 0700 directories, and leave the live database's files
# www-data's; then, with the keys gone and a customer added after the backup, the restore
# puts back the newest copy with the keys of its run: the file www-data's and 0600,
# bankctl check ok, a customer made before that backup signs in (the one made after does
# not), and a BVN record sealed before it reads back.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Test;
use Bank::BvnTest qw(next_bvn);
use Bank::Docs qw(doc_block substitute spew slurp backup_twice signin_httpd
  restored_served);

plan skip_all => "the SQLite backup (this run: $ENV{BANK_DBDRIVER}; PostgreSQL: docs_backup_pg.t)"
  unless $ENV{BANK_DBDRIVER} eq 'sqlite3';
plan skip_all => 'as root only: the document\'s steps give files to root and www-data'
  unless $> == 0;
plan skip_all => 'needs the sqlite3 shell (apt install sqlite3)' unless -x '/usr/bin/sqlite3';

my $work = $ENV{BANK_TEST_ROOT};
my $dir  = tempdir(CLEANUP => 1, DIR => $work);
chmod 0755, $dir;
mkdir "$dir/$_" for qw(etc sbin cron.d);
chmod 0755, "$dir/etc";
my $etc  = "$dir/etc/mod_bank";
my $lib  = "$dir/lib";
my $wd   = getpwnam('www-data');
my $ctl  = "$work/bin/bankctl";
local $ENV{BANK_SQL_DIR} = "$work/sql";

# The keys as docs/operations.md makes them; the database as README.md does.
my $keys = doc_block('docs/operations.md', 'operations-identity-keys') =~ s{/etc/mod_bank}{$etc}gr;
spew("$dir/keys.sh", $keys);
my $out = `sh -e '$dir/keys.sh' 2>&1`;
is($?, 0, 'the identity keys made as docs/operations.md says') or diag($out);
system('install', '-d', '-o', 'www-data', '-g', 'www-data', '-m', '0700', $lib) == 0 or die 'lib';
$out = `runuser -u www-data -- $ctl --db 'sqlite:$lib/bank.db' migrate 2>&1`;
is($?, 0, 'the database made as www-data') or diag($out);
local $ENV{BANK_CTL} = "$ctl --db 'sqlite:$lib/bank.db' --keys '$etc/identity-keys.conf'";

# httpd on that database and those keys, its children www-data as Debian's.
my ($httpd, $sign_in) = signin_httpd($dir, $etc, "$lib/bank.db");
my $h = $httpd->('before the backup');

# Data sealed with the keys: a customer and a BVN record before the first run, another
# customer between the runs, a third after them.
my $first = new_customer();
my $bvn   = next_bvn();
bankctl('bvn', 'add', '--bvn', $bvn, '--dob', '1984-02-29', '--first', 'Ada', '--last', 'Obi');
is($sign_in->($first)->code, 200, 'a customer signs in before the backup');

# --- the backup script, made and run as written, then run again ----------------------------
# The directories the backup and the restore name (the keys' first: '/backup' is in it).
my @data = ('/var/backups/mod_bank-keys' => "$dir/keys-backup", '/backup' => "$dir/backup",
    '/etc/mod_bank' => $etc, '/var/lib/mod_bank' => $lib);
my @paths = (@data, '/usr/local/sbin' => "$dir/sbin", '/etc/cron.d' => "$dir/cron.d");
my $backup = substitute(doc_block('docs/deployment.md', 'deployment-backup-sqlite'), 'backup',
    @paths);
my ($second, $third) = backup_twice($dir, $backup, 'db');
is_deeply([grep { -e $_ && (stat $_)[4] != $wd } map { "$lib/bank.db$_" } '', '-wal', '-shm'],
    [], 'the live database\'s files are still www-data\'s');
is($sign_in->($third)->code, 200, 'httpd goes on serving after the backups');

# --- the restore: the keys gone, then the block as written ---------------------------------
$h->stop;
system('rm', '-rf', $etc) == 0 or die 'rm keys';
my $restore = substitute(doc_block('docs/deployment.md', 'deployment-restore-sqlite'), 'restore',
    @data, 'bankctl check' => "$ctl check -f $dir/httpd.conf",
    'service apache2 stop'  => ': service apache2 stop',
    'service apache2 start' => ': service apache2 start');
spew("$dir/restore.sh", $restore);
$out = `sh -e '$dir/restore.sh' 2>&1`;
is($?, 0, 'the restore block runs as written') or diag($out);
like($out, qr/^ok\n/, 'the copy\'s integrity_check says ok');
is(join("\n", grep { /^FAIL/ } split /\n/, $out), '', 'bankctl check: nothing fails');
like($out, qr/^bankctl check: all ok$/m, 'bankctl check: all ok');
is(join(' ', (stat "$lib/bank.db")[4], sprintf '%04o', (stat _)[2] & 07777), "$wd 0600",
    'the restored database is www-data\'s, 0600');
is(sprintf('%04o', (stat $lib)[2] & 07777), '0700', 'in its 0700 directory');
ok(-e "$lib/before-restore/bank.db", 'the database it replaced is set aside');

restored_served($etc, $httpd, $sign_in, $second, $third, $bvn);

done_testing();
