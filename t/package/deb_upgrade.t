# An upgrade from the previous release's package to this one on this machine's own apache2,
# with data and traffic, in the order of docs/deployment.md, "Upgrades": the previous
# release (0.2.0, built from its commit) installed and set up as its site's comment says,
# a customer signed in (a device), verified (an account) and paid to; then, while two
# clients send requests without pause (a fresh connection each: the bank list with the old
# token, a notice for the customer's account, the BVN repeat, /health, sign-in), the
# release's own steps, the new package (its postinst reloads apache2: on SQLite the new
# module serves on the previous release's schema), and bankctl migrate, bankctl check and a
# reload at once, as the doc's block says; then schema changes as a later release's
# migration makes them, under the new module; then the way back to the previous package.
# No answer is other than 2xx, no connection fails, both modules answered, every notice
# acknowledged is stored with its push, the old token and the account stay. The machine is
# put back as Bank::Deb does.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Time::HiRes ();
use Bank::Deb qw(apache_running dpkg configtest get starts $PKG);
use Bank::Test qw(slurp spew);
use Bank::Docs qw(doc_block substitute);
use Bank::Upgrade;

plan skip_all => 'the SQLite run does this (the package\'s site is SQLite); this run: '
  . $ENV{BANK_DBDRIVER}
  unless $ENV{BANK_DBDRIVER} eq 'sqlite3';
Bank::Upgrade::previous_or_skip();
plan skip_all => 'needs the sqlite3 command (the notices are read with it)' unless -x '/usr/bin/sqlite3';
Bank::Deb::machine_or_skip();
my $until;

Bank::Deb::policy_aside();

my $work = tempdir('/tmp/mod_bank-deb-upgrade.XXXXXX', CLEANUP => !$ENV{BANK_KEEP_TEST_DIR});
chmod 0755, $work;
# The packaged bankctl with its own SQL files, not the suite's checkout; /usr/bin's, not one
# an earlier make install left in /usr/local/bin.
delete @ENV{qw(BANK_CHECKOUT BANK_SQL_DIR)};

# --- the two packages ---------------------------------------------------------------------------
my ($new, $prev, $nv, $pv) = Bank::Upgrade::packages($work);

# --- the previous release, as its site's comment sets it up ----------------------------------------
my ($rc, $text) = dpkg('-i', $prev);
is($rc, 0, "dpkg -i $pv") or diag($text);
my $dbdir  = "$work/lib";
my $keydir = "$work/etc-mod_bank";
my $site   = slurp('/etc/apache2/sites-available/bank.conf');
my @steps  = $site =~ /^#\s{8}((?:install|runuser) .*)$/mg;
ok(scalar(@steps) >= 5, "$pv: its site's comment says how to make the database and the keys");
spew('/etc/apache2/sites-available/bank.conf',
    $site =~ s{/var/lib/mod_bank}{$dbdir}gr =~ s{/etc/mod_bank}{$keydir}gr);
for my $step (@steps) {
    my $cmd = $step =~ s{/var/lib/mod_bank}{$dbdir}gr =~ s{/etc/mod_bank}{$keydir}gr
      =~ s{ bankctl }{ /usr/bin/bankctl }gr;
    $text = `$cmd 2>&1`;
    is($?, 0, "$pv: $step") or diag($text);
}
spew("$keydir/identity-keys.conf",
    "BankIdentityKey k1 $keydir/keys/k1.key\nBankIdentityHashKey $keydir/keys/hash.key\n");
$text = `a2enmod bank 2>&1 && a2ensite bank 2>&1`;
is($?, 0, "$pv: a2enmod bank && a2ensite bank") or diag($text);
configtest($pv);
starts($pv);
my $u = Bank::Upgrade->new(base => 'http://127.0.0.1', host => 'bank.example.org',
    client_key => ($site =~ /^\s*BankClientKey (\S+)/m)[0],
    webhook_secret => ($site =~ m{<Location /webhook/partner>\s+BankWebhookSecret (\S+)})[0],
    dir => $work);
is($u->version, $pv, "$pv serves");

# --- data written under the previous release -------------------------------------------------------
my $ctl = "runuser -u www-data -- /usr/bin/bankctl --db sqlite:$dbdir/bank.db "
  . "--keys $keydir/identity-keys.conf";
$text = join '', map { `$ctl $_ 2>&1` } Bank::Upgrade::bankctl_args();
is($?, 0, "$pv: a customer and an identity record (its bankctl)") or diag($text);
$u->customer($pv);

# --- the upgrade, under two clients, as docs/deployment.md says --------------------------------------
my @doc = grep { !/^#/ } split /\n/, doc_block('docs/deployment.md', 'deployment-upgrade');
is(scalar @doc, 3, 'docs/deployment.md, "Upgrades": three command lines');
is($doc[0], '/usr/local/sbin/bank-backup', 'the backup first (t/api/operations/docs_backup.t runs it)');
like($doc[1], qr{^apt install \./libapache2-mod-bank_\Q$nv\E_\w+\.deb$}, 'then this release\'s package');
my $finish = substitute($doc[2], 'the migration, the check and the reload',
    '/var/lib/mod_bank' => $dbdir, ' bankctl ' => ' /usr/bin/bankctl ',
    'systemctl reload apache2' => 'service apache2 reload');    # no systemd here: the service form
$u->start;

# The release's steps before the package (CHANGELOG.md, "Upgrading from 0.2.0", 1: the keys
# to root), while 0.2.0 serves.
$text = `chown root:root $keydir/keys $keydir/keys/*.key $keydir/identity-keys.conf 2>&1`;
is($?, 0, 'the identity keys given to root') or diag($text);
sleep 1;

# The package (dpkg -i: apt install ./file.deb installs a file through dpkg; the question about
# the site changed here answered "keep", dpkg's default). Its postinst reloads apache2: on
# SQLite the new module serves on 0.2.0's schema (BANK1711).
$u->step('dpkg');
($rc, $text) = dpkg('-i', $new);
is($rc, 0, "dpkg -i $nv over $pv") or diag($text);
like($text, qr/apache2 reloaded: the new module serves/, 'the postinst reloads apache2')
  or diag($text);
$until = time + 60;
select undef, undef, undef, 0.1 until $u->version eq $nv || time > $until;
$u->step('reloaded');
is($u->version, $nv, "$nv serves on ${pv}'s schema, before the migration");
like(slurp('/var/log/apache2/error.log'), qr/BANK1711: the database's schema is version 9, older than this mod_bank's \d+ \(\Q$nv\E\): serving with the older form/,
    'and warns (BANK1711)');
sleep 2;

# The migration, the check and the reload, at once, under the new module.
$u->step('migrate');
$text = `$finish 2>&1`;
is($?, 0, $finish) or diag($text);
like($text, qr/^bankctl check: all ok$/m, 'bankctl check: all ok') or diag($text);
$u->step('migrated');
is($u->version, $nv, "$nv serves after the migration and the reload");
sleep 2;

# A later release's migration, under the new module: schema changes while the clients run
# (each makes every connection's statements fail once; the module replaces the connection and
# runs the statement, or the whole transaction, again). Whether a transaction is in flight at
# such a moment is chance here; t/unit/test_db_sqlite.c makes it happen.
$u->step('later');
for my $i (1 .. 10) {
    $text = `sqlite3 -cmd '.timeout 10000' '$dbdir/bank.db' 'CREATE TABLE upgrade_probe_$i (x INTEGER)' 2>&1`;
    is($?, 0, "a schema change under $nv ($i of 10)") or diag($text);
    select undef, undef, undef, 0.3;
}
$u->step('end');
sleep 1;
$u->stop;

# --- what the clients saw ---------------------------------------------------------------------------
my $sq = "sqlite3 -cmd '.timeout 10000' '$dbdir/bank.db'";
my $acked = $u->check(old => $pv, new => $nv,
    stored => sub { [split /\n/, `$sq 'SELECT transaction_reference FROM payment_notices'`] });
my ($mine, $pushes) = map { `$sq "$_"` + 0 } (
    'SELECT count(*) FROM payment_notices WHERE customer_id IS NOT NULL',
    'SELECT count(*) FROM push_outbox');
cmp_ok($mine, '>', $acked, 'the notices name the customer (walletId: the account)');
is($pushes, $mine, 'each with its push to the customer\'s device in the outbox');

# --- the way back (docs/deployment.md, "Upgrades"): the previous package again ---------------------
# Its module serves on the migrated schema: the migrations since only added.
($rc, $text) = dpkg('-i', $prev);
is($rc, 0, "dpkg -i $pv again (a downgrade)") or diag($text);
$text = `service apache2 reload 2>&1`;
is($?, 0, "service apache2 reload (the package of $pv does not reload by itself)") or diag($text);
$until = time + 60;
select undef, undef, undef, 0.1 until $u->version eq $pv || time > $until;
is($u->version, $pv, "$pv serves again");
my $res = $u->call(GET => '/misc/payment_banks', $u->{token});
is($res->code, 200, "$pv answers the bank list on the migrated schema, the token still valid")
  or diag($res->as_string);
$res = $u->call(POST => '/onboarding/bvn', $u->{token}, $u->{bvn});
like($res->content, qr/"accountNumber":"\Q${\ $u->{account}}\E"/, "$pv answers the BVN repeat with the account");

done_testing();
