# The dev server on its throwaway PostgreSQL cluster (scripts/pgcluster, trust
# authentication; docs/operations.md, "The dev server on PostgreSQL"): the cluster accepts
# only the dev server's own connections (the directory of its socket is for the postgres
# user, root and httpd's group, www-data, alone), so another local user (nobody) cannot
# connect, read the password hashes or slip a token row in; the demo BVN records never reach
# the database in plain text, not even its write-ahead log; and two dev servers share one
# database as docs/operations.md shows (the block docs-test: operations-two-dev-servers, run
# as written with the test's own directories and ports), while a second one with keys of its
# own is refused and told how to share.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(:DEFAULT slurp spew free_port);
use Bank::Docs qw(doc_block substitute);
use Bank::DevServer;

plan skip_all => 'the dev server on PostgreSQL: run by the PostgreSQL suite (DB=pgsql)'
  unless $ENV{BANK_DBDRIVER} eq 'pgsql';
plan skip_all => 'other users are tried with runuser: root only' unless $> == 0;

my $d1 = dev_server(db => 'pgsql');
my $d2 = dev_server(db => 'pgsql');    # the environment is the second's from here on
my ($top, $run, $port) = @$d1{qw(top run port)};
my $sh = substitute(doc_block('docs/operations.md', 'operations-two-dev-servers'),
    'operations.md', 'BANK_RUN_DIR=/tmp/bank1 make start' => "BANK_RUN_DIR=$run PORT=$port make start",
    '/tmp/bank1' => $run, '/tmp/bank2' => $d2->{run}, 'PORT=8081' => "PORT=$d2->{port}");
spew("$d1->{dir}/two.sh", $sh);
my $out = `sh -e '$d1->{dir}/two.sh' 2>&1`;
is($?, 0, 'two dev servers on one database, started as docs/operations.md shows') or diag($out);

my $pg   = "$run/pg";
my $psql = `'$top/scripts/pgcluster' bindir '$pg'`;
chomp $psql;
$psql .= '/psql';
my $conninfo = slurp("$run/pg.conninfo");
chomp $conninfo;

sub psql_as {
    my ($user, $sql) = @_;
    my $res = `runuser -u $user -- '$psql' -X -A -t -w "$conninfo" -c "$sql" 2>&1`;
    return ($? >> 8, $res);
}

# --- only the dev server's own connections ---------------------------------------------------
my ($rc, $res) = psql_as('nobody', 'SELECT count(*) FROM customers');
isnt($rc, 0, 'another local user (nobody) cannot connect');
like($res, qr/Permission denied/, '... refused by the mode of the socket\'s directory') or diag($res);
($rc, $res) = psql_as('nobody', "INSERT INTO auth_access_tokens (tokenable_id, hash, created_at, updated_at) SELECT id, 'x', now(), now() FROM customers LIMIT 1");
isnt($rc, 0, '... nor write a token row');
my @st = stat $pg;
is(sprintf('%04o', $st[2] & 07777), '0750', "the socket's directory: owner and group only");
is(scalar getgrgid($st[5]), 'www-data', "its group is httpd's");
is(scalar getpwuid($st[4]), 'postgres', 'its owner is the server\'s');
($rc, $res) = psql_as('www-data', 'SELECT 1');
is($rc, 0, "httpd's user connects") or diag($res);
like(`curl -s http://127.0.0.1:$port/health`, qr/"database"\s*:\s*"ok"/,
    'and the dev server answers with its database');

# --- the demo records: never in plain text -----------------------------------------------------
is(`'$psql' -X -A -t -w "$conninfo" -c 'SELECT count(*) FROM bvn_records'` + 0, 3,
    'three demo BVN records loaded');
my @plain = grep { length } split /\n/,
  `grep -rlE '22212345678|22298765432|22255555555' '$pg/data' 2>/dev/null`;
is_deeply(\@plain, [], 'no demo BVN in plain text anywhere in the cluster (WAL included)');

# --- the second server reads what the first sealed ------------------------------------------
my ($token2) = $out =~ /^  TOKEN=(oat_\S+)$/m;    # the first banner's: the same customer
my $code = `curl -s -o /dev/null -w '%{http_code}' -X POST $d2->{url}/onboarding/bvn -H 'Authorization: Bearer @{[ $token2 // '' ]}' -H 'Content-Type: application/json' -d '{"bvn_number":"22212345678","date_of_birth":"1990-04-12"}'`;
is($code, '200', 'the second server verifies the demo BVN the first one sealed');

# --- a third with keys of its own: refused, and told how to share ------------------------------
my $d3 = dev_server(db => 'pgsql', env => { BANK_PG_PARAMS => $conninfo, BANK_IDENTITY_KEYS => undef });
my $out3 = dev_start();
isnt($?, 0, 'a dev server on the same database with identity keys of its own: refused');
like($out3, qr{BANK_IDENTITY_KEYS=<that server's BANK_RUN_DIR>/identity-keys\.conf},
    '... saying how to share the first one\'s keys');

# the END of Bank::DevServer stops the three (the first one's cluster last: it stops with it)
done_testing();
