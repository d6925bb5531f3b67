# Verified BVN answers kept per process (BankBvnCacheSeconds; docs/configuration.md,
# docs/security.md): on /cached60/onboarding/bvn (tokens and answers kept 60 s) a verified
# customer's repeat is answered by every process of every server from its cache, the same
# bytes as the database's answer; and every change to what the answer is made of reaches every
# process within 1 s, polled every 50 ms: the account's balance and the customer's referral code
# changed by another application's SQL, the identity record deleted, wrong attempts on another
# server reaching BankBvnThrottle. On PostgreSQL two servers share the database, and the
# connections server two reads the feed on are killed (pg_terminate_backend) before a change;
# on SQLite one server. An answer is not given to a Location of another BankBvnThrottle, and
# (on a server of one process) a request with other values drops the kept answer at once.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Time::HiRes ();
use Bank::Test;
use Bank::BvnTest;
use Bank::SignIn qw(iso_ago);
use Bank::Servers qw(concurrent feed_servers poll_a_second start_server one_process);

my $pg      = $ENV{BANK_DBDRIVER} ne 'sqlite3';
my $path    = '/cached60/onboarding/bvn';
my @servers = feed_servers('bank_bvn_two');
my $per_server = 12;    # requests at once per server and round: more than its processes

# A verified customer: the first answer opens the account (through the path without a cache).
sub verified {
    my $v = verifiable();
    my $r = bvn_post($v);
    is($r->code, 200, 'the customer verified') or diag($r->content);
    return $v;
}

# One round: $per_server requests at once on new connections to every server; the answers.
sub round {
    my ($v) = @_;
    my @jobs = map { my $s = $_->[1]; map { [$s, bvn_req($v, path => $path)] } 1 .. $per_server }
      @servers;
    return concurrent(@jobs);
}

sub balance_of {
    my ($r) = @_;
    my $d = $r->code == 200 ? decode_body($r) : undef;
    return $d ? $d->{body}{customer}{account}{balance} // '' : '';
}

# Changes what the customer's answer is made of unseen by the caches: in one transaction with
# the removal of the feed rows the change added, so no process hears of it.
sub unseen {
    my ($v, $sql) = @_;
    my $id = $v->{c}{id};
    db_exec("BEGIN; $sql; DELETE FROM auth_token_revocations WHERE customer_id = '$id'; COMMIT;");
}

# After warm-up rounds, the account's balance is raised in the database unseen by the caches;
# a round then all "0.00" was answered from the caches (a process reading the database answers
# "0.01"). The balance is put back after: unseen when every answer came from a cache (what
# they keep is the database's again); otherwise where every process hears of it, so that no
# process keeps the "0.01" it read for the next try (where it would count as read again).
sub cached_everywhere {
    my ($v, $what) = @_;
    my $id = $v->{c}{id};
    my @stale;
    for my $try (1 .. 5) {
        round($v) for 1 .. 3;
        unseen($v, "UPDATE accounts SET balance_minor = balance_minor + 1 WHERE customer_id = '$id'");
        @stale = grep { balance_of($_) ne '0.00' } round($v);
        my $back = "UPDATE accounts SET balance_minor = balance_minor - 1 WHERE customer_id = '$id'";
        if (!@stale) {
            unseen($v, $back);
            last;
        }
        db_exec($back);
        Time::HiRes::sleep(0.5);    # every process reads the feed before it answers again
        diag("$what: try $try, " . scalar(@stale) . ' answers read from the database');
    }
    is(scalar @stale, 0, "$what: every process of every server answers from its cache")
      or diag(join ' ', map { $_->code . ':' . balance_of($_) } @stale);
}

# Polls every 50 ms once $change returned: no answer is $old's within 1 s, and none after.
sub changed_within_a_second {
    my ($v, $what, $change, $old) = @_;
    $change->();    # the change committed
    my ($last_old, @last) = poll_a_second(sub { round($v) }, $old);
    ok(!defined $last_old || $last_old < 1.0, "$what: every process of every server "
        . 'answers anew within 1 s') or diag(sprintf 'last old answer at %.3f s', $last_old);
    is(scalar(grep { $old->($_) } @last), 0, "$what: and after")
      or diag(join ' ', map { $_->code } @last);
    return @last;
}

# --- kept: the same bytes as the database's answer ---------------------------------------------
{
    my $v = verified();
    cached_everywhere($v, 'kept');
    my $db = bvn_post($v);    # /onboarding/bvn keeps nothing (BankBvnCacheSeconds 0)
    is($db->code, 200, 'the database answer');
    my @kept = round($v);
    is(scalar(grep { $_->code != 200 || $_->content ne $db->content } @kept), 0,
        'every kept answer is byte for byte the database answer');
    is($kept[0]->header('Content-Type'), $db->header('Content-Type'), 'the same content type');
    is($kept[0]->header('Cache-Control'), 'no-store', 'a kept answer is not for shared caches');
    is(decode_body($kept[0])->{message}, 'BVN already verified', 'message of a repeat');
    # another date of birth is not the kept answer: the record check refuses it
    my $r = json_request(bvn_req($v, path => $path, dob => '1990-04-13'));
    is($r->code, 422, 'another date of birth with a kept answer: 422 (the database decides)');
}

# --- the balance changed by another application's SQL ----------------------------------------
{
    my $v = verified();
    my $id = $v->{c}{id};
    cached_everywhere($v, 'balance');
    changed_within_a_second($v, 'balance changed by SQL',
        sub { db_exec("UPDATE accounts SET balance_minor = 150000 WHERE customer_id = '$id'") },
        sub { balance_of($_[0]) ne '1500.00' });
}

# --- the customer's row changed by SQL ------------------------------------------------------
{
    my $v = verified();
    my $id = $v->{c}{id};
    my $code = 'Z' . substr(uc(join '', map { sprintf '%x', rand 16 } 1 .. 12), 0, 7);
    $code =~ tr/01IO/2345/;
    cached_everywhere($v, 'customer row');
    changed_within_a_second($v, 'referral code changed by SQL',
        sub { db_exec("UPDATE customers SET referral_code = '$code' WHERE id = '$id'") },
        sub {
            my $d = $_[0]->code == 200 ? decode_body($_[0]) : undef;
            !$d || ($d->{body}{customer}{referralCode} // '') ne $code;
        });
}

# --- the identity record deleted: the database's answer is a mismatch ------------------------
{
    my $v = verified();
    my $id = $v->{c}{id};
    my $hash = "(SELECT bvn_hash FROM customers WHERE id = '$id')";
    is(db_value("SELECT count(*) FROM bvn_records WHERE bvn_hash = $hash"), 1,
        'the record is found by the customer\'s BVN hash');
    cached_everywhere($v, 'record');
    my @last = changed_within_a_second($v, 'identity record deleted by SQL',
        sub { db_exec("DELETE FROM bvn_records WHERE bvn_hash = $hash") },
        sub { $_[0]->code == 200 });
    is(scalar(grep { $_->code != 422 && $_->code != 429 } @last), 0,
        'record deleted: a mismatch (422), or 429 once the mismatches reached the limit')
      or diag(join ' ', map { $_->code } @last);
    my $r = json_request(bvn_req($v, path => $path));
    ok($r->code == 422 || $r->code == 429, 'record deleted: the error');
    assert_error($r, $r->code, $r->code == 422 ? 'E_VALIDATION_ERROR' : 'E_TOO_MANY_REQUESTS',
        'record deleted');
}

# --- wrong attempts on another server reach BankBvnThrottle (5 a day) --------------------------
{
    my $v = verified();
    cached_everywhere($v, 'throttle');
    my $other = $servers[-1][1];
    changed_within_a_second($v, 'mismatches counted elsewhere', sub {
        for my $n (1 .. 5) {
            my $r = $other->request(bvn_req($v, dob => '1990-04-13'));
            is($r->code, 422, "wrong date of birth $n on server $servers[-1][0]: 422");
        }
    }, sub { $_[0]->code != 429 });
    my $r = json_request(bvn_req($v, path => $path));
    assert_error($r, 429, 'E_TOO_MANY_REQUESTS', 'throttled after the mismatches');
    like($r->header('Retry-After') // '', qr/^\d+$/, 'throttled: Retry-After');
}

# --- another Location's rule: BankBvnThrottle 5 5 there, 5 a day here --------------------------
# Five failures counted 10 s ago: over the limit for a day's window, expired for 5 s. The
# short Location answers 200 and keeps it on every process; this Location must still say 429.
{
    my $v = verified();
    my $id = $v->{c}{id};
    db_exec("INSERT INTO throttle_counts (scope, subject, failures, window_start)"
        . " VALUES ('bvn', '$id', 5, '${\ iso_ago(10)}')");
    Time::HiRes::sleep(0.3);    # every process's feed heard of the count
    my $short = '/cached60/short/onboarding/bvn';
    my @kept;
    for (1 .. 3) {
        @kept = concurrent(map { my $s = $_->[1]; map { [$s, bvn_req($v, path => $short)] }
            1 .. $per_server } @servers);
    }
    is(scalar(grep { $_->code != 200 } @kept), 0, 'the 5 s window: 200, kept');
    my @long = round($v);
    is(scalar(grep { $_->code != 429 } @long), 0,
        'the day\'s window on every process: 429, not the other Location\'s kept answer')
      or diag(join ' ', map { $_->code } @long);
    assert_error($long[0], 429, 'E_TOO_MANY_REQUESTS', 'the day\'s window');
}

# --- one process: other values drop the kept answer at once -------------------------------------
# A server of one process: the answer kept, then the balance raised unseen by the feed. Another
# BVN (409, nothing written, nothing on the feed) must drop the kept answer there, so that the
# right values are read from the database again: the new balance.
{
    my $one = start_server(extra => one_process(8));
    my $v = verified();
    my $id = $v->{c}{id};
    my $ask = sub { $one->request(bvn_req($v, path => $path, @_)) };
    $ask->() for 1 .. 3;
    unseen($v, "UPDATE accounts SET balance_minor = 1 WHERE customer_id = '$id'");
    is(balance_of($ask->()), '0.00', 'one process: the kept answer');
    my $other = $ask->(bvn => substr($v->{bvn}, 0, 10) . ((substr($v->{bvn}, 10) + 1) % 10));
    assert_error($other, 409, 'E_ALREADY_VERIFIED', 'one process: another BVN');
    is(balance_of($ask->()), '0.01', 'one process: after another BVN, read again');
    $one->stop;
}

# --- a repeat an identity provider was asked about again is not kept ----------------------------
# Verified through the records table, the record then deleted: a repeat on a Location with a
# provider asks it every time (nothing of it was kept in the database), and so must it here.
{
    my $dir = $ENV{BANK_TEST_ROOT};
    my $v = verified();
    my $id = $v->{c}{id};
    open my $f, '>', "$dir/fake-ids/$v->{bvn}" or die "fake-ids: $!";
    print $f "Ada||Obi|$v->{dob}\n";
    close $f;
    db_exec("DELETE FROM bvn_records WHERE bvn_hash = (SELECT bvn_hash FROM customers WHERE id = '$id')");
    my $hits = sub {
        open my $h, '<', "$dir/fake-hits" or return 0;
        return scalar grep { /^ok / } <$h>;
    };
    my $before = $hits->();
    my @codes = map { json_request(bvn_req($v, path => '/cached60/dojah/onboarding/bvn'))->code }
      1 .. 4;
    is("@codes", '200 200 200 200', 'provider repeats: 200');
    is($hits->() - $before, 4, 'provider repeats: the provider asked every time, nothing kept');
}

# --- PostgreSQL: the feed's connections killed, then a change ---------------------------------
SKIP: {
    skip 'pg_terminate_backend is PostgreSQL only', 4 unless $pg;
    my $v = verified();
    my $id = $v->{c}{id};
    cached_everywhere($v, 'killed connections');
    my $killed = db_value('SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity'
        . " WHERE datname = current_database() AND application_name = 'bank_bvn_two'");
    ok($killed > 0, "server two's connections killed ($killed)");
    changed_within_a_second($v, 'after the connections were killed',
        sub { db_exec("UPDATE accounts SET balance_minor = 250000 WHERE customer_id = '$id'") },
        sub { balance_of($_[0]) ne '2500.00' });
}

$_->[1]->stop for grep { !$_->[1]{main} } @servers;
done_testing();
