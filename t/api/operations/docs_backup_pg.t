# docs/deployment.md's section 7 on PostgreSQL, as root types it, against a server of this
# test's own that accepts only TLS with a password (Bank::Docs::tls_postgres), after
# section 1's roles and migration run as written: the backup role (docs-test:
# deployment-backup-role), the backup script (docs-test: deployment-backup-pg) and the
# restore (docs-test: deployment-restore-pg), with only the hosts, the directories
# (/usr/local/sbin, /etc/cron.d, /backup, /var/backups/mod_bank-keys, /etc/mod_bank) and
# bankctl's path replaced, and the service lines left to the test (it stops and starts its own
# httpd around the restore). Checked: two runs make two dumps and two keys archives, each
# 0600 and root's, in root-only 0700 directories, the dump over verified TLS as the backup
# role, and a run whose dump is refused fails and leaves no file; then, with the keys gone
# and the database set aside as the document says, the restore: every table, sequence and
# function of the new database is bank_owner's, the runtime role has its grants back,
# bankctl migrate and check say all is well, a customer made before the newest backup signs
# in (one made after it does not), and a BVN record sealed before it reads back with the
# restored keys.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Test;
use Bank::BvnTest qw(next_bvn);
use Bank::Docs qw(doc_block substitute spew slurp backup_twice signin_httpd
  restored_served tls_postgres);

plan skip_all => 'the PostgreSQL backup: make test DB=pgsql (this run: SQLite; docs_backup.t)'
  unless $ENV{BANK_DBDRIVER} eq 'pgsql';
plan skip_all => 'as root only: the document\'s steps give files to root, www-data and postgres'
  unless $> == 0;

my $work = $ENV{BANK_TEST_ROOT};
my $dir  = tempdir(CLEANUP => 1, DIR => $work);
chmod 0755, $dir;
mkdir "$dir/$_" for qw(sbin cron.d);
my $etc  = "$dir/etc";
my $ctl  = "$work/bin/bankctl";
local $ENV{HOME} = '/root';    # a root shell's, as the operator's

my $server = tls_postgres($dir);
my ($pgport, $psql) = @$server{qw(port psql)};
my $tls = "sslmode=verify-full&sslrootcert=$etc/db-ca.pem";
my $sh  = sub {
    my ($name, $text) = @_;
    spew("$dir/$name.sh", $text);
    my $out = `sh -e '$dir/$name.sh' 2>&1`;
    return ($? >> 8, $out);
};

# --- /etc/mod_bank, the keys and section 1, as docs_deployment_pg.t makes them ------------------
system("install -d -m 0750 -o root -g www-data $etc") == 0 or die 'install -d';
system('install', '-m', '0644', "$dir/ca/ca.pem", "$etc/db-ca.pem") == 0 or die 'CA';
spew("$etc/pgpass", "*:$pgport:bank:mod_bank:change-me-runtime\n");
system('chown', 'www-data:www-data', "$etc/pgpass");
chmod 0600, "$etc/pgpass";
my ($rc, $out) = $sh->('keys',
    doc_block('docs/operations.md', 'operations-identity-keys') =~ s{/etc/mod_bank}{$etc}gr);
is($rc, 0, 'the identity keys made as docs/operations.md says') or diag($out);
my $owner_ctl = "PGPASSWORD='change-me-owner' BANK_SQL_DIR=$work/sql $ctl";
($rc, $out) = $sh->('section1', substitute(doc_block('docs/deployment.md', 'deployment-pg-roles'),
    'section 1',
    'runuser -u postgres -- psql'            => $psql,
    '@db1.internal/bank'                     => "\@localhost:$pgport/bank",
    'sslrootcert=/etc/mod_bank/'             => "sslrootcert=$etc/",
    'PGPASSWORD=\'change-me-owner\' bankctl' => $owner_ctl));
is($rc, 0, 'section 1 runs as written') or diag($out);
local $ENV{BANK_CTL} = "$owner_ctl --db 'postgresql://bank_owner\@localhost:$pgport/bank?$tls'"
  . " --keys '$etc/identity-keys.conf'";

# httpd as the runtime role over verified TLS, its children www-data (the pgpass's owner).
my ($httpd, $sign_in) = signin_httpd($dir, $etc,
    "host=localhost port=$pgport dbname=bank user=mod_bank passfile=$etc/pgpass"
      . " sslmode=verify-full sslrootcert=$etc/db-ca.pem");
my $h = $httpd->('before the backup');
my $first = new_customer();
my $bvn   = next_bvn();
bankctl('bvn', 'add', '--bvn', $bvn, '--dob', '1984-02-29', '--first', 'Ada', '--last', 'Obi');
is($sign_in->($first)->code, 200, 'a customer signs in before the backup');

# --- the backup role and script, as written; the script run again ------------------------------
($rc, $out) = $sh->('role', substitute(doc_block('docs/deployment.md', 'deployment-backup-role'),
    'backup role',
    'runuser -u postgres -- psql' => $psql,
    'db-replica.internal:5432'    => "localhost:$pgport",
    '/etc/mod_bank'               => $etc));
is($rc, 0, 'the backup role block runs as written') or diag($out);
is(join(' ', (stat "$etc/pgpass-backup")[4], sprintf '%04o', (stat _)[2] & 07777), '0 0600',
    'its password file is root\'s, 0600');
my $db = sub { my $o = `$psql -d bank -XAtc "$_[0]" 2>&1`; chomp $o; return $o };
is($db->("SELECT rolcanlogin AND pg_has_role('bank_backup', 'pg_read_all_data', 'MEMBER')"
      . " AND NOT rolsuper FROM pg_roles WHERE rolname = 'bank_backup'"), 't',
    'bank_backup logs in and reads all data, no superuser');

# The keys' directory first: '/backup' is part of it.
my @data = ('/var/backups/mod_bank-keys' => "$dir/keys-backup", '/backup' => "$dir/backup",
    '/etc/mod_bank' => $etc);
my $backup = substitute(doc_block('docs/deployment.md', 'deployment-backup-pg'), 'backup',
    @data, '/usr/local/sbin' => "$dir/sbin", '/etc/cron.d' => "$dir/cron.d",
    'db-replica.internal/bank' => "localhost:$pgport/bank");
like($backup,
    qr{pg_dump .*'postgresql://bank_backup\@[^/]+/bank\?sslmode=verify-full&sslrootcert=\Q$etc\E/db-ca\.pem&passfile=},
    'the dump connects as bank_backup over verified TLS');
my ($second, $third) = backup_twice($dir, $backup, 'dump');

# A run that fails (the backup role's password refused) says so and leaves no file.
my $pass = slurp("$etc/pgpass-backup");
spew("$etc/pgpass-backup", $pass =~ s/change-me-backup/not-the-password/r);
$out = `'$dir/sbin/bank-backup' 2>&1`;
isnt($?, 0, 'a run whose dump fails exits non-zero');
like($out, qr/password authentication failed/, 'saying why');
is(scalar(() = glob("$dir/backup/mod_bank/*")) . ' ' . scalar(() = glob("$dir/keys-backup/*")),
    '2 2', 'and leaves no file behind');
spew("$etc/pgpass-backup", $pass);

# --- the restore: httpd stopped, the keys gone, the database set aside as the text says -----
$h->stop;
system('rm', '-rf', "$etc/keys", "$etc/identity-keys.conf") == 0 or die 'rm keys';
is(scalar `$psql -XAtc 'ALTER DATABASE bank RENAME TO bank_before_restore' 2>&1`, "ALTER DATABASE\n",
    'the old database set aside');
my $restore = substitute(doc_block('docs/deployment.md', 'deployment-restore-pg'), 'restore',
    @data,
    'runuser -u postgres -- psql' => $psql,
    '@db1.internal/bank'          => "\@localhost:$pgport/bank",
    'bankctl check'               => "$ctl check -f $dir/httpd.conf",
    'service apache2 start'       => ': service apache2 start');
($rc, $out) = $sh->('restore', $restore);
is($rc, 0, 'the restore block runs as written') or diag($out);
is(join("\n", grep { /^FAIL/ } split /\n/, $out), '', 'bankctl check: nothing fails');
like($out, qr/^bankctl check: all ok$/m, 'bankctl check: all ok');

is($db->("SELECT string_agg(c.relname || ':' || pg_get_userbyid(c.relowner), ', ')"
      . " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
      . " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'S', 'v', 'm', 'p')"
      . " AND pg_get_userbyid(c.relowner) <> 'bank_owner'"), '',
    'every table and sequence of the restored database is bank_owner\'s');
cmp_ok($db->("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), '>=', 10,
    'the tables are there');
is($db->("SELECT string_agg(p.proname || ':' || pg_get_userbyid(p.proowner), ', ')"
      . " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
      . " WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> 'bank_owner'"), '',
    'every function is bank_owner\'s');
is($db->("SELECT has_table_privilege('mod_bank', 'customers', 'INSERT')"
      . " AND has_table_privilege('mod_bank', 'push_outbox', 'INSERT')"), 't',
    'the runtime role has its grants back');
like(bankctl('migrate'), qr/schema up to date/, 'bankctl migrate as the owner role: up to date');

restored_served($etc, $httpd, $sign_in, $second, $third, $bvn);

done_testing();
