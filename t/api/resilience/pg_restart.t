# PostgreSQL stopped and started again under a running httpd (issue 6, point 5): during the
# outage every request answers 503 E_UNAVAILABLE with Retry-After (never 500, no crash);
# once the database is back every request answers 200 again, with no httpd restart, and the
# pooled connections are whole: their DBDInitSQL session settings are back too.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Bank::Test;
use Bank::Servers qw(require_pgsql main_server concurrent pg_stop pg_start);

require_pgsql('stops and starts the database server under httpd');

my $c     = new_customer();
my $token = issue_token($c->{email});
my %auth  = (Authorization => "Bearer $token");
my $vars  = Apache::Test::vars();
my $one   = main_server();
my $ppid  = sub { local (@ARGV, $/) = "$vars->{t_logs}/httpd.pid"; my $p = <>; chomp $p; $p };

# Codes of n requests: { code => count }, and the first answer of each code. With
# parallel => 1, n requests at once (each child process of httpd then pools several
# connections).
sub burst {
    my ($n, %o) = @_;
    my (%codes, %first);
    my @res = $o{parallel}
      ? concurrent(map { [$one, GET => '/misc/payment_banks', headers => \%auth] } 1 .. $n)
      : map { GET('/misc/payment_banks', %auth) } 1 .. $n;
    for my $r (@res) {
        $codes{ $r->code }++;
        $first{ $r->code } //= $r;
    }
    return (\%codes, \%first);
}

# Sessions httpd holds, by whether they carry the DBDInitSQL application_name.
sub sessions {
    return split / /, db_value("SELECT count(*) FILTER (WHERE application_name = 'mod_bank_test')"
          . " || ' ' || count(*) FILTER (WHERE application_name <> 'mod_bank_test')"
          . " FROM pg_stat_activity WHERE usename = 'bank' AND pid <> pg_backend_pid()"
          . " AND backend_type = 'client backend'");
}

# --- before: parallel requests, so that every httpd child pools several connections ------
my ($codes) = burst(16, parallel => 1);
is_deeply($codes, { 200 => 16 }, 'before: parallel requests answer 200');
($codes) = burst(16, parallel => 1);
is_deeply($codes, { 200 => 16 }, 'before: a second parallel round answers 200');
my ($with, $without) = sessions();
cmp_ok($with, '>=', 2, "before: httpd pools several sessions ($with)");
is($without, 0, 'before: every session ran DBDInitSQL');
my $parent = $ppid->();
my $mark   = error_log_mark();
my $zone   = db_value('SHOW TimeZone');

# --- a short outage: most pooled connections are not touched during it, so they meet the
# restarted server with their old session gone (mod_dbd still counts them as healthy) -------
pg_stop();
my $first;
($codes, $first) = burst(3);
is_deeply($codes, { 503 => 3 }, 'outage: every request answers 503 (none 500, none 200)');
my $down = $first->{503} // GET('/misc/payment_banks', %auth);
assert_error($down, 503, 'E_UNAVAILABLE', 'outage');
like($down->header('Retry-After') // '', qr/^\d+$/, 'outage: Retry-After');
unlike($down->content, qr/server closed|terminating|socket|pgsql|PostgreSQL/i,
    'outage: no internals in the body');

# --- back -------------------------------------------------------------------------------------
pg_start();
($codes, $first) = burst(16, parallel => 1);
is_deeply($codes, { 200 => 16 }, 'after: parallel requests answer 200 at once')
  or diag(($first->{500} // $first->{503} // $first->{401} // GET('/'))->content);
($codes, $first) = burst(40);
is_deeply($codes, { 200 => 40 }, 'after: every request answers 200 (no poisoned connection)')
  or diag(($first->{500} // $first->{503} // $first->{401} // GET('/'))->content);
($codes) = burst(16, parallel => 1);
is_deeply($codes, { 200 => 16 }, 'after: a second parallel round answers 200 too');
is($ppid->(), $parent, 'after: the same httpd (no restart)');
($with, $without) = sessions();
cmp_ok($with, '>=', 1, 'after: httpd pools sessions again');
is($without, 0, 'after: every re-opened session ran DBDInitSQL again');
is(db_value('SHOW TimeZone'), $zone,
    "after: the cluster keeps its TimeZone ($zone): later files still read other zones' text");

my $log = error_log_since($mark);
ok($log !~ /exit signal|Segmentation|AH00052/, 'no httpd child crashed');
# A pooled connection meets the stopped server in the lookup (BANK0203); one the token-use
# writer's failed round left the pool without is reopened, and that fails (BANK0202).
ok($log =~ /BANK0203: token lookup: |BANK0202: /, 'outage: the failed lookups are logged');
ok($log =~ /BANK0806: database connection was re-opened/,
    'after: a connection re-opened by libpq was restored, and logged');
ok($log !~ /BANK0203: [^\n]*does not exist/, 'after: no request failed on a session without its statements');
ok($log !~ /\Q$token\E|\Q$c->{password}\E/, 'no secret in the log');

# --- a long outage: every pooled connection fails during it and mod_dbd drops them ---------
pg_stop();
($codes) = burst(16, parallel => 1);
is_deeply($codes, { 503 => 16 }, 'long outage: parallel requests answer 503');
($codes) = burst(30);
is_deeply($codes, { 503 => 30 }, 'long outage: 503');
pg_start();
($codes) = burst(16, parallel => 1);
is_deeply($codes, { 200 => 16 }, 'after the long outage: parallel requests answer 200');
($codes) = burst(30);
is_deeply($codes, { 200 => 30 }, 'after the long outage: 200');
ok(error_log_since($mark) !~ /exit signal|Segmentation|AH00052/, 'still no httpd child crashed');

done_testing();
