# bankctl as an operator meets it (docs/operations.md): --help at every level, abilities
# checked against the list the module knows, the token lifetime the module allows, and the
# SQL directory found from anywhere (BANK_SQL_DIR), with a message saying what to set.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;

# bankctl with the environment changed (names to unset, then NAME=value pairs), run from /.
sub ctl_env {
    my ($unset, $set, @args) = @_;
    my $errf = "$ENV{BANK_TEST_ROOT}/bankctl-t.err.$$";
    my $env  = join ' ', 'env', (map { "-u $_" } @$unset),
      map { "$_='$set->{$_}'" } sort keys %$set;
    my $cmd = join ' ', "cd / &&", $env, $ENV{BANK_CTL}, map { "'$_'" } @args;
    my $out = `$cmd 2>$errf`;
    my $rc  = $? >> 8;
    my $err = do { local (@ARGV, $/) = $errf; <> } // '';
    unlink $errf;
    return ($rc, $out, $err);
}

# --- --help at every level ------------------------------------------------------------------
my ($rc, $out, $err) = bankctl('--help');
is($rc, 0, 'bankctl --help: exit 0');
like($out, qr/^usage: bankctl/, 'bankctl --help: usage on stdout');
like($out, qr/\Q$_\E/, "bankctl --help: names $_")
  for 'migrate', 'customer add', 'bvn add', 'bvn import', 'token issue', 'token revoke', 'notices';
like($out, qr{/usr/local/share/mod_bank/sql}, 'bankctl --help: the installed SQL directory');

for my $words ([qw(migrate)], [qw(customer)], [qw(customer add)], [qw(bvn)], [qw(bvn add)], [qw(bvn import)],
    [qw(token)], [qw(token issue)], [qw(token revoke)], [qw(notices)])
{
    ($rc, $out, $err) = bankctl(@$words, '--help');
    is($rc, 0, "bankctl @$words --help: exit 0");
    like($out, qr/^usage: bankctl.*\Q$words->[0]\E/s, "bankctl @$words --help: its usage");
    is($err, '', "bankctl @$words --help: nothing on stderr");
}
($rc, $out) = bankctl('token', '--help');
like($out, qr/token issue.*token revoke/s, 'bankctl token --help: both subcommands');
unlike($out, qr/customer add/, 'bankctl token --help: only token commands');
($rc, $out, $err) = bankctl('token');
is($rc, 2, 'bankctl token: exit 2');
like($err, qr/unknown or missing subcommand \(see bankctl token --help\)/, 'bankctl token: says why');

# --- abilities: only those the module knows ----------------------------------------------------
my $c = new_customer();
($rc, $out, $err) = bankctl('token', 'issue', '--email', $c->{email}, '--abilities', 'banks:raed');
is($rc, 2, 'unknown ability: exit 2');
is($out, '', 'unknown ability: no token printed');
is(scalar(() = $err =~ /\n/g), 1, 'unknown ability: one line') or diag($err);
like($err, qr/known abilities: banks:read, onboarding:bvn, \*$/m, 'unknown ability: names the known ones');
unlike($err, qr/raed/, 'unknown ability: the value is not echoed');
($rc, $out, $err) = bankctl('token', 'issue', '--email', $c->{email}, '--abilities',
    'banks:read,onboarding:bvn');
is($rc, 0, 'known abilities: exit 0') or diag($err);
like($out, qr/^oat_/, 'known abilities: a token');
($rc, $out, $err) = bankctl('token', 'issue', '--email', $c->{email}, '--abilities', 'banks:read,');
is($rc, 2, 'an empty ability: exit 2');

# --- one token lifetime for the module and bankctl --------------------------------------------
($rc, $out, $err) = bankctl('token', 'issue', '--email', $c->{email}, '--ttl', '31536001');
is($rc, 2, 'ttl over a year: exit 2');
like($err, qr/--ttl must be a whole number from 60 to 31536000/, 'ttl over a year: the range');
($rc, $out, $err) = bankctl('token', 'issue', '--email', $c->{email}, '--ttl', '31536000');
is($rc, 0, 'ttl of a year: exit 0') or diag($err);

# --- the SQL directory from anywhere ----------------------------------------------------------
($rc, $out, $err) = ctl_env(['BANK_CHECKOUT'], { BANK_SQL_DIR => "$ENV{BANK_TEST_ROOT}/sql" },
    'migrate');
is($rc, 0, 'BANK_SQL_DIR, run from /: migrate exit 0') or diag($err);
like($out, qr/schema up to date.*ready: all statements prepare/s, 'BANK_SQL_DIR: schema found');
($rc, $out, $err) = ctl_env(['BANK_CHECKOUT'], { BANK_SQL_DIR => '/nonexistent/sql' }, 'migrate');
is($rc, 1, 'a wrong BANK_SQL_DIR: exit 1');
like($err, qr{cannot read /nonexistent/sql/\w+.*from BANK_SQL_DIR\): set BANK_SQL_DIR or give --sql-dir},
    'a wrong BANK_SQL_DIR: says where it looked and what to set');
($rc, $out, $err) = ctl_env([], { BANK_CHECKOUT => '/nonexistent' }, 'migrate', '--sql-dir',
    "$ENV{BANK_TEST_ROOT}/sql");
is($rc, 0, '--sql-dir wins over BANK_CHECKOUT') or diag($err);

# An installed bankctl (not in a checkout) without --db: it says what to give.
my $bin = "$ENV{BANK_TEST_ROOT}/bin/bankctl";
my $none = `cd / && env -u BANK_CHECKOUT -u BANK_RUN_DIR -u BANK_DB $bin notices 2>&1`;
is($? >> 8, 2, 'no --db outside a checkout: exit 2');
like($none, qr/which database\? give --db sqlite:PATH or --db postgresql:.*BANK_RUN_DIR/,
    'no --db outside a checkout: says what to give');

done_testing();
