# Revocation within a second with the token cache on (docs/security.md): a token cached by
# every process (BankTokenCacheSeconds 60 on /cached60/banks) is refused by every process of
# every server within 1 s of its row being deleted by sign-out, by bankctl token revoke or by
# plain SQL (its own row, or its customer's with SQLite's foreign keys off), or of its expiry,
# polled every 50 ms. On PostgreSQL two servers share the
# database, and the connections server two reads the revocation feed on are killed
# (pg_terminate_backend) before a revocation; on SQLite one server.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time sleep);
use MIME::Base64 ();
use Bank::Test;
use Bank::Servers qw(concurrent feed_servers poll_a_second);

my $pg      = $ENV{BANK_DBDRIVER} ne 'sqlite3';
my $path    = '/cached60/banks';
my @servers = feed_servers('bank_two');
my $per_server = 12;    # requests at once per server and round: more than its processes

sub token_id {
    my ($t) = @_;
    my ($b) = $t =~ /^oat_([^.]+)\./;
    $b =~ tr{-_}{+/};
    return MIME::Base64::decode_base64($b . '=' x ((4 - length($b) % 4) % 4));
}

# One round: $per_server requests at once on new connections to every server; the codes.
sub round {
    my ($token) = @_;
    my @jobs = map { my $s = $_->[1]; map { [$s, GET => $path,
        headers => { Authorization => "Bearer $token" }] } 1 .. $per_server } @servers;
    return map { $_->code } concurrent(@jobs);
}

# Changes the token's row unseen by the caches: in one transaction with the removal of the
# revocation the change added, so no process ever reads that revocation.
sub unseen {
    my ($id, $sql) = @_;
    db_exec("BEGIN; $sql; DELETE FROM auth_token_revocations WHERE token_id = $id; COMMIT;");
}

# A token verified and kept by every process that answers: after warm-up rounds, its hash is
# changed in the database unseen by the caches; a round then all 200 was answered from the
# caches (a process reading the database would refuse it). The hash is put back after.
sub cached_everywhere {
    my ($token, $what) = @_;
    my $id = token_id($token);
    my @codes;
    for my $try (1 .. 5) {
        @codes = round($token) for 1 .. 2;
        next if grep { $_ != 200 } @codes;
        unseen($id, "UPDATE auth_access_tokens SET hash = 'x' || hash WHERE id = $id");
        @codes = round($token);
        unseen($id, "UPDATE auth_access_tokens SET hash = substr(hash, 2) WHERE id = $id");
        last unless grep { $_ != 200 } @codes;
    }
    is(scalar(grep { $_ != 200 } @codes), 0, "$what: every process of every server answers "
        . 'the token from its cache') or diag("@codes");
}

# Polls every 50 ms once $revoke returned: every answer refused (401, or $code) within 1 s, and
# still after.
sub refused_within_a_second {
    my ($token, $what, $revoke, $code, $error) = @_;
    $code  //= 401;
    $error //= 'E_UNAUTHORIZED_ACCESS';
    $revoke->();    # the revocation committed (or the expiry reached)
    my ($last_ok, @codes) = poll_a_second(sub { round($token) }, sub { $_[0] == 200 });
    ok(!defined $last_ok || $last_ok < 1.0, "$what: refused by every process of every "
        . 'server within 1 s') or diag(sprintf 'last 200 at %.3f s', $last_ok);
    is(scalar(grep { $_ != $code } @codes), 0, "$what: and refused after") or diag("@codes");
    my $r = $servers[0][1]->request(GET => $path, headers => { Authorization => "Bearer $token" });
    assert_error($r, $code, $error, "$what: the error");
}

# --- sign-out on one server -------------------------------------------------------------------
{
    my $c = new_customer();
    my $t = issue_token($c->{email});
    cached_everywhere($t, 'sign-out');
    refused_within_a_second($t, 'sign-out', sub {
        my $r = $servers[-1][1]->request(POST => '/auth/sign_out',
            headers => { Authorization => "Bearer $t" });
        is($r->code, 200, 'sign-out answered');
    });
}

# --- bankctl token revoke ---------------------------------------------------------------------
{
    my $c = new_customer();
    my $t = issue_token($c->{email});
    cached_everywhere($t, 'bankctl');
    refused_within_a_second($t, 'bankctl token revoke',
        sub { bankctl('token', 'revoke', '--email', $c->{email}) });
}

# --- another application's plain SQL DELETE -------------------------------------------------
{
    my $c = new_customer();
    my $t = issue_token($c->{email});
    my $id = token_id($t);
    cached_everywhere($t, 'SQL');
    refused_within_a_second($t, 'SQL DELETE',
        sub { db_exec("DELETE FROM auth_access_tokens WHERE id = $id") });
}

# --- the customer's row deleted by plain SQL: on SQLite by the sqlite3 shell, whose foreign
# keys are off (no cascade), as another application's connection may be -------------------
{
    my $c = new_customer();
    my $t = issue_token($c->{email});
    cached_everywhere($t, 'customer deleted');
    refused_within_a_second($t, "the token's customer deleted by plain SQL",
        sub { db_exec("DELETE FROM customers WHERE id = '$c->{id}'") });
    is(db_value("SELECT count(*) FROM auth_access_tokens WHERE tokenable_id = '$c->{id}'"), 0,
        "the customer's tokens went with the row");
}

# --- expiry: never answered from a cache past expires_at ------------------------------------
# The expiry set 8 s ahead (a change every cache hears of), the row then cached everywhere with
# it: refused within 1 s of that moment, with no revocation at all.
{
    my $c  = new_customer();
    my $t  = issue_token($c->{email});
    my $id = token_id($t);
    my $t0 = time;
    db_exec($pg
        ? "UPDATE auth_access_tokens SET expires_at = now() + interval '8 seconds' WHERE id = $id"
        : "UPDATE auth_access_tokens SET expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+8 seconds') WHERE id = $id");
    cached_everywhere($t, 'expiry');
    ok(time - $t0 < 7.5, 'expiry: cached everywhere before the token expires') or diag(time - $t0);
    refused_within_a_second($t, 'expiry', sub { sleep 8 - (time - $t0) if time - $t0 < 8 });
}

# --- a change of what verifies the token (its abilities) reaches every cache --------------
{
    my $c = new_customer();
    my $t = issue_token($c->{email});
    my $id = token_id($t);
    cached_everywhere($t, 'abilities');
    refused_within_a_second($t, 'abilities narrowed', sub {
        db_exec(qq{UPDATE auth_access_tokens SET abilities = '["onboarding:bvn"]' WHERE id = $id});
    }, 403, 'E_FORBIDDEN');
}

# --- PostgreSQL: the feed's connections killed, then a revocation ---------------------------
SKIP: {
    skip 'pg_terminate_backend is PostgreSQL only', 6 unless $pg;
    my $c = new_customer();
    my $t = issue_token($c->{email});
    my $id = token_id($t);
    cached_everywhere($t, 'killed connections');
    my $killed = db_value('SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity'
        . " WHERE datname = current_database() AND application_name = 'bank_two'");
    ok($killed > 0, "server two's connections killed ($killed)");
    refused_within_a_second($t, 'after the connections were killed',
        sub { db_exec("DELETE FROM auth_access_tokens WHERE id = $id") });
}

$_->[1]->stop for grep { !$_->[1]{main} } @servers;
done_testing();
