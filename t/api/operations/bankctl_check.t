# bankctl check (docs/operations.md): a configuration that is right passes (exit 0, every
# line "ok"); each broken one fails with exit 1 and a FAIL line naming what is wrong: an
# unreadable or others-readable key file, a database the user cannot open, a provider
# without credentials or unreachable over TLS, DBDMin > DBDKeep, no identity keys, keys the
# database was not sealed with, a schema newer than this build's, and on PostgreSQL a pool
# larger than max_connections and a runtime role granted less than a statement (or a
# trigger it fires) needs. Checks run as the configuration's User (root switches).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Test;
use Bank::Docs qw(free_port slurp spew);

my $root = $> == 0;
my ($user, $group) = $root ? ('nobody', 'nogroup') : (scalar getpwuid($>), scalar getgrgid($)));
my $dir = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
chmod 0755, $dir;
my $ctl = "BANK_SQL_DIR=$ENV{BANK_TEST_ROOT}/sql $ENV{BANK_TEST_ROOT}/bin/bankctl";
my $pg = $ENV{BANK_DBDRIVER} eq 'pgsql';

# The database: the suite's PostgreSQL database, or an SQLite file of this test's own, in a
# 0700 directory, the file 0600, both the User's.
my ($driver, $params) = ($ENV{BANK_DBDRIVER}, $ENV{BANK_DBPARAMS});
if (!$pg) {
    mkdir "$dir/lib";
    chmod 0700, "$dir/lib";
    chown scalar(getpwnam $user), scalar(getgrnam $group), "$dir/lib" if $root;
    my $as = $root ? "runuser -u $user -- " : '';
    my $out = `$as env $ctl --db sqlite:$dir/lib/bank.db migrate 2>&1`;
    is($?, 0, 'an SQLite database for the check') or diag($out);
    $params = "$dir/lib/bank.db";
}
spew("$dir/hmac.key", "partner-hmac-key-0123456789\n");
chmod 0600, "$dir/hmac.key";

sub conf {
    my (%o) = @_;
    my $pool = $o{pool} // "DBDMin 0\nDBDKeep 4\nDBDMax 8";
    my $db   = $o{params} // $params;
    my $keys = $o{keys} // $ENV{BANK_TEST_KEYS};
    return <<"CONF";
ServerRoot $dir
User $user
Group $group
ServerLimit 4
DBDriver $driver
DBDParams "$db"
$pool
BankClientKey check-client-key
@{[ $keys ? "Include \"$keys\"" : "" ]}
<Location /webhook/partner>
    SetHandler bank-webhook
    BankWebhookSecret check-webhook-secret
    BankWebhookSignature X-Partner-Signature sha512 file:$dir/hmac.key
</Location>
@{[ $o{extra} // "" ]}
CONF
}

# Runs bankctl check on $text; returns (exit status, output).
sub check {
    my ($name, $text) = @_;
    spew("$dir/$name.conf", $text);
    my $out = `$ctl check -f $dir/$name.conf 2>&1`;
    return ($? >> 8, $out);
}

# --- right: every line ok ---------------------------------------------------------------------
my ($rc, $out) = check('good', conf(extra => ''));
is($rc, 0, 'a right configuration: exit 0') or diag($out);
my @lines = grep { !/^bankctl check:/ } split /\n/, $out;
is(join("\n", grep { !/^ok   / } @lines), '', 'every line says ok');
like($out, qr/^ok   configuration: \Q$dir\E\/good\.conf read; httpd runs as \Q$user\E$/m,
    'the configuration and its User');
like($out, qr/^ok   database \(main server\): opened \Q$driver\E .* as \Q$user\E$/m,
    'the database opened as the User');
like($out, qr/^ok   schema: version (\d+) \(this build's: \1\)$/m, 'the schema is this build\'s');
like($out, qr/^ok   identity keys: the database's keys/m, 'the identity keys are the database\'s');
if ($pg) {
    like($out, qr/^ok   privileges: \S+ may run every statement \(tables, triggers, sequences\)$/m,
        'PostgreSQL: the role may run every statement');
} else {
    unlike($out, qr/privileges/, 'SQLite: no roles, no privilege line');
}
like($out, qr/^ok   pool \(main server\): DBDMin 0, DBDKeep 4, DBDMax 8$/m, 'the pool numbers');
like($out, qr/^ok   file mode of a key file: \Q$dir\E\/hmac\.key 0600/m, 'the key file\'s mode');
if ($pg) {
    like($out, qr/^ok   connections: DBDMax 8 x ServerLimit 4 = 32 per httpd server; PostgreSQL allows \d+/m,
        'PostgreSQL: the pool against max_connections');
} else {
    like($out, qr/^ok   file mode of the database: \Q$params\E 0600, owner \Q$user\E$/m,
        'SQLite: the database file 0600, the User\'s');
    like($out, qr/^ok   file mode of the database directory: \Q$dir\E\/lib 0700/m,
        'SQLite: its directory 0700');
}
unlike($out, qr/check-client-key|check-webhook-secret|partner-hmac-key/, 'no secret printed');

# --- broken, one thing at a time --------------------------------------------------------------
sub fails {
    my ($name, $text, $want, $what) = @_;
    my ($rc, $out) = check($name, $text);
    is($rc, 1, "$what: exit 1") or diag($out);
    like($out, $want, "$what: the FAIL line") or diag($out);
    like($out, qr/^bankctl check: FAILED$/m, "$what: FAILED at the end");
}

chmod 0644, "$dir/hmac.key";
fails('key644', conf(extra => ''),
    qr/^FAIL file mode of a key file: \Q$dir\E\/hmac\.key is 0644, owner \S+: must be readable by its owner only/m,
    'a key file others can read');
chmod 0600, "$dir/hmac.key";
fails('keygone', conf(extra => '') =~ s/hmac\.key/no-such.key/r,
    qr/^FAIL file mode of a key file: \Q$dir\E\/no-such\.key: cannot read it/m, 'a missing key file');

if ($pg) {
    (my $wrong = $params) =~ s/\buser=\S+/user=no_such_role/;
    fails('baddb', conf(params => $wrong),
        qr/^FAIL database \(main server\): cannot open pgsql .* as \Q$user\E: .*no_such_role/m,
        'a database role that does not exist');
} else {
    mkdir "$dir/locked";
    chmod 0700, "$dir/locked";    # root's: the User cannot enter it
    fails('baddb', conf(params => "$dir/locked/bank.db"),
        $root ? qr/^FAIL (file mode of the database|database \(main server\)): \Q$dir\E\/locked/m
              : qr/^FAIL file mode of the database: \Q$dir\E\/locked\/bank\.db: cannot read it/m,
        'a database the User cannot reach');
}

fails('nocreds', conf(extra => "<Location /onboarding/bvn>\n    BankBvnProvider dojah\n</Location>"),
    qr/^FAIL provider credentials: dojah \(main server\): no BankBvnProviderCredentials$/m,
    'a provider without credentials');
spew("$dir/idp.credentials", "app-id-1 secret-key-1\n");
chmod 0640, "$dir/idp.credentials";
fails('credmode', conf(extra => "<Location /onboarding/bvn>\n    BankBvnProvider dojah\n"
      . "    BankBvnProviderCredentials $dir/idp.credentials\n</Location>"),
    qr/^FAIL file mode of a key file: \Q$dir\E\/idp\.credentials is 0640/m,
    'a provider credentials file the group can read');
my $closed = free_port();
fails('notls', conf(extra => "<Location /onboarding/bvn>\n    BankBvnProvider prembly https://127.0.0.1:$closed\n"
      . "    BankBvnProviderCredentials app-id-1 secret-key-1\n</Location>"),
    qr{^FAIL provider TLS: prembly at https://127\.0\.0\.1:$closed: }m,
    'a provider that cannot be reached over TLS');

fails('minkeep', conf(pool => "DBDMin 6\nDBDKeep 4\nDBDMax 8"),
    qr/^FAIL pool \(main server\): DBDMin 6, DBDKeep 4, DBDMax 8: DBDMin exceeds DBDKeep$/m,
    'DBDMin > DBDKeep');
fails('keepmax', conf(pool => "DBDMin 0\nDBDKeep 9\nDBDMax 8"),
    qr/^FAIL pool \(main server\): DBDMin 0, DBDKeep 9, DBDMax 8: DBDKeep exceeds DBDMax$/m,
    'DBDKeep > DBDMax');
SKIP: {
    skip 'max_connections: PostgreSQL only (this run: SQLite)', 3 unless $pg;
    fails('maxconn', conf(pool => "DBDMin 0\nDBDKeep 4\nDBDMax 100000"),
        qr/^FAIL connections: DBDMax 100000 x ServerLimit 4 = 400000 per httpd server; .*: lower DBDMax or raise max_connections$/m,
        'a pool PostgreSQL cannot hold');
}

# Identity keys: none configured, or others than the database's.
fails('nokeys', conf(keys => ''),
    qr/^FAIL identity keys: BankIdentityKey is not set: httpd refuses to start without it/m,
    'no identity keys');
mkdir "$dir/otherkeys";
for my $k (qw(k9 hash)) {
    spew("$dir/otherkeys/$k.key", join('', map { sprintf '%02x', int rand 256 } 1 .. 32) . "\n");
    chmod 0600, "$dir/otherkeys/$k.key";
}
spew("$dir/otherkeys/keys.conf", "BankIdentityKey k9 $dir/otherkeys/k9.key\n"
      . "BankIdentityHashKey $dir/otherkeys/hash.key\n");
fails('otherkeys', conf(keys => "$dir/otherkeys/keys.conf"),
    qr/^FAIL identity keys: .*httpd refuses to start with them and a reload is refused/m,
    'keys the database was not sealed with');
SKIP: {
    skip 'an identity key of another account: only root can make one (chown)', 3 unless $root;
    # the suite's own keys, one of them given to nobody: httpd would refuse it
    mkdir "$dir/theirkeys";
    my $conf_keys = slurp($ENV{BANK_TEST_KEYS});
    my ($hash) = $conf_keys =~ /^BankIdentityHashKey (\S+)$/m;
    system('cp', '-p', $hash, "$dir/theirkeys/hash.key") == 0 or die 'cp';
    chown scalar(getpwnam('nobody')), -1, "$dir/theirkeys/hash.key";
    spew("$dir/theirkeys/keys.conf", $conf_keys =~ s/^BankIdentityHashKey \S+$/BankIdentityHashKey $dir\/theirkeys\/hash.key/mr);
    fails('theirkeys', conf(keys => "$dir/theirkeys/keys.conf"),
        qr/^FAIL file mode of an identity key: \Q$dir\E\/theirkeys\/hash\.key is 0600, owner nobody: must be readable by root only/m,
        'an identity key of another account than root');
}

# A schema newer than this build's (a later release migrated it).
my $sql = sub {
    my ($q) = @_;
    return $pg ? db_exec($q)
      : `${\ ($root ? "runuser -u $user -- " : '')}sqlite3 -cmd '.timeout 10000' $params "$q"`;
};
# A schema newer than this build's: served on when its migrations since only added; refused
# when one of them requires a newer module; bankctl migrate refuses to run on it.
$sql->("INSERT INTO schema_version (version, applied_at) VALUES (998, '2026-11-28T00:00:00.000Z')");
($rc, $out) = check('compatible', conf());
is($rc, 0, 'a newer schema whose migrations only added: exit 0') or diag($out);
like($out, qr/^ok   schema: version 998, newer than this build's \d+; the migrations since only added/m,
    'a newer, compatible schema: said so');
$sql->("INSERT INTO schema_version (version, applied_at, requires) VALUES (999, '2026-11-28T00:00:00.000Z', 999)");
fails('ahead', conf(),
    qr/^FAIL schema: version 999 needs a module that knows schema 999; this build knows \d+: a later release migrated the database/m,
    'a schema that requires a newer module');
my $ctldb = $pg ? $ENV{BANK_CTL_DB} : "sqlite:$params";
my $as    = (!$pg && $root) ? "runuser -u $user -- " : '';
$out = `$as env $ctl --db '$ctldb' migrate 2>&1`;
is($? >> 8, 1, 'bankctl migrate on a newer schema: exit 1');
like($out, qr/the database's schema is version 999, newer than the SQL files in \S+ \(version \d+\): a later release migrated it/,
    'bankctl migrate says the database is newer than its files') or diag($out);
$sql->('DELETE FROM schema_version WHERE version >= 998');

# PostgreSQL: a runtime role granted SELECT only lacks what the writes need, and what the
# triggers they fire write (the push message of a notice, the revocation feed's pruning).
SKIP: {
    skip 'roles: PostgreSQL only (this run: SQLite)', 5 unless $pg;
    (my $su = $ENV{BANK_PSQL_URL}) =~ s/\buser=\w+/user=postgres/;
    my $psql = "$ENV{BANK_PSQL} -X -q -v ON_ERROR_STOP=1 '$su'";
    my $out = `$psql -c "CREATE ROLE bank_probe LOGIN; GRANT USAGE ON SCHEMA public TO bank_probe; GRANT SELECT ON ALL TABLES IN SCHEMA public TO bank_probe" 2>&1`;
    is($?, 0, 'a role granted SELECT only') or diag($out);
    fails('readonly', conf(params => "$params user=bank_probe"),
        qr/^FAIL privileges: bank_probe lacks .*INSERT on payment_notices.*INSERT on push_outbox/m,
        'a role that cannot write');
    `$psql -c "DROP OWNED BY bank_probe; DROP ROLE bank_probe" 2>&1`;
}

# --- the default file is Debian's -------------------------------------------------------------
like(`$ctl check --help`, qr{default /etc/apache2/apache2\.conf}, '--help names the default file');
SKIP: {
    skip "no /etc/apache2/apache2.conf here", 2 unless -r '/etc/apache2/apache2.conf';
    my $def = `$ctl check 2>&1`;
    like($def, qr{^ok   configuration: /etc/apache2/apache2\.conf read; httpd runs as www-data$}m,
        'without -f: Debian\'s configuration, its User from envvars');
    like($def, qr/^(FAIL|ok)   ?\S/m, 'one line per check');
}

done_testing();
