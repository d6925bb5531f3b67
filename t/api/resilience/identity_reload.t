# A reload with identity keys the database was not sealed with never takes the running server
# down (docs/operations.md, "When a reload is refused"): `apache2 -t` fails naming the key, so
# apachectl graceful (what systemctl reload and service apache2 reload run) refuses before it
# signals httpd, and the server goes on with its old configuration; a graceful restart
# signalled without the test (apache2 -k graceful, kill -USR1) keeps the server up, logs
# the refusal, and BVN onboarding answers 503 until a restart with the right keys.
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
my $port = free_port();
my $base = "http://127.0.0.1:$port";
my $ua   = LWP::UserAgent->new(timeout => 30, keep_alive => 0);

# The suite's keys, and the same with another current key under the same id.
my $good = slurp($ENV{BANK_TEST_KEYS});
spew("$dir/wrong-t2.key", join('', map { sprintf '%02x', int rand 256 } 1 .. 32) . "\n");
chmod 0600, "$dir/wrong-t2.key";
(my $wrong = $good) =~ s{^BankIdentityKey t2 \S+$}{BankIdentityKey t2 $dir/wrong-t2.key}m
  or die 'no BankIdentityKey t2 line in the suite\'s keys';
spew("$dir/keys.conf", $good);
chmod 0600, "$dir/keys.conf";
my $conf = private_conf($dir, 'httpd', $port);
$conf =~ s/^Include "\Q$ENV{BANK_TEST_KEYS}\E"$/Include "$dir\/keys.conf"/m or die 'no keys line';
spew("$dir/httpd.conf", $conf . <<'CONF');
LogLevel warn bank:info
<Location /health>
    SetHandler bank-health
</Location>
<Location /onboarding/bvn>
    SetHandler bank-bvn
</Location>
CONF

my $token = issue_token(new_customer()->{email});
my $bvn   = sub {
    my $req = HTTP::Request->new(POST => "$base/onboarding/bvn",
        ['Authorization' => "Bearer $token", 'Content-Type' => 'application/json'],
        '{"bvn_number":"22299999991","date_of_birth":"1990-01-01"}');
    return $ua->request($req);
};
my $pid = sub { my $p = -s "$dir/httpd.pid" ? slurp("$dir/httpd.pid") : 0; chomp $p; $p };
my $log = sub { -e "$dir/httpd.log" ? slurp("$dir/httpd.log") : '' };
my $up  = sub {
    for (1 .. 100) {
        return 1 if $ua->get("$base/health")->code == 200;
        select undef, undef, undef, 0.1;
    }
    return 0;
};
my $generations = sub { scalar(() = $log->() =~ /resuming normal operations/g) };
my $graceful = sub {
    my $before = $generations->();
    system($httpd, '-f', "$dir/httpd.conf", '-k', 'graceful');
    for (1 .. 100) {
        last if $generations->() > $before;
        select undef, undef, undef, 0.1;
    }
    return $generations->() > $before;
};

is(system($httpd, '-f', "$dir/httpd.conf", '-k', 'start'), 0, 'started with the database\'s keys');
ok($up->(), 'it answers');
my $first = $pid->();
is($bvn->()->code, 422, 'BVN onboarding works (an unknown BVN: 422)');

# --- the keys changed to others: the configuration test fails, naming the key ----------------
spew("$dir/keys.conf", $wrong);
my $out = `'$httpd' -f '$dir/httpd.conf' -t 2>&1`;
isnt($? >> 8, 0, 'apache2 -t fails');
like($out, qr/BANK1705: BankIdentityKey: the key t2 is not the one this database knows.*; the configuration test fails/,
    'apache2 -t names the key') or diag($out);
unlike($out, qr/[0-9a-f]{64}/, 'no key material printed');

# apachectl graceful, as systemctl reload and service apache2 reload run it: refused before
# httpd is signalled.
$out = `APACHE_CONFDIR='$dir' APACHE_ENVVARS=/dev/null APACHE_ARGUMENTS='-f $dir/httpd.conf' /usr/sbin/apache2ctl graceful 2>&1`;
isnt($? >> 8, 0, 'apachectl graceful: refused (non-zero)');
like($out, qr/BANK1705: .*the configuration test fails/, 'apachectl graceful says why') or diag($out);
sleep 1;
is($pid->(), $first, 'the same server runs');
is($ua->get("$base/health")->code, 200, 'and answers');
is($bvn->()->code, 422, 'BVN onboarding still works with the old configuration\'s keys');

# --- a graceful restart signalled without the test: the server stays up, BVN answers 503 --------
ok($graceful->(), 'apache2 -k graceful: a new generation');
is($pid->(), $first, 'the server did not exit');
ok($up->(), '/health answers 200');
like($log->(), qr/BANK1705: .*a restart signalled without the configuration test: the server keeps running and answers 503 where this matters \(BVN onboarding for the keys/,
    'the log says the keys were refused and what follows');
my $res = $bvn->();
assert_error(HTTP::Response->parse($res->as_string), 503, 'E_UNAVAILABLE', 'keys refused: BVN onboarding');
is($res->header('Retry-After'), '60', 'keys refused: Retry-After 60');

# --- the right keys again --------------------------------------------------------------------
spew("$dir/keys.conf", $good);
is(system("'$httpd' -f '$dir/httpd.conf' -t >/dev/null 2>&1"), 0, 'apache2 -t passes again');
ok($graceful->(), 'graceful restart with the database\'s keys');
is($bvn->()->code, 422, 'BVN onboarding works again');
is($pid->(), $first, 'one server all along');
system($httpd, '-f', "$dir/httpd.conf", '-k', 'stop');
sleep 1;

done_testing();
