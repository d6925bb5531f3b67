# The upgrade of docs/deployment.md, "Upgrades", on PostgreSQL, with data and traffic: the
# previous release's module and bankctl (0.2.0, built from its commit) serve a database of
# their own in the suite's cluster, migrated by that bankctl; a customer signs in (a device),
# is verified (an account) and paid to; then, while two clients send requests without pause
# (Bank::Upgrade), this build's bankctl migrates (0.2.0 serves on), bankctl check passes, and
# httpd's configuration is switched to this module and restarted gracefully after its
# configuration test (what `systemctl reload apache2` runs); then the clients go on under
# this module. No answer is other than 2xx, no connection fails, both modules answered, every
# notice acknowledged is stored with its push, the old token and the account stay. The
# package's own steps (dpkg, its postinst) run on SQLite, t/package/deb_upgrade.t.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(slurp);
use Bank::Docs qw(free_port);
use Bank::Upgrade;

plan skip_all => 'PostgreSQL only (SQLite: t/package/deb_upgrade.t, with the package); this run: '
  . $ENV{BANK_DBDRIVER}
  unless $ENV{BANK_DBDRIVER} eq 'pgsql';
Bank::Upgrade::previous_or_skip();

my ($dir, $pv, $nv) = Bank::Upgrade::built_previous();
my $out;

# --- a database of its own, as the previous release made it ------------------------------------
my $db = "bank_upgrade_$$";
# The cluster's superuser (scripts/pgcluster: trust on its socket) makes it, owned by the
# suite's role.
my ($role) = $ENV{BANK_PSQL_URL} =~ /[?&]user=([^&]+)/;
my $admin = $ENV{BANK_PSQL_URL} =~ s{^postgresql:///[^?]+}{postgresql:///postgres}r
  =~ s/([?&]user=)[^&]+/${1}postgres/r;
my $psql = "'$ENV{BANK_PSQL}' -X -q -v ON_ERROR_STOP=1 -d '$admin'";
$out = `$psql -c 'CREATE DATABASE $db OWNER $role' 2>&1`;
is($?, 0, "a database of its own ($db)") or BAIL_OUT($out);
END { system("$psql -c 'DROP DATABASE IF EXISTS $db WITH (FORCE)' >/dev/null 2>&1") if $db }
my $url = $ENV{BANK_CTL_DB} =~ s{^postgresql:///[^?]+}{postgresql:///$db}r;
my $params = $ENV{BANK_DBPARAMS} =~ s/\bdbname=\S+/dbname=$db/r;
my $keys = $ENV{BANK_TEST_KEYS};
my $old_ctl = "env -u BANK_CHECKOUT BANK_SQL_DIR='$dir/prev/sql' '$dir/prev/build/bankctl' "
  . "--db '$url' --keys '$keys'";
my $new_ctl = $ENV{BANK_CTL} =~ s/--db '[^']*'/--db '$url'/r;
isnt($new_ctl, $ENV{BANK_CTL}, 'this build\'s bankctl on the new database, not the suite\'s');
$out = `$old_ctl migrate 2>&1`;
is($?, 0, "$pv\'s bankctl migrates") or diag($out);
$out = join '', map { `$old_ctl $_ 2>&1` } Bank::Upgrade::bankctl_args();
is($?, 0, "$pv: a customer and an identity record (its bankctl)") or diag($out);

# --- the previous release's module serving it ----------------------------------------------------
my $port = free_port();
my ($h, $u) = Bank::Upgrade->own_server($dir, $port, "$dir/prev/build/mod_bank.so", $params, $pv);
$u->customer($pv);

# --- the upgrade, under two clients ---------------------------------------------------------------
$u->start;
$u->step('migrate');
$out = `$new_ctl migrate 2>&1`;
is($?, 0, "$nv\'s bankctl migrate") or diag($out);
$u->step('migrated');
is($u->version, $pv, "$pv serves on the migrated schema");
sleep 2;
my $checked = $u->reload_own($h, $new_ctl, $port, $params, $nv, 'after the migration');
like($checked, qr/^ok\s+schema: version \d+ \(this build's/m, "bankctl check: the schema is this build's");
sleep 3;
$u->stop;
$h->stop;

# --- what the clients saw ---------------------------------------------------------------------------
my $q = sub {
    my $sql = shift;
    return `'$ENV{BANK_PSQL}' -X -q -At -d '$url' -c "$sql"`;
};
my $acked = $u->check(old => $pv, new => $nv,
    stored => sub { [split /\n/, $q->('SELECT transaction_reference FROM payment_notices')] });
my ($mine, $pushes) = map { $q->($_) + 0 } (
    'SELECT count(*) FROM payment_notices WHERE customer_id IS NOT NULL',
    'SELECT count(*) FROM push_outbox');
cmp_ok($mine, '>', $acked, 'the notices name the customer (walletId: the account)');
is($pushes, $mine, 'each with its push to the customer\'s device in the outbox');

done_testing();
