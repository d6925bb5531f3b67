# GET /health (handler bank-health, docs/api.md): no bearer; the version, the database, the
# identity provider's breaker and the push sender; 503 with Retry-After and the same body
# when the database cannot be reached (a server whose database directory is missing, and on
# PostgreSQL a database stopped under a running server, then started again); 405 for other
# methods; the start-up notice naming mod_bank, its version and the driver; "writes" ok, and
# on PostgreSQL "refused" with what a role granted less than the writes need lacks.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use File::Temp qw(tempdir);
use LWP::UserAgent ();
use Bank::Test;
use Bank::Docs qw(free_port private_conf slurp spew);

my ($version) = slurp('include/bank_version.h') =~ /^#define BANK_VERSION "([^"]+)"$/m;
ok($version, "the version, from include/bank_version.h ($version)");

sub health_ok {
    my ($res, $what, %want) = @_;
    is($res->code, 200, "$what: 200") or diag($res->as_string);
    like($res->header('Content-Type') // '', qr{^application/json}, "$what: JSON");
    is($res->header('Cache-Control'), 'no-store', "$what: not cached");
    my $b = (decode_body($res) || {})->{body} || {};
    is(join(',', sort keys %$b), 'database,identityProvider,push,status,version,writes',
        "$what: the body's fields");
    is($b->{writes}, 'ok', "$what: writes ok (the role may run every statement)");
    is($b->{status},   'ok',     "$what: status ok");
    is($b->{version},  $version, "$what: the version");
    is($b->{database}, 'ok',     "$what: database ok");
    like($b->{identityProvider}, $want{idp}, "$what: identityProvider");
    is($b->{push}, 'none', "$what: push none (no push sender)");
}

# --- the test server: a provider is configured (its breaker may be open from another test)
health_ok(json_request(GET => '/health'), 'GET /health', idp => qr/^(ok|circuit_open)$/);
my $res = json_request(HEAD => '/health');
is($res->code, 200, 'HEAD /health: 200');
is($res->content, '', 'HEAD /health: no body');
for my $m (qw(POST PUT DELETE)) {
    $res = json_request($m => '/health', body => {});
    assert_error($res, 405, 'E_METHOD_NOT_ALLOWED', "$m /health");
    is($res->header('Allow'), 'GET, HEAD', "$m /health: Allow");
}

# --- no database: 503, Retry-After, the same body ---------------------------------------------
Apache::TestRequest::module('bank_nodb');
$res = json_request(GET => '/health');
Apache::TestRequest::module('default');
is($res->code, 503, 'no database: 503');
is($res->header('Retry-After'), '5', 'no database: Retry-After 5');
is($res->header('Cache-Control'), 'no-store', 'no database: not cached');
my $b = (decode_body($res) || {})->{body} || {};
is($b->{status},   'unavailable', 'no database: status unavailable');
is($b->{database}, 'unavailable', 'no database: database unavailable');
is($b->{version},  $version,      'no database: the version');
is($b->{push},     'none',        'no database: push none');
unlike($res->content, qr/missing-dir|bank\.db|SELECT|schema_version/i,
    'no database: no path and no SQL in the answer');

# --- a server of its own: no provider, the start-up notice ----------------------------------
my $dir = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
chmod 0755, $dir;
my $port = free_port();
# Started as from a root shell (HOME=/root): the children, not root, drop that HOME.
local $ENV{HOME} = '/root';
spew("$dir/httpd.conf", private_conf($dir, 'httpd', $port) . <<'CONF');
LogLevel warn bank:info
<Location /health>
    SetHandler bank-health
</Location>
CONF
my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $port,
    log => "$dir/httpd.log", pidfile => "$dir/httpd.pid");
$h->start('own server') or BAIL_OUT('the health server does not start');
my $ua = LWP::UserAgent->new(timeout => 30);
health_ok($ua->get("http://127.0.0.1:$port/health"), 'no provider configured', idp => qr/^none$/);
like($h->log_since(0),
    qr/\[bank:notice\].*BANK1501: mod_bank \Q$version\E configured, database driver: \Q$ENV{BANK_DBDRIVER}\E$/m,
    'start-up notice: mod_bank, its version and the driver');
SKIP: {
    skip 'HOME=/root is only unreachable for the children when they run as another user (root)', 1
      unless $> == 0 && !(-x '/root' && (stat '/root')[2] & 01);
    like($h->log_since(0), qr/BANK1502: HOME \/root cannot be entered by this process: unset/,
        'a HOME the children cannot enter is dropped (libpq then looks in the User\'s home)');
}
my $mark = $h->log_mark;
$h->graceful('own server');
like($h->log_since($mark), qr/BANK1501: mod_bank \Q$version\E configured/,
    'start-up notice again after a graceful restart');

# --- PostgreSQL stopped under the running server, then started ------------------------------
SKIP: {
    skip 'a database stopped under a running server: PostgreSQL only (this run: SQLite, whose '
      . 'file is opened in each process)', 10
      unless $ENV{BANK_DBDRIVER} eq 'pgsql';
    my $pgdir = "$dir/pg";
    mkdir $pgdir;
    chmod 0755, $pgdir;
    local $ENV{BANK_PG_PORT} = free_port();
    my $conninfo = `$ENV{BANK_PGCLUSTER} start $pgdir 2>&1`;
    is($?, 0, 'a cluster of its own starts') or diag($conninfo);
    chomp $conninfo;
    my $url = `$ENV{BANK_PGCLUSTER} url $pgdir`;
    chomp $url;
    my $runas = $> == 0 ? 'runuser -u nobody -- ' : '';
    my $out = `BANK_SQL_DIR=$ENV{BANK_TEST_ROOT}/sql $runas $ENV{BANK_TEST_ROOT}/bin/bankctl --db '$url' migrate 2>&1`;
    is($?, 0, 'bankctl migrate on it') or diag($out);
    my $p2 = free_port();
    spew("$dir/pg.conf", private_conf($dir, 'pg', $p2) =~ s/^DBDParams .*$/DBDParams "$conninfo"/mr
      . "<Location /health>\n    SetHandler bank-health\n</Location>\n");
    my $h2 = Bank::Docs::Httpd->new(args => ['-f', "$dir/pg.conf"], port => $p2,
        log => "$dir/pg.log", pidfile => "$dir/pg.pid");
    $h2->start('PostgreSQL server');
    is($ua->get("http://127.0.0.1:$p2/health")->code, 200, 'database up: 200');
    system($ENV{BANK_PGCLUSTER}, 'stop', $pgdir);
    my $r = $ua->get("http://127.0.0.1:$p2/health");
    is($r->code, 503, 'database stopped: 503') or diag($r->as_string);
    is($r->header('Retry-After'), '5', 'database stopped: Retry-After');
    like($r->content, qr/"status":"unavailable"/, 'database stopped: status unavailable');
    system("$ENV{BANK_PGCLUSTER} start $pgdir >/dev/null");
    is($ua->get("http://127.0.0.1:$p2/health")->code, 200, 'database started again: 200');
    $h2->stop;
    system($ENV{BANK_PGCLUSTER}, 'remove', $pgdir);
}
$h->stop;

# --- PostgreSQL: a role granted less than the writes need -----------------------------------
SKIP: {
    skip 'roles: PostgreSQL only (this run: SQLite)', 6 unless $ENV{BANK_DBDRIVER} eq 'pgsql';
    (my $su = $ENV{BANK_PSQL_URL}) =~ s/\buser=\w+/user=postgres/;
    my $psql = "$ENV{BANK_PSQL} -X -q -v ON_ERROR_STOP=1 '$su'";
    my $out = `$psql -c "CREATE ROLE bank_health_probe LOGIN; GRANT USAGE ON SCHEMA public TO bank_health_probe; GRANT SELECT ON ALL TABLES IN SCHEMA public TO bank_health_probe" 2>&1`;
    is($?, 0, 'a role granted SELECT only') or diag($out);
    my $p3 = free_port();
    spew("$dir/ro.conf", private_conf($dir, 'ro', $p3)
          =~ s/^DBDParams "(.*)"$/DBDParams "$1 user=bank_health_probe"/mr
      . "<Location /health>\n    SetHandler bank-health\n</Location>\n");
    my $h3 = Bank::Docs::Httpd->new(args => ['-f', "$dir/ro.conf"], port => $p3,
        log => "$dir/ro.log", pidfile => "$dir/ro.pid");
    $h3->start('a server whose role cannot write');
    my $r = $ua->get("http://127.0.0.1:$p3/health");
    is($r->code, 200, 'role cannot write: 200 (the reads work)') or diag($r->as_string);
    my $rb = (decode_body($r) || {})->{body} || {};
    is($rb->{writes}, 'refused', 'role cannot write: writes refused');
    like($rb->{missingPrivileges} // '', qr/INSERT on payment_notices.*INSERT on push_outbox/,
        'role cannot write: what it lacks, the triggers\' writes included');
    like($h3->log_since(0), qr/BANK1503: health: the database role lacks INSERT/,
        'role cannot write: the log says it');
    $h3->stop;
    `$psql -c "DROP OWNED BY bank_health_probe; DROP ROLE bank_health_probe" 2>&1`;
}

done_testing();
