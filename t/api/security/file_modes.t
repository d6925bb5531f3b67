# The files holding password hashes, BVNs, dates of birth, the client key and the webhook
# secret are not readable by every local user (docs/operations.md): the databases bankctl
# creates, and everything the dev server (scripts/devserver) makes in its run directory,
# SQLite's -wal and -shm included, while httpd serves from it.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use Cwd qw(getcwd);
use Bank::Test;
use Bank::Webhook;

my $top = getcwd();    # run-tests runs the suite from the checkout
my $dir = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');

sub mode_of  { my @s = stat $_[0]; return @s ? sprintf('%04o', $s[2] & 07777) : 'missing' }
sub owner_of { my @s = stat $_[0]; return @s ? scalar getpwuid($s[4]) : 'missing' }

sub free_port {
    my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1', LocalPort => 0) or die $!;
    my $port = $s->sockport;
    close $s;
    return $port;
}

# --- bankctl: a new database is 0600 whatever the caller's umask -----------------------------
{
    my $db = "$dir/ctl.db";
    my $out = `umask 022; BANK_CHECKOUT='$top' '$top/build/bankctl' --db 'sqlite:$db' migrate 2>&1`;
    is($?, 0, 'bankctl migrate: exit 0') or diag($out);
    is(mode_of($db), '0600', 'bankctl: a new database is 0600 under umask 022');
    # SQLite gives -wal and -shm the database file's mode: seen while a connection holds them.
    my $seen = `umask 022; sqlite3 -cmd 'SELECT count(*) FROM banks;' '$db' \\
        '.shell stat -c "%n %a" "$db-wal" "$db-shm"' 2>&1`;
    like($seen, qr/\Q$db\E-wal 600\b/, 'bankctl database: -wal 0600') or diag($seen);
    like($seen, qr/\Q$db\E-shm 600\b/, 'bankctl database: -shm 0600') or diag($seen);
}

# --- the dev server, serving from SQLite -------------------------------------------------------
my $run  = "$dir/run";
my $port = free_port();
local $ENV{PORT}          = $port;
local $ENV{BANK_RUN_DIR}  = $run;
local $ENV{BANK_DB}       = 'sqlite3';
local $ENV{BANK_WEBHOOK_SECRET} = 'modes-webhook-secret';
delete local $ENV{BANK_PG_PARAMS};
my $out = `umask 022; '$top/scripts/devserver' start 2>&1`;
my $started = is($?, 0, 'dev server: started') or diag($out);
END { system("'$top/scripts/devserver' stop >/dev/null 2>&1") if $run && -e "$run/httpd.pid" }

if ($started) {
    # A delivery makes an httpd child open the database, creating -wal and -shm.
    my $n   = notice();
    my $res = json_request(
        'POST', "http://127.0.0.1:$port/webhook/partner",
        headers => { Authorization => 'Bearer modes-webhook-secret' },
        body    => notice_json($n)
    );
    is($res->code, 200, 'dev server: a delivery stored');

    my $user = $> == 0 ? 'www-data' : scalar getpwuid($>);
    is(mode_of($run), '0700', 'dev server: run directory 0700');
    is(owner_of($run), $user, "dev server: run directory owned by $user");
    for my $f ('bank.db', 'bank.db-wal', 'bank.db-shm') {
        is(mode_of("$run/$f"), '0600', "dev server: $f 0600");
        is(owner_of("$run/$f"), $user, "dev server: $f owned by httpd's User ($user)");
    }
    is(mode_of("$run/httpd.conf"), '0600', 'dev server: httpd.conf 0600');
    is(owner_of("$run/httpd.conf"), scalar getpwuid($>),
        'dev server: httpd.conf owned by the invoker (httpd reads it before dropping to User)');
    is(mode_of("$run/logs"), '0700', 'dev server: logs 0700');

    # A second start over files a looser umask made: they become private too.
    system("'$top/scripts/devserver' stop >/dev/null 2>&1");
    chmod 0755, $run;
    chmod 0644, "$run/bank.db", "$run/httpd.conf";
    $out = `umask 022; '$top/scripts/devserver' start 2>&1`;
    is($?, 0, 'dev server: started again') or diag($out);
    is(mode_of($run), '0700', 'restart: run directory 0700 again');
    is(mode_of("$run/bank.db"), '0600', 'restart: bank.db 0600 again');
    is(mode_of("$run/httpd.conf"), '0600', 'restart: httpd.conf 0600 again');
    system("'$top/scripts/devserver' stop >/dev/null 2>&1");
}

done_testing();
