# Graceful restarts lose nothing with the configuration files we ship, as they are: 8 request
# loops (GET /health, the bank list with a token, payment notices) against each while it is
# restarted gracefully 10 times (apache2 -k graceful); every request answered 200, no 503, no
# connection error, no crit line in the error log, httpd never stopped meanwhile
# (Bank::Graceful: half the loops keep their connections alive). Only what an operator
# changes is replaced (paths, ports, the database):
# - the dev server's conf/dev-httpd.conf.in, rendered and started by scripts/devserver
#   (both drivers; on PostgreSQL its throwaway cluster);
# - docs/deployment.md's production configuration (the block marked
#   docs-test: deployment-production-conf), over TLS, on the suite's PostgreSQL database;
# - the package's example site (packaging/deb/site.conf) with the module's
#   packaging/deb/bank.conf and the endpoints of conf/bank.conf, on SQLite, under Debian's
#   event MPM and under the worker MPM an operator may enable instead (the site's block for
#   each is the one in effect: its processes of its threads).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Cwd qw(getcwd);
use Bank::Test qw(:DEFAULT runs_processes mpm_block);
use Bank::Docs qw(doc_block substitute free_port spew slurp production_paths);
use Bank::Graceful qw(under_restarts);

my $top  = getcwd();    # run-tests runs the suite from the checkout
my $pg   = $ENV{BANK_DBDRIVER} eq 'pgsql';
my $work = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
chmod 0755, $work;
my $modules = Bank::Test::modules_dir();
my $c       = new_customer();
my $token   = issue_token($c->{email});

# --- the dev server, as scripts/devserver renders and starts it ------------------------------
{
    my $what = "dev server ($ENV{BANK_DBDRIVER})";
    my $run  = "$work/dev";
    my $port = free_port();
    local $ENV{PORT}         = $port;
    local $ENV{BANK_RUN_DIR} = $run;
    local $ENV{BANK_DB}      = $pg ? 'pgsql' : 'sqlite3';
    delete local $ENV{BANK_PG_PARAMS};
    delete local $ENV{BANK_WEBHOOK_HMAC_KEY};
    delete local $ENV{BANK_BVN_PROVIDER};
    delete local $ENV{BANK_PUSH_FCM_PROJECT};
    my $out = `'$top/scripts/devserver' start 2>&1`;
    is($?, 0, "$what: started") or diag($out);
    my ($dev_token) = $out =~ /^  TOKEN=(oat_\S+)$/m;
    ok($dev_token, "$what: it printed a token");
    my $h = Bank::Docs::Httpd->new(args => ['-f', "$run/httpd.conf"], port => $port,
        log => "$run/logs/error_log");
    under_restarts($h, $what, dir => $work, token => $dev_token, webhook => '/webhook/partner',
        secret => 'dev-webhook-secret');
    $out = `'$top/scripts/devserver' stop 2>&1`;
    is($?, 0, "$what: stopped") or diag($out);
}

# --- docs/deployment.md's production configuration (PostgreSQL, TLS) -------------------------
SKIP: {
    skip "docs/deployment.md's production configuration is PostgreSQL's: make test DB=pgsql", 1
      unless $pg;
    skip 'needs mod_ssl (Debian apache2)', 1 unless -e "$modules/mod_ssl.so";
    my $what = 'deployment.md production (PostgreSQL)';
    my $dir  = "$work/prod";
    mkdir $dir;
    chmod 0755, $dir;
    mkdir "$dir/$_" for qw(run log etc ssl);
    my $port = free_port();
    my $conf = doc_block('docs/deployment.md', 'deployment-production-conf');
    ok($conf =~ s/^DBDParams ".*"$/DBDParams "$ENV{BANK_DBPARAMS}"/m, "$what: DBDParams is there");
    $conf = substitute($conf, $what, production_paths($dir, $port));
    ok($conf =~ s/^(\s*Require ip)(?: [\d.\/]+)+$/$1 127.0.0.1/m, "$what: the partner's addresses");
    spew("$dir/httpd.conf", $conf);
    my ($secret) = $conf =~ /^\s*BankWebhookSecret (\S+)/m;
    my ($header, $key_file) = $conf =~ /^\s*BankWebhookSignature (\S+) sha512 file:(\S+)/m;
    spew($key_file, "partner-hmac-key-2026\n");
    chmod 0600, $key_file;
    # The suite's database knows the suite's identity keys.
    spew("$dir/etc/identity-keys.conf", slurp($ENV{BANK_TEST_KEYS}));
    chmod 0600, "$dir/etc/identity-keys.conf";
    my ($name) = $conf =~ /^ServerName (\S+)/m;
    my $out = `openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=$name -addext basicConstraints=critical,CA:FALSE -keyout $dir/ssl/$name.key -out $dir/ssl/$name.crt 2>&1`;
    is($?, 0, "$what: a self-signed certificate") or diag($out);
    chmod 0600, "$dir/ssl/$name.key";
    my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $port,
        scheme => 'https', log => "$dir/log/mod_bank-error.log", pidfile => "$dir/run/apache2.pid");
    if ($h->start($what)) {
        under_restarts($h, $what, dir => $dir, token => $token, webhook => '/webhook/partner',
            secret => $secret, hmac_header => $header, hmac_key => 'partner-hmac-key-2026');
    }
    $h->stop;
}

# --- the package's example site with the module's and the endpoints' files (SQLite) ----------
for my $mpm (qw(event worker)) {
  SKIP: {
    skip "the package's example site is SQLite's (this run: $ENV{BANK_DBDRIVER})", 1 if $pg;
    skip "no $modules/mod_mpm_$mpm.so", 1 unless -e "$modules/mod_mpm_$mpm.so";
    my $what = "package example site (SQLite, $mpm MPM)";
    my $dir  = "$work/site-$mpm";
    mkdir $dir;
    chmod 0755, $dir;
    my $port = free_port();
    # Where the package puts them: the endpoints in /usr/share/mod_bank/conf, the site in
    # sites-available, the module's file in mods-available, the identity keys in /etc/mod_bank.
    my $site = substitute(slurp('packaging/deb/site.conf'), $what,
        '<VirtualHost *:80>'                       => "<VirtualHost *:$port>",
        '/usr/share/mod_bank/conf/bank.conf'       => "$top/conf/bank.conf",
        '/etc/mod_bank/identity-keys.conf'         => $ENV{BANK_TEST_KEYS},
        '/var/lib/mod_bank/bank.db'                => $ENV{BANK_DBPARAMS});
    spew("$dir/site.conf", $site);
    my ($secret) = $site =~ /^\s*BankWebhookSecret (\S+)/m;
    my ($name)   = $site =~ /^\s*ServerName (\S+)/m;
    my %set      = mpm_block($site, $mpm);
    ok($set{StartServers} && $set{ThreadsPerChild}, "$what: the site has a block for the $mpm MPM")
      or next;
    # Debian's apache2.conf, as far as this site needs it: the server, its User (the suite's
    # database is the test server's user's), the MPM, the modules a2enmod bank enables.
    my $user = $> == 0 ? "User nobody\nGroup nogroup\n" : '';
    spew("$dir/httpd.conf", <<"CONF");
ServerRoot "$dir"
ServerName localhost
Listen 127.0.0.1:$port
PidFile "$dir/httpd.pid"
DefaultRuntimeDir "$dir"
ErrorLog "$dir/error_log"
LogLevel warn
$user
LoadModule mpm_${mpm}_module $modules/mod_mpm_$mpm.so
LoadModule authz_core_module $modules/mod_authz_core.so
LoadModule authz_host_module $modules/mod_authz_host.so
LoadModule dbd_module $modules/mod_dbd.so
LoadModule bank_module $ENV{BANK_MODULE}
Include "$top/packaging/deb/bank.conf"
Include "$dir/site.conf"
CONF
    my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $port,
        log => "$dir/error_log", pidfile => "$dir/httpd.pid");
    if ($h->start($what)) {
        # the block in effect: StartServers processes of ThreadsPerChild threads each (the
        # port answers before httpd writes its pid file)
        runs_processes(
            sub { (-e "$dir/httpd.pid" ? slurp("$dir/httpd.pid") : '') =~ /(\d+)/ ? $1 : 0 },
            $set{StartServers}, $set{ThreadsPerChild}, $what);
        under_restarts($h, $what, dir => $dir, token => $token, webhook => '/webhook/partner',
            secret => $secret, host => $name,
            $mpm eq 'event'
            ? (cuts => 'the event MPM closes idle keep-alive connections', most => 10 * 4)
            : ());
    }
    $h->stop;
  }
}

done_testing();
