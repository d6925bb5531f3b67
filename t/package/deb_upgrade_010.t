# An upgrade from 0.1.0's package to this one on this machine's own apache2, with data and
# traffic, as docs/deployment.md, "Upgrades", "From 0.1.0" says: a stop (0.1.0 does not serve
# on the migrated schema, and this module not on 0.1.0's). 0.1.0 (built from its commit)
# installed and set up as its example site's comment says; a customer signed in (a device),
# verified (an account) and paid to; then, while two clients send requests without pause,
# the doc's lines: apache2 stopped, the package, bankctl migrate, the identity keys
# (docs/operations.md's block) named in the site, bankctl check and the start, bankctl
# rekey. Connections are refused only while apache2 is stopped, every other answer is 2xx,
# every notice acknowledged is stored, the old token and the account stay, and no identity
# value is left plain after rekey. The machine is put back as Bank::Deb does.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Deb qw(dpkg configtest starts);
use Bank::Test qw(slurp spew);
use Bank::Docs qw(doc_block substitute);
use Bank::Upgrade;

plan skip_all => 'the SQLite run does this (the package\'s site is SQLite); this run: '
  . $ENV{BANK_DBDRIVER}
  unless $ENV{BANK_DBDRIVER} eq 'sqlite3';
Bank::Upgrade::previous_or_skip($Bank::Upgrade::FIRST);
plan skip_all => 'needs the sqlite3 command (the notices are read with it)' unless -x '/usr/bin/sqlite3';
Bank::Deb::machine_or_skip();

Bank::Deb::policy_aside();

my $work = tempdir('/tmp/mod_bank-deb-upgrade010.XXXXXX', CLEANUP => !$ENV{BANK_KEEP_TEST_DIR});
chmod 0755, $work;
delete @ENV{qw(BANK_CHECKOUT BANK_SQL_DIR)};

# --- the two packages ---------------------------------------------------------------------------
my ($new, $first, $nv, $fv) = Bank::Upgrade::packages($work, $Bank::Upgrade::FIRST);
is($fv, '0.1.0', 'the first release: 0.1.0');

# --- 0.1.0, as its example site's comment sets it up ------------------------------------------------
my ($rc, $text) = dpkg('-i', $first);
is($rc, 0, "dpkg -i $fv") or diag($text);
my $dbdir  = "$work/lib";
my $keydir = "$work/etc-mod_bank";
my $site   = slurp('/usr/share/doc/libapache2-mod-bank/examples/site.conf');
my @steps  = $site =~ /^#\s+(?:First create the database: )?((?:mkdir|runuser) .*)$/mg;
is(scalar @steps, 2, "$fv: its example site's comment says how to make the database");
spew('/etc/apache2/sites-available/bank.conf', $site =~ s{/var/lib/mod_bank}{$dbdir}gr);
for my $step (@steps) {
    my $cmd = $step =~ s{/var/lib/mod_bank}{$dbdir}gr =~ s{ bankctl }{ /usr/bin/bankctl }gr;
    $text = `$cmd 2>&1`;
    is($?, 0, "$fv: $step") or diag($text);
}
$text = `a2enmod bank 2>&1 && a2ensite bank 2>&1`;
is($?, 0, "$fv: a2enmod bank && a2ensite bank") or diag($text);
configtest($fv);
starts($fv);
my $u = Bank::Upgrade->new(base => 'http://127.0.0.1', host => 'bank.example.org',
    client_key => ($site =~ /^\s*BankClientKey (\S+)/m)[0],
    webhook_secret => ($site =~ m{<Location /webhook/partner>\s+BankWebhookSecret (\S+)})[0],
    dir => $work, health => 0);    # 0.1.0 has no /health
my $ctl = "runuser -u www-data -- /usr/bin/bankctl --db sqlite:$dbdir/bank.db";
$text = join '', map { `$ctl $_ 2>&1` } Bank::Upgrade::bankctl_args();
is($?, 0, "$fv: a customer and an identity record (its bankctl)") or diag($text);
$u->customer($fv);

# --- the upgrade, under two clients, as docs/deployment.md says --------------------------------------
my @doc = grep { !/^#/ } split /\n/, doc_block('docs/deployment.md', 'deployment-upgrade-from-0.1.0');
is(scalar @doc, 6, 'docs/deployment.md, "From 0.1.0": six command lines');
my $keys = "$keydir/identity-keys.conf";
my %line = (
    stop => substitute($doc[0], 'the stop', 'systemctl stop apache2' => 'service apache2 stop'),
    migrate => substitute($doc[2], 'the migration', '/var/lib/mod_bank' => $dbdir,
        ' bankctl ' => ' /usr/bin/bankctl '),
    mode => substitute($doc[3], 'the directory\'s mode', '/var/lib/mod_bank' => $dbdir),
    start => substitute($doc[4], 'the check and the start',
        'bankctl check' => "/usr/bin/bankctl --keys $keys check",
        'systemctl start apache2' => 'service apache2 start'),
    rekey => substitute($doc[5], 'rekey', 'bankctl --db' => "/usr/bin/bankctl --keys $keys --db",
        '/var/lib/mod_bank' => $dbdir),
);
like($doc[1], qr{^apt install \./libapache2-mod-bank_\Q$nv\E_\w+\.deb$}, 'the package: this release\'s');
$u->start;

$u->step('stop');
$text = `$line{stop} 2>&1`;
is($?, 0, $line{stop}) or diag($text);
($rc, $text) = dpkg('-i', $new);
is($rc, 0, "dpkg -i $nv over $fv") or diag($text);
like($text, qr/From \Q$fv\E, stop apache2 first/, 'the postinst says: from 0.1.0, a stop') or diag($text);
$text = `$line{migrate} 2>&1`;
is($?, 0, $line{migrate}) or diag($text);
$text = `$line{mode} 2>&1`;
is($?, 0, $line{mode}) or diag($text);
my $make_keys = substitute(doc_block('docs/operations.md', 'operations-identity-keys'),
    'the identity keys', '/etc/mod_bank' => $keydir);
$text = `$make_keys 2>&1`;
is($?, 0, 'the identity keys, as docs/operations.md makes them') or diag($text);
spew('/etc/apache2/sites-available/bank.conf',
    "Include $keys\n" . slurp('/etc/apache2/sites-available/bank.conf'));
$text = `$line{start} 2>&1`;
is($?, 0, $line{start}) or diag($text);
like($text, qr/^bankctl check: all ok$/m, 'bankctl check: all ok') or diag($text);
my $until = time + 60;
select undef, undef, undef, 0.1 until $u->version eq $nv || time > $until;
$u->step('started');
is($u->version, $nv, "$nv serves");
$text = `$line{rekey} 2>&1`;
is($?, 0, $line{rekey}) or diag($text);
sleep 2;
$u->step('end');
$u->stop;

# --- what the clients saw ---------------------------------------------------------------------------
my $sq = "sqlite3 -cmd '.timeout 10000' '$dbdir/bank.db'";
$u->check(old => $fv, new => $nv, down => ['stop', 'started'], serving => 'started',
    stored => sub { [split /\n/, `$sq 'SELECT transaction_reference FROM payment_notices'`] });
is(`$sq 'SELECT count(*) FROM bvn_records WHERE crypt_key IS NULL'` + 0, 0,
    'no identity record left plain after rekey');
is(`$sq 'SELECT count(*) FROM customers WHERE bvn IS NOT NULL AND crypt_key IS NULL'` + 0, 0,
    'no customer\'s BVN left plain');
is(`$sq 'SELECT count(*) FROM customers WHERE bvn_hash IS NOT NULL'` + 0, 1,
    'the verified customer\'s BVN sealed, with its lookup key');

done_testing();
