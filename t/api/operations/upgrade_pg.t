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
use File::Temp qw(tempdir);
use Bank::Test qw(slurp spew);
use Bank::Docs qw(free_port private_conf);
use Bank::Upgrade;

plan skip_all => 'PostgreSQL only (SQLite: t/package/deb_upgrade.t, with the package); this run: '
  . $ENV{BANK_DBDRIVER}
  unless $ENV{BANK_DBDRIVER} eq 'pgsql';
Bank::Upgrade::previous_or_skip();

my $dir = tempdir(CLEANUP => !$ENV{BANK_KEEP_TEST_DIR}, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
chmod 0755, $dir;
Bank::Upgrade::build_previous("$dir/prev", 'build');
my $out;
my ($pv) = slurp("$dir/prev/include/bank_version.h") =~ /^#define BANK_VERSION "([^"]+)"/m;
my ($nv) = slurp('include/bank_version.h') =~ /^#define BANK_VERSION "([^"]+)"/m;
isnt($pv, $nv, "two releases: $pv and $nv");

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
my $locations = <<'CONF';
BankClientKey upgrade-client-key
BankAccountBank "Example Bank"
BankAccountBankCode 999
<Location /auth/sign_in>
    SetHandler bank-sign-in
</Location>
<Location /onboarding/bvn>
    SetHandler bank-bvn
</Location>
<Location /misc/payment_banks>
    SetHandler bank-banks
</Location>
<Location /webhook/partner>
    SetHandler bank-webhook
    BankWebhookSecret upgrade-webhook-secret
</Location>
<Location /health>
    SetHandler bank-health
</Location>
CONF
sub conf_for {
    my ($module) = @_;
    local $ENV{BANK_MODULE} = $module;
    local $ENV{BANK_DBPARAMS} = $params;
    spew("$dir/httpd.conf", private_conf($dir, 'httpd', $port) . "LogLevel warn bank:notice\n"
          . $locations);
}
conf_for("$dir/prev/build/mod_bank.so");
my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $port,
    log => "$dir/httpd.log", pidfile => "$dir/httpd.pid");
$h->start($pv);
my $u = Bank::Upgrade->new(base => "http://127.0.0.1:$port", host => 'localhost',
    client_key => 'upgrade-client-key', webhook_secret => 'upgrade-webhook-secret', dir => $dir);
is($u->version, $pv, "$pv serves");
$u->customer($pv);

# --- the upgrade, under two clients ---------------------------------------------------------------
$u->start;
$u->step('migrate');
$out = `$new_ctl migrate 2>&1`;
is($?, 0, "$nv\'s bankctl migrate") or diag($out);
$u->step('migrated');
is($u->version, $pv, "$pv serves on the migrated schema");
sleep 2;
conf_for($ENV{BANK_MODULE});
$out = `$new_ctl check -f '$dir/httpd.conf' 2>&1`;
like($out, qr/^ok\s+schema\b/m, "bankctl check: the schema is this build's") or diag($out);
$out = `'$h->{httpd}' -t -f '$dir/httpd.conf' 2>&1`;
is($?, 0, "the configuration test passes with $nv") or diag($out);
$u->step('reload');
$h->graceful("$nv loaded by a graceful restart");
my $until = time + 60;
select undef, undef, undef, 0.1 until $u->version eq $nv || time > $until;
$u->step('reloaded');
is($u->version, $nv, "$nv serves after the restart");
sleep 3;
$u->stop;
$h->stop;

# --- what the clients saw ---------------------------------------------------------------------------
my $q = sub {
    my $sql = shift;
    return `'$ENV{BANK_PSQL}' -X -q -At -d '$url' -c "$sql"`;
};
my $acked = $u->check(old => $pv, new => $nv, driver => 'pgsql',
    stored => sub { [split /\n/, $q->('SELECT transaction_reference FROM payment_notices')] });
my ($mine, $pushes) = map { $q->($_) + 0 } (
    'SELECT count(*) FROM payment_notices WHERE customer_id IS NOT NULL',
    'SELECT count(*) FROM push_outbox');
cmp_ok($mine, '>', $acked, 'the notices name the customer (walletId: the account)');
is($pushes, $mine, 'each with its push to the customer\'s device in the outbox');

done_testing();
