# docs/deployment.md's PostgreSQL path with TLS, as root with HOME=/root, as an operator types
# it: a PostgreSQL server of this test's own that accepts only TLS connections with a
# password (scram-sha-256) on 127.0.0.1, its certificate signed by a CA made here; the roles
# and the migration of section 1 (the block marked docs-test: deployment-pg-roles, with
# sslmode=verify-full and the CA); /etc/mod_bank with the modes section 2 prints (0750
# root:www-data, pgpass www-data 0600, the CA 0644, the partner's key root 0600); the
# production httpd.conf with its DBDParams as written, only the host list and port, the
# directories and the port of httpd replaced, and docs/push.md's two push lines added (the
# fake FCM's address and service account); bankctl check; every endpoint and every write
# path over TLS as the runtime role the document grants (a notice for a customer with a
# device: stored, its push message written and sent); an HTTP/0.9 request inside TLS
# refused with 400.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Test;
use Bank::Docs qw(doc_block substitute free_port spew slurp exercise bad_log_lines
  production_paths tls_postgres);
use Bank::Push qw(fake_start fake_stop fake_calls wait_for $PROJECT);

plan skip_all => 'the PostgreSQL path: make test DB=pgsql (this run: SQLite)'
  unless $ENV{BANK_DBDRIVER} eq 'pgsql';
plan skip_all => 'as root only: the document\'s steps give files to www-data and postgres'
  unless $> == 0;
plan skip_all => 'needs mod_ssl (Debian apache2)' unless -e '/usr/lib/apache2/modules/mod_ssl.so';

my $work = $ENV{BANK_TEST_ROOT};
my $dir  = tempdir(CLEANUP => 1, DIR => $work);
chmod 0755, $dir;
mkdir "$dir/$_" for qw(run log ssl);
my $etc    = "$dir/etc";
my $port   = free_port();
local $ENV{HOME} = '/root';    # a root shell's, as the operator's
my $ssl = sub { my $o = `openssl @_ 2>&1`; is($?, 0, "openssl $_[0]") or diag($o) };

# --- the PostgreSQL server: TLS and a password only, on 127.0.0.1, its CA in $dir/ca ------------
my $server = tls_postgres($dir);
my $pgport = $server->{port};

# --- /etc/mod_bank as section 2 prints it ---------------------------------------------------------
system("install -d -m 0750 -o root -g www-data $etc") == 0 or die 'install -d';
system('install', '-m', '0644', "$dir/ca/ca.pem", "$etc/db-ca.pem") == 0 or die 'CA';
my $deploy = slurp('docs/deployment.md');
like($deploy, qr/install -d -m 0750\s+-o root -g www-data \/etc\/mod_bank/, 'the document: /etc/mod_bank 0750 root:www-data');
my ($pgpass) = $deploy =~ /^\s+`(\*:5432:bank:mod_bank:[^`]+)`/m;
ok($pgpass, 'the document: the pgpass line');
spew("$etc/pgpass", ($pgpass // '') =~ s/:5432:/:$pgport:/r . "\n");
system('chown', 'www-data:www-data', "$etc/pgpass");
chmod 0600, "$etc/pgpass";

# --- the identity keys the configuration includes, made as docs/operations.md says ---------------
my $keys = doc_block('docs/operations.md', 'operations-identity-keys') =~ s{/etc/mod_bank}{$etc}gr;
spew("$dir/keys.sh", "set -e\n$keys");
my $out = `sh $dir/keys.sh 2>&1`;
is($?, 0, 'the identity keys made as docs/operations.md says') or diag($out);

# --- section 1: roles, database, migration with verify-full ---------------------------------------
my $psql = $server->{psql};
my $steps = substitute(doc_block('docs/deployment.md', 'deployment-pg-roles'), 'section 1',
    'runuser -u postgres -- psql'     => $psql,
    '@db1.internal/bank'              => "\@localhost:$pgport/bank",
    'sslrootcert=/etc/mod_bank/'      => "sslrootcert=$etc/",
    'PGPASSWORD=\'change-me-owner\' bankctl' =>
      "PGPASSWORD='change-me-owner' BANK_SQL_DIR=$work/sql $work/bin/bankctl");
like($steps, qr/sslmode=verify-full/, 'section 1: bankctl connects with sslmode=verify-full');
spew("$dir/section1.sh", "set -e\n$steps");
$out = `sh $dir/section1.sh 2>&1`;
is($?, 0, 'section 1 runs as written (roles, database, bankctl migrate over verified TLS)')
  or diag($out);

# --- section 2: the production httpd.conf --------------------------------------------------------
my $conf = doc_block('docs/deployment.md', 'deployment-production-conf');
$conf = substitute($conf, 'production conf',
    production_paths($dir, $port, etc => $etc),
    'host=db1.internal,db2.internal port=5432' => "host=localhost port=$pgport");
like($conf, qr/^DBDParams ".*sslmode=verify-full sslrootcert=\Q$etc\E\/db-ca\.pem.*passfile=|^DBDParams ".*passfile=.*sslmode=verify-full/m,
    'DBDParams: verify-full, the CA and the password file, as written');
ok($conf =~ s/^(\s*Require ip)(?: [\d.\/]+)+$/$1 127.0.0.1/m, "the partner's addresses");
# Push on, as docs/push.md writes it, to the fake FCM (its project, address and account).
my $fake = fake_start();
my $push = substitute(doc_block('docs/push.md', 'push-conf'), 'push',
    'BankPush fcm my-bank-app' => "BankPush fcm $PROJECT $fake->{url}",
    '/etc/mod_bank/fcm-service-account.json' => $fake->{credentials});
ok($conf =~ s/^(BankClientKey .*\n)/$1$push/m, 'push lines added beside BankClientKey');
spew("$dir/httpd.conf", $conf);
my ($client_key) = $conf =~ /^BankClientKey (\S+)/m;
my ($secret)     = $conf =~ /^\s*BankWebhookSecret (\S+)/m;
my ($sig_header, $key_file) = $conf =~ /^\s*BankWebhookSignature (\S+) sha512 file:(\S+)/m;
spew($key_file, "partner-hmac-key-2026\n");
chmod 0600, $key_file;
my ($name) = $conf =~ /^ServerName (\S+)/m;
spew("$dir/ssl/req.cnf", "[req]\ndistinguished_name = dn\nx509_extensions = ext\nprompt = no\n"
      . "[dn]\nCN = $name\n[ext]\nbasicConstraints = critical, CA:FALSE\n"
      . "subjectAltName = DNS:$name\n");
$ssl->("req -x509 -newkey rsa:2048 -nodes -days 2 -config $dir/ssl/req.cnf -keyout $dir/ssl/$name.key -out $dir/ssl/$name.crt");
chmod 0600, "$dir/ssl/$name.key";

$out = `$work/bin/bankctl check -f $dir/httpd.conf 2>&1`;
is($?, 0, 'bankctl check: every check passes') or diag($out);
like($out, qr/^ok   database \(main server\): opened pgsql .*sslmode=verify-full.* as www-data$/m,
    'bankctl check: the database over verified TLS as www-data');

# The same with a wrong password in pgpass: bankctl check says so, before any traffic.
my $right = slurp("$etc/pgpass");
spew("$etc/pgpass", $right =~ s/:[^:\n]+$/:not-the-password/mr);
$out = `$work/bin/bankctl check -f $dir/httpd.conf 2>&1`;
is($? >> 8, 1, 'bankctl check with a wrong database password: exit 1');
like($out, qr/^FAIL database \(main server\): cannot open pgsql .* as www-data: .*password authentication failed for user "mod_bank"/m,
    'bankctl check: the FAIL line says the password was refused') or diag($out);
unlike($out, qr/not-the-password|change-me-runtime/, 'bankctl check: no password printed');
spew("$etc/pgpass", $right);

my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $port, scheme => 'https',
    log => "$dir/log/mod_bank-error.log", pidfile => "$dir/run/apache2.pid");
$h->check_syntax('TLS PostgreSQL');
$h->start('TLS PostgreSQL (httpd started with HOME=/root)') or BAIL_OUT('does not serve');
local $ENV{BANK_CTL} = "PGPASSWORD='change-me-owner' BANK_SQL_DIR=$work/sql $work/bin/bankctl "
  . "--db 'postgresql://bank_owner\@localhost:$pgport/bank?sslmode=verify-full&sslrootcert=$etc/db-ca.pem' "
  . "--keys '$etc/identity-keys.conf'";
# The push message is sent before the sign-out: signing out removes the device and would
# mark a message still unsent as unregistered (docs/push.md).
my $pushed;
my $seen = exercise($h->base, 'TLS PostgreSQL', client_key => $client_key,
    webhook_secret => $secret, hmac_key => 'partner-hmac-key-2026', hmac_header => $sig_header,
    before_sign_out => sub {
        my ($device) = @_;
        $pushed = wait_for(30, sub { scalar fake_calls($fake, $device) });
    });

# The notice for the customer with a device, as the runtime role wrote it: stored, its push
# message written by the same statement, then sent (claimed and settled by the sender).
my $db = sub { my $o = `$psql -d bank -XAtc "$_[0]" 2>&1`; chomp $o; return $o };
is($db->("SELECT count(*) FROM payment_notices WHERE transaction_reference = '$seen->{reference}'"),
    1, 'the notice is stored');
ok($pushed, "the push message reaches FCM for the customer's device");
is(wait_for(10, sub {
        my $s = $db->("SELECT state FROM push_outbox WHERE device_token = '$seen->{device}'");
        $s eq 'sent' ? $s : '' }) || $db->("SELECT state FROM push_outbox WHERE device_token = '$seen->{device}'"),
    'sent', 'its outbox row is settled as sent');
# No sequence is left for the runtime role to need: every generated key is an identity column.
is($db->("SELECT string_agg(c.relname, ', ') FROM pg_class c WHERE c.relkind = 'S' AND NOT EXISTS"
      . " (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'i')"), '',
    'no sequence outside an identity column');
Bank::Test::http09_refused("127.0.0.1:$port", 'TLS PostgreSQL', tls => 1);
sleep 1;
is(join("\n", bad_log_lines($h->log_since(0))), '', 'nothing at warn or worse');
$h->stop;
fake_stop($fake);

done_testing();
