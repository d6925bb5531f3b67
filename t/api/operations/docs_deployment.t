# docs/deployment.md's production httpd.conf (the block marked
# docs-test: deployment-production-conf), run as written: TLS with a self-signed key made
# here, PostgreSQL under `make test DB=pgsql` and, on SQLite, with its database section
# replaced by the block marked docs-test: deployment-sqlite-db. Only the placeholders the
# document lists are replaced (port, directories, mod_bank.so, DBDParams, the partner's
# addresses). The server must pass apache2 -t, start, answer every endpoint over TLS, refuse
# an HTTP/0.9 request inside TLS with 400 (HttpProtocolOptions Require1.0), and log
# nothing at warn or worse at start-up or after a graceful restart.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Test;
use Bank::Docs qw(doc_block substitute free_port run_user spew slurp exercise bad_log_lines
  production_paths);
use Bank::Hold qw(probe_files check_hold);
use LWP::UserAgent ();

plan skip_all => 'needs mod_ssl (Debian apache2)'
  unless -e '/usr/lib/apache2/modules/mod_ssl.so';
my $pg   = $ENV{BANK_DBDRIVER} eq 'pgsql';
my $what = $pg ? 'deployment (PostgreSQL)' : 'deployment (SQLite)';
diag('the PostgreSQL variant of this file runs under make test DB=pgsql') unless $pg;
my $work = $ENV{BANK_TEST_ROOT};
my $dir  = tempdir(CLEANUP => 1, DIR => $work);
chmod 0755, $dir;
mkdir "$dir/$_" for qw(run log etc ssl lib);
my $port = free_port();
my $root = $> == 0;

my $conf = doc_block('docs/deployment.md', 'deployment-production-conf');
if (!$pg) {
    my $sqlite = doc_block('docs/deployment.md', 'deployment-sqlite-db');
    ok($conf =~ s/^# ---- the database: PostgreSQL.*?(?=^# ----)/$sqlite\n/ms,
        "$what: the PostgreSQL section is there to replace");
} else {
    ok($conf =~ s/^DBDParams ".*"$/DBDParams "$ENV{BANK_DBPARAMS}"/m,
        "$what: placeholder DBDParams is there");
}
$conf = substitute($conf, $what,
    production_paths($dir, $port),
    $pg ? () : ('/var/lib/mod_bank' => "$dir/lib"));
ok($conf =~ s/^(\s*Require ip)(?: [\d.\/]+)+$/$1 127.0.0.1/m,
    "$what: placeholder the partner's addresses is there");
spew("$dir/httpd.conf", $conf);

my ($client_key) = $conf =~ /^BankClientKey (\S+)/m;
my ($secret)     = $conf =~ /^\s*BankWebhookSecret (\S+)/m;
my ($sig_header, $key_file) = $conf =~ /^\s*BankWebhookSignature (\S+) sha512 file:(\S+)/m;
ok($sig_header && $key_file, "$what: the webhook's HMAC key is read from a file");

# The partner's key: printable characters a token68 rule would refuse; owner-only, as the
# document says.
my $hmac_key = q{pk_live:"2026"/#!$};
spew($key_file, "$hmac_key\n");
chmod 0600, $key_file;

# A self-signed certificate for the document's ServerName; not a CA certificate (mod_ssl
# warns about one).
my ($name) = $conf =~ /^ServerName (\S+)/m;
spew("$dir/ssl/req.cnf", "[req]\ndistinguished_name = dn\nx509_extensions = ext\nprompt = no\n"
      . "[dn]\nCN = $name\n[ext]\nbasicConstraints = critical, CA:FALSE\n"
      . "keyUsage = digitalSignature, keyEncipherment\nextendedKeyUsage = serverAuth\n"
      . "subjectAltName = DNS:$name\n");
my $out = `openssl req -x509 -newkey rsa:2048 -nodes -days 2 -config $dir/ssl/req.cnf -keyout $dir/ssl/$name.key -out $dir/ssl/$name.crt 2>&1`;
is($?, 0, "$what: openssl makes a key and certificate") or diag($out);
chmod 0600, "$dir/ssl/$name.key";

# The identity keys, as docs/operations.md makes them: root's, owner-only; bankctl runs as
# root, reads them, then works as the SQLite file's owner.
mkdir "$dir/etc/keys";
for my $k (qw(k1 hash)) {
    system("umask 077 && openssl rand -hex 32 >'$dir/etc/keys/$k.key'") == 0 or die 'openssl rand';
}
spew("$dir/etc/identity-keys.conf",
    "BankIdentityKey k1 $dir/etc/keys/k1.key\nBankIdentityHashKey $dir/etc/keys/hash.key\n");
chmod 0600, "$dir/etc/identity-keys.conf";
# On PostgreSQL the suite's database already knows the suite's hash key: these keys are used
# for this server's start only where the database is its own (SQLite).
spew("$dir/etc/identity-keys.conf", slurp($ENV{BANK_TEST_KEYS})) if $pg;
# Rows other tests wrote straight into the suite's database in the plain form of older
# versions would be counted at warn when this server starts: encrypted first.
bankctl('rekey') if $pg;

if (!$pg) {
    # The database as the document says: its file and directory belong to www-data.
    my $runas = $root ? 'runuser -u www-data -- ' : '';
    system('chown', 'www-data:www-data', "$dir/lib") if $root;
    local $ENV{BANK_SQL_DIR} = "$work/sql";
    my $m = `${runas}$work/bin/bankctl --db sqlite:$dir/lib/bank.db migrate 2>&1`;
    is($?, 0, "$what: bankctl migrate as www-data") or diag($m);
}
local $ENV{BANK_CTL} = $pg ? $ENV{BANK_CTL}
  : "$work/bin/bankctl --db 'sqlite:$dir/lib/bank.db' --keys '$dir/etc/identity-keys.conf'";

# On PostgreSQL this server counts failed sign-ins in the suite's shared database, where the
# files before this one failed sign-ins from 127.0.0.1 too, within BankSignInThrottle's window:
# the document's server starts with the address budget a new server has.
db_exec("DELETE FROM throttle_counts WHERE scope = 'address' AND subject = '127.0.0.1'") if $pg;

my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $port, scheme => 'https',
    log => "$dir/log/mod_bank-error.log", pidfile => "$dir/run/apache2.pid");
$h->check_syntax($what);
$h->start($what) or BAIL_OUT("$what: the production configuration does not serve");

my %keys = (client_key => $client_key, webhook_secret => $secret, hmac_key => $hmac_key,
    hmac_header => $sig_header);
exercise($h->base, $what, %keys);
Bank::Test::http09_refused("127.0.0.1:$port", "$what over TLS", tls => 1);
Bank::Test::httpd_errors_json("127.0.0.1:$port", "$what over TLS", tls => 1);

# "The client's address": six wrong passwords for one e-mail, each with another
# X-Forwarded-For, from 127.0.0.$from; the codes. BankSignInThrottle is 5 per (e-mail,
# address) in the configuration.
sub forwarded_tries {
    my ($from) = @_;
    my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => 30, local_address => "127.0.0.$from",
        ssl_opts => { verify_hostname => 0, SSL_verify_mode => 0 });
    my $c = new_customer();
    return join ' ', map {
        json_request(POST => $h->base . '/auth/sign_in', ua => $ua,
            body => { email => $c->{email}, password => 'wrong', deviceToken => 'xff-' . unique() },
            headers => { Authorization => "Bearer $client_key", 'X-Forwarded-For' => "198.51.100.$_" })->code
    } 1 .. 6;
}
unlike($conf, qr/^\s*RemoteIP(?:Header|InternalProxy|TrustedProxy)\b/m,
    "$what: TLS ends in httpd: no forwarded header is trusted from any address");
is(forwarded_tries(1), '400 400 400 400 400 429',
    "$what: X-Forwarded-For is not trusted (TLS ends in httpd): one client's budget");
sleep 1;
is(join("\n", bad_log_lines($h->log_since(0))), '', "$what: nothing at warn or worse after a start");

# "The server's share of the CPUs": the command as written weights httpd's session; a
# graceful restart keeps it (the same parent, the same session).
my $share = Bank::Test::unweighable();
my $pid = slurp("$dir/run/apache2.pid") =~ s/\s+//gr;
SKIP: {
    skip $share, 2 if $share;
    my $cmd = substitute(doc_block('docs/deployment.md', 'deployment-cpu-share'), $what,
        '/run/apache2' => "$dir/run");
    my $out = `sh -c '$cmd' 2>&1`;
    is($?, 0, "$what: the CPU share command runs as written") or diag($out);
    like(slurp("/proc/$pid/autogroup"), qr/ nice -5$/m, "$what: httpd's session has the weight of nice -5");
}

my $mark = $h->log_mark;
$h->graceful($what);
SKIP: {
    skip $share, 1 if $share;
    like(slurp("/proc/$pid/autogroup"), qr/ nice -5$/m, "$what: the weight kept by a graceful restart");
}
exercise($h->base, "$what after a graceful restart", %keys);
sleep 1;
is(join("\n", bad_log_lines($h->log_since($mark))), '',
    "$what: nothing at warn or worse after a graceful restart");

# "Holding connections": each attack over TLS (flood_size(): 3,000 connections for 15 s here,
# 10,000 for 60 s under scripts/bench flood) while a customer, the partner and a load
# balancer are answered; every notice acknowledged meanwhile is stored.
SKIP: {
    skip 'build/flood is not built (make build/flood)', 1 unless -x 'build/flood';
    my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => 30,
        ssl_opts => { verify_hostname => 0, SSL_verify_mode => 0 });
    my $c   = new_customer();
    my $res = json_request(POST => $h->base . '/auth/sign_in', ua => $ua,
        body => { email => $c->{email}, password => $c->{password}, deviceToken => 'flood-' . unique() },
        headers => { Authorization => "Bearer $client_key" });
    my $token = ((decode_body($res) || {})->{body} || {})->{token}{token} // '';
    like($token, qr/^oat_/, "$what: a token for the probes");
    my @probes = probe_files($dir, token => $token, webhook_secret => $secret,
        hmac_key => $hmac_key, hmac_header => $sig_header);
    my (undef, $uniques) = check_hold(label => $what, connect => "127.0.0.1:$port", tls => 1,
        sni => $name, probes => \@probes, pidfile => "$dir/run/apache2.pid");
    my $sql = 'SELECT count(*) FROM payment_notices WHERE transaction_reference IN ('
      . join(',', map { "'TRF-probe-$_'" } @$uniques) . ')';
    my $stored = $pg ? db_value($sql) : `sqlite3 -cmd '.timeout 10000' '$dir/lib/bank.db' "$sql"`;
    cmp_ok(scalar @$uniques, '>', 0, "$what: notices were acknowledged under the attacks");
    is($stored + 0, scalar @$uniques, "$what: every notice acknowledged under the attacks is stored");
}

# The variant for an HTTP-speaking proxy: its lines added, the proxy at 127.0.0.1. From the
# listed proxy each forwarded address has its own budget; from another address the header is
# ignored.
my $proxy = substitute(doc_block('docs/deployment.md', 'deployment-http-proxy'), $what,
    '10.0.0.10 10.0.0.11' => '127.0.0.1', '/usr/lib/apache2/modules' => Bank::Test::modules_dir());
spew("$dir/httpd.conf", "$conf
$proxy");
$h->check_syntax("$what with the HTTP proxy's lines");
$h->graceful("$what with the HTTP proxy's lines");
is(forwarded_tries(1), '400 400 400 400 400 400',
    "$what, behind an HTTP proxy: X-Forwarded-For from the listed proxy is each client's address");
is(forwarded_tries(2), '400 400 400 400 400 429',
    "$what, behind an HTTP proxy: X-Forwarded-For from an address not listed is ignored");
$h->stop;

done_testing();
