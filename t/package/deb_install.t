# The package on this machine's own apache2, as root: `make deb`, then dpkg installs it
# (nothing enabled, apache2 starts), the site's steps enable it (it serves /health and
# sign-in) and, switched to the worker MPM as docs/deployment.md says, serves with the site's
# worker block (then back to the event MPM), dpkg removes it (site and module disabled,
# apache2 starts), installs it again (what the removal disabled is enabled again), then
# purges it (no file, link, state or include of the package left, apache2 starts). `apache2ctl configtest` after every step.
# Only the database and key paths in the site are replaced (directories of this test's own). The
# machine is put back as it was: /etc/apache2 and /var/lib/apache2 compared with a copy
# taken first, apache2 stopped unless it was running.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Deb qw(apache_running dpkg configtest get starts links_to_bank $PKG $PIDFILE);
use Bank::Test qw(decode_body slurp spew runs_processes mpm_block);
use Bank::Docs qw(doc_block);
use Bank::Hold qw(probe_files check_hold);

plan skip_all => 'the SQLite run does this (the package\'s site is SQLite); this run: '
  . $ENV{BANK_DBDRIVER}
  unless $ENV{BANK_DBDRIVER} eq 'sqlite3';
Bank::Deb::machine_or_skip();
my $pkg = $PKG;
my $pidfile = $PIDFILE;

my $out = `make -s deb 2>&1`;
is($?, 0, 'make deb') or BAIL_OUT($out);
my ($deb) = $out =~ m{^built (build/\S+\.deb)$}m;

my $data = tempdir('/tmp/mod_bank-deb-db.XXXXXX', CLEANUP => 1);
chmod 0755, $data;
my $dbdir = "$data/lib";
my $keydir = "$data/etc-mod_bank";

# "Holding connections" (docs/deployment.md): each attack of flood_size() against the site as
# Debian's apache2 runs it, while a customer (a token from the packaged bankctl), the partner
# and /health are answered; every notice acknowledged meanwhile is stored.
my $flood_token;
sub holds {
    my ($what) = @_;
    SKIP: {
        skip 'build/flood is not built (make build/flood)', 1 unless -x 'build/flood';
        my $ctl = "env -u BANK_CHECKOUT -u BANK_SQL_DIR /usr/bin/bankctl "
          . "--db sqlite:$dbdir/bank.db --keys $keydir/identity-keys.conf";
        if (!$flood_token) {
            my $t = `$ctl customer add --email flood\@example.com --password flood-password --first Flood --last Probe --phone +2348000000001 2>&1`;
            is($?, 0, "$what: a customer for the probes") or diag($t);
            $flood_token = `$ctl token issue --email flood\@example.com 2>&1` =~ s/\s+$//r;
        }
        like($flood_token, qr/^oat_/, "$what: a token for the probes");
        my ($secret) = slurp('/etc/apache2/sites-available/bank.conf')
          =~ m{<Location /webhook/partner>\s+BankWebhookSecret (\S+)};
        my $dir = tempdir('/tmp/mod_bank-deb-flood.XXXXXX', CLEANUP => 1);
        my @probes = probe_files($dir, token => $flood_token, webhook_secret => $secret);
        my (undef, $uniques) = check_hold(label => $what, connect => '127.0.0.1:80',
            sni => 'bank.example.org', probes => \@probes, pidfile => $pidfile);
        my $sql = 'SELECT count(*) FROM payment_notices WHERE transaction_reference IN ('
          . join(',', map { "'TRF-probe-$_'" } @$uniques) . ')';
        is(Bank::Deb::crashes(), '', "$what: no apache2 child crashed under the attacks");
        cmp_ok(scalar @$uniques, '>', 0, "$what: notices were acknowledged under the attacks");
        is(`sqlite3 -cmd '.timeout 10000' '$dbdir/bank.db' "$sql"` + 0, scalar @$uniques,
            "$what: every notice acknowledged under the attacks is stored");
    }
}

# --- install: nothing enabled --------------------------------------------------------------------
my ($rc, $text) = dpkg('-i', $deb);
is($rc, 0, "dpkg -i $deb") or diag($text);
configtest('installed');
isnt(system('a2query -q -m bank'), 0, 'installed: the module is not enabled');
isnt(system('a2query -q -s bank'), 0, 'installed: the site is not enabled');
ok(-e '/etc/apache2/sites-available/bank.conf', 'installed: sites-available/bank.conf');
starts('installed');

# --- the site's own steps (its comment), the database in a directory of the test's own ------------
my $site = slurp('/etc/apache2/sites-available/bank.conf');
like($site, qr{^#\s+install -d -o www-data -g www-data -m 0700 /var/lib/mod_bank$}m,
    'the site says how to make the database directory');
like($site, qr{^#\s+install -d -m 0750 -o root -g www-data /etc/mod_bank\n#\s+install -d -m 0700 -o root -g root /etc/mod_bank/keys$}m,
    'the site says how to make the identity keys\' directories');
spew('/etc/apache2/sites-available/bank.conf',
    $site =~ s{/var/lib/mod_bank}{$dbdir}gr =~ s{/etc/mod_bank}{$keydir}gr);
system('install', '-d', '-o', 'www-data', '-g', 'www-data', '-m', '0700', $dbdir) == 0
  && system('install', '-d', '-o', 'root', '-g', 'www-data', '-m', '0750', $keydir) == 0
  && system('install', '-d', '-o', 'root', '-g', 'root', '-m', '0700', "$keydir/keys") == 0
  or die 'install -d';
# The identity keys as the site's comment makes them (owner-only, root's).
for my $k ('k1', 'hash') {
    system('sh', '-c', "umask 077 && openssl rand -hex 32 >$keydir/keys/$k.key") == 0 or die "key $k";
}
spew("$keydir/identity-keys.conf",
    "BankIdentityKey k1 $keydir/keys/k1.key\nBankIdentityHashKey $keydir/keys/hash.key\n");
# The packaged bankctl with its own SQL directory (not the suite's checkout).
$text = `env -u BANK_CHECKOUT -u BANK_SQL_DIR runuser -u www-data -- /usr/bin/bankctl --db sqlite:$dbdir/bank.db migrate 2>&1`;
is($?, 0, 'the packaged bankctl migrates as www-data') or diag($text);
$text = `a2enmod bank 2>&1 && a2ensite bank 2>&1`;
is($?, 0, 'a2enmod bank && a2ensite bank') or diag($text);
configtest('enabled');
$text = `env -u BANK_CHECKOUT -u BANK_SQL_DIR /usr/bin/bankctl check 2>&1`;
is($?, 0, 'enabled: bankctl check (Debian\'s apache2.conf) passes') or diag($text);
like($text, qr/^ok   database \(<VirtualHost \*:80> in \/etc\/apache2\/sites-enabled\/bank\.conf\): opened sqlite3 .* as www-data$/m,
    'enabled: bankctl check opened the site\'s database as www-data');
starts('enabled');
my $res = get('/health');
is($res->code, 200, 'enabled: GET /health (Host: bank.example.org) answers 200') or diag($res->as_string);
like($res->content, qr/"status":"ok"/, 'enabled: status ok');
is(get('/auth/sign_in')->code, 405, 'enabled: /auth/sign_in is mod_bank\'s (405 for GET)');
like(slurp('/var/log/apache2/error.log'), qr/BANK1501: mod_bank \S+ configured, database driver: sqlite3/,
    'enabled: the start-up notice in Debian\'s error log');
holds('the site under the event MPM');

# --- the worker MPM, as docs/deployment.md switches the site to it, and back ------------------------
my $switch = doc_block('docs/deployment.md', 'deployment-site-worker');
chomp $switch;
# systemctl restart: this test's own stop and start, as Debian's init script does them
ok($switch =~ s/ && systemctl restart apache2$//, 'the switch restarts apache2 (not a reload)')
  or BAIL_OUT("docs/deployment.md's switch is not as this test runs it: $switch");
$text = `$switch 2>&1`;
is($?, 0, "worker: $switch") or diag($text);
is(system('a2query -q -m mpm_worker'), 0, 'worker: a2query says mpm_worker is enabled');
configtest('worker');
starts('worker');
my %set = mpm_block($site, 'worker');
runs_processes(\&apache_running, $set{StartServers}, $set{ThreadsPerChild},
    "worker: the site's worker block");
like(slurp("/proc/" . apache_running() . "/maps"), qr{/mod_mpm_worker\.so$}m, 'worker: the worker MPM runs');
$res = get('/health');
is($res->code, 200, 'worker: GET /health answers 200') or diag($res->as_string);
holds('the site under the worker MPM');
my ($back) = slurp('docs/deployment.md') =~ /^`(a2dismod mpm_worker && a2enmod mpm_event) && systemctl restart apache2` goes back\.$/m;
ok($back, 'docs/deployment.md says how to go back to the event MPM')
  or BAIL_OUT('no way back to the event MPM in docs/deployment.md');
$text = `$back 2>&1`;
is($?, 0, "back: $back") or diag($text);
configtest('back to event');
starts('back to event');
like(slurp("/proc/" . apache_running() . "/maps"), qr{/mod_mpm_event\.so$}m, 'back: the event MPM runs');
my %ev = mpm_block($site, 'event');
runs_processes(\&apache_running, $ev{StartServers}, $ev{ThreadsPerChild},
    "back: the site's event block");

# --- remove: apache2 keeps starting ------------------------------------------------------------------
($rc, $text) = dpkg('-r', $pkg);
is($rc, 0, "dpkg -r $pkg") or diag($text);
is(join(' ', links_to_bank()), '', 'removed: no enabled link to bank.load, bank.conf or the site');
ok(!-e '/usr/lib/apache2/modules/mod_bank.so', 'removed: the module is gone');
ok(-e '/etc/apache2/sites-available/bank.conf', 'removed: the site (a conffile) stays until purge');
configtest('removed');
$res = starts('removed');
Bank::OpenAPI::enabled(0);    # httpd's own 404 page: not the API's answer
is(get('/health')->code, 404, 'removed: /health is no longer mapped');
Bank::OpenAPI::enabled(1);

# --- installed again: what the removal disabled comes back ---------------------------------------------
($rc, $text) = dpkg('-i', $deb);
is($rc, 0, 'dpkg -i again') or diag($text);
is(system('a2query -q -m bank'), 0, 'reinstalled: the module is enabled again');
is(system('a2query -q -s bank'), 0, 'reinstalled: the site is enabled again');
configtest('reinstalled');
starts('reinstalled');
is(get('/health')->code, 200, 'reinstalled: GET /health answers 200');

# --- purge: nothing of ours left ---------------------------------------------------------------------------
system('apache2ctl', 'stop');
for (1 .. 100) { last unless apache_running(); select undef, undef, undef, 0.1 }
($rc, $text) = dpkg('-P', $pkg);
is($rc, 0, "dpkg -P $pkg") or diag($text);
is(join(' ', links_to_bank()), '', 'purged: no link of ours');
my @left = grep { -e $_ || -l $_ } ('/etc/apache2/mods-available/bank.load',
    '/etc/apache2/mods-available/bank.conf', '/etc/apache2/sites-available/bank.conf',
    '/usr/share/mod_bank', '/usr/bin/bankctl', '/usr/share/doc/libapache2-mod-bank');
is(join(' ', @left), '', 'purged: no file of ours');
is(`grep -rls 'mod_bank\\|bank_module' /etc/apache2`, '', 'purged: no include or load of ours in /etc/apache2');
is(`find /var/lib/apache2 -name bank`, '', 'purged: apache2-maintscript-helper keeps no state of ours');
configtest('purged');
starts('purged');
system('apache2ctl', 'stop');

done_testing();
