# The Debian package (make deb): built with dpkg-deb, lintian-clean (scripts/mkdeb fails on a
# lintian error), unpacked into a temporary root with dpkg-deb -x, enabled there with the
# real a2enmod, and run: httpd with the module, the mods-available files, the Location blocks
# and the example site the package installs, on a database made by the packaged bankctl
# from the packaged SQL files; then an endpoint is called.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Cwd ();
use File::Temp ();
use LWP::UserAgent ();
use Bank::Test qw(decode_body slurp spew free_port);

my $top = Cwd::getcwd();
my $out = `make -s deb 2>&1`;
is($?, 0, 'make deb builds the package and lintian reports no errors') or diag($out);
my ($deb) = $out =~ m{^built (build/libapache2-mod-bank_[^_]+_[a-z0-9]+\.deb)$}m;
ok($deb && -f $deb, 'libapache2-mod-bank_<version>_<arch>.deb') or diag($out);
my $arch = `dpkg --print-architecture`;
chomp $arch;
like($deb // '', qr/_\Q$arch\E\.deb$/, 'named for this architecture');
my $fields = `dpkg-deb -f $deb Package Depends Section`;
like($fields, qr/^Package: libapache2-mod-bank$/m, 'package name');
like($fields, qr/^Depends: .*apache2-api-20120211/m, 'depends on httpd\'s module ABI');
like($fields, qr/^Depends: .*libaprutil1-dbd-sqlite3/m, 'depends on an apr_dbd driver');

# --- unpacked into a temporary root ---------------------------------------------------------
my $root = File::Temp::tempdir('/tmp/mod_bank-deb.XXXXXX', CLEANUP => !$ENV{BANK_KEEP_TEST_DIR});
chmod 0755, $root;
system('dpkg-deb', '-x', $deb, $root) == 0 or BAIL_OUT("dpkg-deb -x $deb failed");
for my $f (qw(usr/lib/apache2/modules/mod_bank.so usr/bin/bankctl
    etc/apache2/mods-available/bank.load etc/apache2/mods-available/bank.conf
    usr/share/mod_bank/sql/sqlite/001_schema.sql usr/share/mod_bank/sql/postgresql/001_schema.sql
    usr/share/mod_bank/sql/seed/banks.sql usr/share/mod_bank/conf/bank.conf
    usr/share/mod_bank/monitoring/alerts.yml usr/share/mod_bank/monitoring/alerts_test.yml
    usr/share/mod_bank/monitoring/dashboard.json
    usr/share/doc/libapache2-mod-bank/copyright usr/share/doc/libapache2-mod-bank/changelog.gz
    usr/share/doc/libapache2-mod-bank/api.md usr/share/doc/libapache2-mod-bank/openapi.yaml
    usr/share/doc/libapache2-mod-bank/CHANGELOG.md etc/apache2/sites-available/bank.conf
    usr/share/man/man1/bankctl.1.gz)) {
    ok(-f "$root/$f", "installs /$f");
}
my $mon = `cd '$root/usr/share/mod_bank/monitoring' && promtool test rules alerts_test.yml 2>&1`;
is($?, 0, 'the installed alerting rules pass their installed unit tests') or diag($mon);
is(sprintf('%04o', (stat "$root/etc/apache2/sites-available/bank.conf")[2] & 07777), '0640',
    'the site (it will hold the client key): mode 0640');

# --- version, conffiles, maintainer scripts ----------------------------------------------------
my ($version) = slurp('include/bank_version.h') =~ /^#define BANK_VERSION "([^"]+)"$/m;
like($fields, qr/^Package: libapache2-mod-bank$/m, 'control file read');
is(`dpkg-deb -f $deb Version` =~ s/\s+\z//r, $version, "the package's version is BANK_VERSION ($version)");
like(`dpkg-deb -I $deb conffiles`, qr{^/etc/apache2/sites-available/bank\.conf$}m,
    'the site is a conffile (kept on remove, deleted on purge)');
for my $script (qw(postinst prerm postrm)) {
    my $text = `dpkg-deb -I $deb $script`;
    like($text, qr{^\s*\. /usr/share/apache2/apache2-maintscript-helper$}m,
        "$script uses apache2-maintscript-helper");
}
like(`dpkg-deb -I $deb prerm`, qr/apache2_invoke dissite bank.*\n.*apache2_invoke dismod bank/s,
    'prerm disables the site, then the module');

my $load = slurp("$root/etc/apache2/mods-available/bank.load");
like($load, qr/^# Depends: dbd$/m, 'bank.load: a2enmod enables mod_dbd first');
like($load, qr{^LoadModule bank_module /usr/lib/apache2/modules/mod_bank\.so$}m, 'bank.load: LoadModule');

# --- a2enmod bank, on the unpacked /etc/apache2 -----------------------------------------------
my $confdir = "$root/etc/apache2";
mkdir "$confdir/mods-enabled";
mkdir "$root/state";
system('cp', '/etc/apache2/mods-available/dbd.load', "$confdir/mods-available/") == 0
  or die 'no dbd.load on this machine (apache2 package)';
my $a2 = `APACHE_CONFDIR='$confdir' APACHE_STATE_DIRECTORY='$root/state' a2enmod bank 2>&1`;
is($?, 0, 'a2enmod bank') or diag($a2);
ok(-l "$confdir/mods-enabled/bank.load" && -l "$confdir/mods-enabled/bank.conf",
    'a2enmod enabled bank.load and bank.conf');
ok(-l "$confdir/mods-enabled/dbd.load", 'a2enmod enabled dbd (the Depends line)');

# --- the database, by the packaged bankctl from the packaged SQL files ---------------------
my $var = "$root/var/lib/mod_bank";
system('mkdir', '-p', $var);
my @as = $> == 0 ? ('runuser', '-u', 'nobody', '--') : ();
chown scalar(getpwnam 'nobody'), -1, $var if $> == 0;
# The identity keys, as site.conf's comment makes them (under $root).
my $keys = "$root/etc/mod_bank";
system('mkdir', '-p', "$keys/keys");
for my $k (qw(k1 hash)) {
    system("umask 077 && openssl rand -hex 32 >'$keys/keys/$k.key'") == 0 or die 'openssl rand';
}
spew("$keys/identity-keys.conf",
    "BankIdentityKey k1 $keys/keys/k1.key\nBankIdentityHashKey $keys/keys/hash.key\n");
# bankctl as root: it reads the keys (root's), then works as the database file's owner
my $ctl = join ' ', "$root/usr/bin/bankctl", "--db sqlite:$var/bank.db",
  "--keys $keys/identity-keys.conf";
# Its SQL directory is the package's, compiled in (make deb); here the files are under $root,
# so BANK_SQL_DIR, the documented override, points there.
like(`$root/usr/bin/bankctl --help`, qr{^  /usr/share/mod_bank/sql }m,
    'the packaged bankctl looks for the SQL files where the package puts them');
$out = `BANK_SQL_DIR='$root/usr/share/mod_bank/sql' @as $ctl migrate 2>&1`;
is($?, 0, 'packaged bankctl migrate applies the packaged SQL files') or diag($out);
$out = `$ctl customer add --email pkg\@example.com --password pkg-password --first Ada --last Obi --phone +2348012345678 2>&1`;
is($?, 0, 'bankctl customer add') or diag($out);

# --- httpd with what the package installs -----------------------------------------------------
# bank.load and the example site name the installed paths (/usr/...): here those files are
# under $root, so the two are read through a rewrite of the paths into $root.
my $port = free_port();
my $site = slurp("$root/etc/apache2/sites-available/bank.conf");
$site =~ s{<VirtualHost \*:80>}{<VirtualHost 127.0.0.1:$port>};
$site =~ s{/var/lib/mod_bank}{$var}g;
$site =~ s{^(Include(?:Optional)?) /etc/mod_bank/}{$1 $keys/}m;
$site =~ s{Include /usr/}{Include $root/usr/}g;
spew("$root/site.conf", $site);
my $loads = join '', map { my $t = slurp($_); $t =~ s{ (/usr/lib/apache2/modules/mod_bank\.so)}{ $root$1}g; $t }
  glob "$confdir/mods-enabled/*.load";
spew("$root/mods.load", $loads);
my $user = $> == 0 ? "User nobody\nGroup nogroup\n" : '';
spew("$root/httpd.conf", <<"EOF");
ServerRoot "$root"
ServerName 127.0.0.1
Listen 127.0.0.1:$port
PidFile "$root/httpd.pid"
DefaultRuntimeDir "$root"
ErrorLog "$root/error_log"
$user
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule authz_host_module /usr/lib/apache2/modules/mod_authz_host.so
Include "$root/mods.load"
Include "$confdir/mods-enabled/*.conf"
Include "$root/site.conf"
EOF
my $httpd = $ENV{APACHE_TEST_HTTPD} || '/usr/sbin/apache2';

# a2enmod bank alone (no site maps a handler, no database set): httpd starts, serves nothing
# of mod_bank, and logs no warning about a client key for a server that has no database.
(my $bare = slurp("$root/httpd.conf")) =~ s{^Include "\Q$root\E/site\.conf"\n}{}m;
spew("$root/bare.conf", $bare =~ s{ErrorLog "\Q$root\E/error_log"}{ErrorLog "$root/bare_log"}r);
$out = `$httpd -f $root/bare.conf -k start 2>&1`;
is($?, 0, 'the module enabled without a site: httpd starts') or diag($out);
my $bare_res;
Bank::OpenAPI::enabled(0);    # httpd's own page for an unmapped path: not the API's answer
for (1 .. 50) {
    $bare_res = LWP::UserAgent->new(timeout => 10)->get("http://127.0.0.1:$port/auth/sign_in");
    last unless $bare_res->header('Client-Warning');
    select undef, undef, undef, 0.1;
}
Bank::OpenAPI::enabled(1);
is($bare_res->code, 404, 'and maps no endpoint (httpd\'s own 404)');
system($httpd, '-f', "$root/bare.conf", '-k', 'stop');
for (1 .. 100) {
    last unless -e "$root/httpd.pid";
    select undef, undef, undef, 0.1;
}
like(slurp("$root/bare_log"), qr/BANK1501: mod_bank/, 'mod_bank logged its start there');
unlike(slurp("$root/bare_log"), qr/BANK0001/, 'no client key warning for a server without a database');

$out = `$httpd -f $root/httpd.conf -t 2>&1`;
is($?, 0, 'httpd -t accepts the configuration') or diag($out);
$out = `$httpd -f $root/httpd.conf -k start 2>&1`;
is($?, 0, 'httpd starts') or diag($out, -e "$root/error_log" ? slurp("$root/error_log") : '');
my $ua = LWP::UserAgent->new(timeout => 30);
my $base = "http://127.0.0.1:$port";
my $res;
for (1 .. 50) {
    $res = $ua->post("$base/auth/sign_in", 'Authorization' => 'Bearer change-me-client-key',
        'Content-Type' => 'application/json',
        Content => '{"email":"pkg@example.com","password":"pkg-password","deviceToken":"pkg"}');
    last if $res->code != 500 || $res->header('Client-Warning');
    select undef, undef, undef, 0.1;
}
is($res->code, 200, 'POST /auth/sign_in: 200 from the packaged module') or diag($res->as_string);
my $token = (decode_body($res) || {})->{body}{token}{token} // '';
my $banks = $ua->get("$base/misc/payment_banks", Authorization => "Bearer $token");
is($banks->code, 200, 'GET /misc/payment_banks with the token');
Bank::Test::http09_refused("127.0.0.1:$port", 'the example site');
Bank::Test::httpd_errors_json("127.0.0.1:$port", 'the example site');
ok(@{ (decode_body($banks) || {})->{body}{banks} || [] } >= 30, 'the seeded banks');
my $health = $ua->get("$base/health");
is($health->code, 200, 'GET /health from a local address: 200');
is((decode_body($health) || {})->{body}{version}, $version, 'GET /health: the version');
$res = $ua->post("$base/auth/sign_out", Authorization => "Bearer $token");
is($res->code, 200, 'POST /auth/sign_out: the site maps sign-out') or diag($res->as_string);
system($httpd, '-f', "$root/httpd.conf", '-k', 'stop');
for (1 .. 100) {
    last unless -e "$root/httpd.pid";
    select undef, undef, undef, 0.1;
}

done_testing();
