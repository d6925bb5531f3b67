# The upgrade of docs/deployment.md, "Upgrades", on SQLite, with data and traffic: the
# previous release's module and bankctl (0.2.0, built from its commit) serve a database file
# of their own; a customer signs in (a device), is verified (an account) and paid to; then,
# while two clients send requests without pause (Bank::Upgrade), the configuration test
# passes with this module on the previous release's schema (on SQLite it serves there, with
# the older form of what later migrations changed: BANK1711) and bankctl check says so,
# httpd is restarted gracefully onto this module (the package's reload), this build's
# bankctl migrates under it (every open connection's statements fail once; this module
# replaces the connection and runs the statement or transaction again, where 0.2.0 answered
# 500 or 503), the device of a sign-in after the migration is kept with its session (the
# newer form, without a restart), and a last reload. No answer is other than 2xx, no
# connection fails, both modules answered, every notice acknowledged is stored with its push,
# the old token and the account stay. The package's own steps: t/package/deb_upgrade.t.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(slurp);
use Bank::Docs qw(free_port);
use Bank::Upgrade;

plan skip_all => 'SQLite only (PostgreSQL: t/api/operations/upgrade_pg.t); this run: '
  . $ENV{BANK_DBDRIVER}
  unless $ENV{BANK_DBDRIVER} eq 'sqlite3';
plan skip_all => 'needs the sqlite3 command (the notices are read with it)' unless -x '/usr/bin/sqlite3';
Bank::Upgrade::previous_or_skip();

my ($dir, $pv, $nv) = Bank::Upgrade::built_previous();
my $out;
my ($known) = slurp('include/bank_version.h') =~ /^#define BANK_SCHEMA_VERSION (\d+)$/m;

# --- a database file of its own, as the previous release made it -----------------------------------
# Made by root with the previous bankctl, then given to httpd's user (nobody when root runs
# the suite), in a directory of that user's for SQLite's -wal and -shm files.
my $dbdir = "$dir/db";
mkdir $dbdir or die "mkdir $dbdir: $!";
my $file = "$dbdir/bank.db";
my $keys = $ENV{BANK_TEST_KEYS};
my $old_ctl = "env -u BANK_CHECKOUT BANK_SQL_DIR='$dir/prev/sql' '$dir/prev/build/bankctl' "
  . "--db 'sqlite:$file' --keys '$keys'";
my $new_ctl = $ENV{BANK_CTL} =~ s/--db '[^']*'/--db 'sqlite:$file'/r;
isnt($new_ctl, $ENV{BANK_CTL}, 'this build\'s bankctl on the new database, not the suite\'s');
$out = `$old_ctl migrate 2>&1`;
is($?, 0, "$pv\'s bankctl migrates") or diag($out);
$out = join '', map { `$old_ctl $_ 2>&1` } Bank::Upgrade::bankctl_args();
is($?, 0, "$pv: a customer and an identity record (its bankctl)") or diag($out);
system('chown', '-R', 'nobody:nogroup', $dbdir) == 0 or die 'chown' if $> == 0;
chmod 0700, $dbdir;
my $sq = "sqlite3 -cmd '.timeout 10000' '$file'";
my $q = sub { my $sql = shift; my $v = `$sq "$sql"`; chomp $v; return $v };
is($q->('SELECT MAX(version) FROM schema_version'), 9, "$pv left schema version 9");

# --- the previous release's module serving it ----------------------------------------------------
my $port = free_port();
my ($h, $u) = Bank::Upgrade->own_server($dir, $port, "$dir/prev/build/mod_bank.so", $file, $pv);
$u->customer($pv);

# --- the upgrade, under two clients ---------------------------------------------------------------
$u->start;
$out = `$new_ctl check -f '$dir/httpd.conf' 2>&1`;    # 0.2.0's configuration, the same database
like($out, qr/^ok\s+schema: version 9, older than this build's $known; this module serves on it/m,
    "bankctl check before the migration: $nv serves on ${pv}'s schema") or diag($out);
$u->reload_own($h, $new_ctl, $port, $file, $nv, 'before the migration (the package\'s reload)');
like(slurp("$dir/httpd.log"), qr/BANK1711: the database's schema is version 9, older than this mod_bank's $known \(\Q$nv\E\): serving with the older form/,
    'and warns (BANK1711)');
sleep 2;
$u->step('migrate');
$out = `$new_ctl migrate 2>&1`;
is($?, 0, "$nv\'s bankctl migrate, under $nv") or diag($out);
$u->step('migrated');
is($q->('SELECT MAX(version) FROM schema_version'), $known, "schema version $known");
# A sign-in after the migration, before any restart: the device kept with its session.
my $res = $u->call(POST => '/auth/sign_in', 'upgrade-client-key',
    '{"email":"ada@example.com","password":"Ada-password-1","deviceToken":"fcm-device-2"}');
is($res->code, 200, 'a sign-in on another device after the migration');
my $session = Bank::Test::token_id(eval { JSON::PP->new->decode($res->content)->{body}{token}{token} } // '');
is($q->("SELECT token_id FROM devices WHERE device_token = 'fcm-device-2'"), $session,
    'its device is kept with its session (the newer form of the statement, no restart)');
sleep 2;
$u->step('reload again');
$h->graceful('the reload after the migration');
sleep 2;
$u->step('end');
$u->stop;
$h->stop;

# --- what the clients saw ---------------------------------------------------------------------------
my $acked = $u->check(old => $pv, new => $nv,
    stored => sub { [split /\n/, `$sq 'SELECT transaction_reference FROM payment_notices'`] });
my ($mine, $pushes) = map { $q->($_) + 0 } (
    'SELECT count(*) FROM payment_notices WHERE customer_id IS NOT NULL',
    "SELECT count(*) FROM push_outbox WHERE device_token = 'fcm-device-1'");
cmp_ok($mine, '>', $acked, 'the notices name the customer (walletId: the account)');
is($pushes, $mine, 'each with its push to the customer\'s first device in the outbox');
like(slurp("$dir/httpd.log"), qr/BANK0808: SQLite connection prepared before the schema changed/,
    'the migration replaced open connections (BANK0808)');

done_testing();
