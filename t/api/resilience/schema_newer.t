# A database migrated by a later release (docs/deployment.md, "Upgrades"): when the migrations
# since only added, this module serves on it and says so (BANK1709); when one of them
# requires a newer module (schema_version.requires), httpd refuses to start and its
# configuration test fails, naming the versions (BANK1708), instead of serving wrong answers;
# a restart signalled without the test keeps the server up, and the endpoints that use the
# database answer 503 (health still 200). A schema older than this module's (a package
# upgraded before bankctl migrate ran; on SQLite, one older than the previous release's) is
# refused the same way (BANK1710): the configuration test fails, so the reload that would
# bring this module to it is refused and the running module keeps serving.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use LWP::UserAgent ();
use Bank::Test qw(:DEFAULT spew slurp);
use Bank::Docs qw(free_port private_conf);

my $httpd = Apache::Test::vars('httpd');
my $dir   = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
chmod 0755, $dir;
my ($known) = slurp('include/bank_version.h') =~ /^#define BANK_SCHEMA_VERSION (\d+)$/m;
my $port = free_port();
spew("$dir/httpd.conf", private_conf($dir, 'httpd', $port)
      . "LogLevel warn bank:notice\n<Location /health>\n    SetHandler bank-health\n</Location>\n"
      . "<Location /misc/payment_banks>\n    SetHandler bank-banks\n</Location>\n");
my $log = sub { -e "$dir/httpd.log" ? slurp("$dir/httpd.log") : '' };
my $at  = "'2026-11-28T00:00:00.000Z'";
END { db_exec('DELETE FROM schema_version WHERE version > ' . ($known + 0)) if $known }

# --- newer, its migrations only added: serving ------------------------------------------------
my $newer = $known + 1;
db_exec("INSERT INTO schema_version (version, applied_at) VALUES ($newer, $at)");
my $out = `'$httpd' -f '$dir/httpd.conf' -t 2>&1`;
is($?, 0, 'a newer schema that only added: apache2 -t passes');
is($out, "Syntax OK\n", 'and says only Syntax OK');
my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $port,
    log => "$dir/httpd.log", pidfile => "$dir/httpd.pid");
$h->start('a newer schema that only added');
is(LWP::UserAgent->new(timeout => 30)->get("http://127.0.0.1:$port/health")->code, 200,
    'it serves');
like($log->(), qr/BANK1709: the database's schema is version $newer, newer than this mod_bank's $known; the migrations since only added: serving/,
    'the log says the schema is newer and why it serves');

# A later migration requires a newer module; a graceful restart signalled without the test.
db_exec("UPDATE schema_version SET requires = $newer WHERE version = $newer");
$h->graceful('a restart on a schema that requires a newer module');
my $ua = LWP::UserAgent->new(timeout => 30);
is($ua->get("http://127.0.0.1:$port/health")->code, 200, 'the server is still up: /health 200');
my $token = issue_token(new_customer()->{email});
my $res = json_request(GET => "http://127.0.0.1:$port/misc/payment_banks",
    headers => { Authorization => "Bearer $token" });
assert_error($res, 503, 'E_UNAVAILABLE', 'the bank list on a schema it cannot serve on');
is($res->header('Retry-After'), '60', 'with Retry-After');
like($log->(), qr/BANK1708: .*a restart signalled without the configuration test/,
    'the log says why');
$h->stop;
sleep 1;
db_exec("UPDATE schema_version SET requires = NULL WHERE version = $newer");

# --- one migration requires a newer module: refused ------------------------------------------
db_exec("UPDATE schema_version SET requires = $newer WHERE version = $newer");
$out = `'$httpd' -f '$dir/httpd.conf' -t 2>&1`;
isnt($? >> 8, 0, 'a schema that requires a newer module: apache2 -t fails');
like($out, qr/BANK1708: the database's schema is version $newer and needs a mod_bank that knows schema $newer or later; this one \(\S+\) knows $known/,
    'naming the versions') or diag($out);
unlink "$dir/httpd.log";
$out = `timeout 20 '$httpd' -f '$dir/httpd.conf' -DFOREGROUND 2>&1`;
my $rc = $? >> 8;
isnt($rc, 0, 'httpd refuses to start');
isnt($rc, 124, 'at once (not stopped by the timeout)');
like($out . $log->(), qr/BANK1708: .*refusing to start/, 'saying why');

# --- older: bankctl migrate first ------------------------------------------------------------
# PostgreSQL: any older schema. SQLite: one older than the previous release's (from that
# one on it serves, BANK1711: t/api/operations/upgrade_sqlite.t).
db_exec("UPDATE schema_version SET requires = NULL WHERE version = $newer");
db_exec("DELETE FROM schema_version WHERE version = $newer");
my ($oldest) = slurp('include/bank_version.h') =~ /^#define BANK_SCHEMA_SQLITE_OLDEST (\d+)$/m;
my $older = $ENV{BANK_DBDRIVER} eq 'sqlite3' ? $oldest - 1 : $known - 1;
my @rows = split /\n/, db_value("SELECT CAST(version AS TEXT) || '|' || CAST(applied_at AS TEXT) || '|' || "
    . "COALESCE(CAST(requires AS TEXT), 'NULL') FROM schema_version WHERE version > $older ORDER BY version");
is(scalar @rows, $known - $older, "the rows of the versions after $older kept aside");
my $restore = sub {
    for (@rows) {
        my ($v, $at, $req) = split /\|/;
        db_exec("INSERT INTO schema_version (version, applied_at, requires) VALUES ($v, '$at', $req)")
          unless db_value("SELECT COUNT(*) FROM schema_version WHERE version = $v");
    }
};
END { $restore->() if $restore }
db_exec("DELETE FROM schema_version WHERE version > $older");
$out = `'$httpd' -f '$dir/httpd.conf' -t 2>&1`;
isnt($? >> 8, 0, 'a schema older than this module\'s: apache2 -t fails');
like($out, qr/BANK1710: the database's schema is version $older, older than this mod_bank's $known \(\S+\): run 'bankctl migrate' first/,
    'naming both versions and the command') or diag($out);
unlink "$dir/httpd.log";
$out = `timeout 20 '$httpd' -f '$dir/httpd.conf' -DFOREGROUND 2>&1`;
$rc = $? >> 8;
isnt($rc, 0, 'httpd refuses to start on it');
isnt($rc, 124, 'at once');
like($out . $log->(), qr/BANK1710: .*refusing to start/, 'saying why');

# Serving on the current schema, a restart signalled without the test after the schema went
# back: the server stays up, the database's endpoints answer 503; migrated again, the next
# restart serves.
$restore->();
unlink "$dir/httpd.log";
$h->start('the current schema');
$token = issue_token(new_customer()->{email});
my %auth = (headers => { Authorization => "Bearer $token" });
is(json_request(GET => "http://127.0.0.1:$port/misc/payment_banks", %auth)->code, 200,
    'it serves the bank list');
db_exec("DELETE FROM schema_version WHERE version > $older");
$h->graceful('a restart on an older schema');
is($ua->get("http://127.0.0.1:$port/health")->code, 200, 'still up after a restart on an older schema');
$res = json_request(GET => "http://127.0.0.1:$port/misc/payment_banks", %auth);
assert_error($res, 503, 'E_UNAVAILABLE', 'the bank list on an older schema');
is($res->header('Retry-After'), '60', 'with Retry-After');
like($log->(), qr/BANK1710: .*a restart signalled without the configuration test/, 'the log says why');
$restore->();
$h->graceful('a restart once migrated');
is(json_request(GET => "http://127.0.0.1:$port/misc/payment_banks", %auth)->code, 200,
    'migrated again, the next restart serves');
$h->stop;

done_testing();
