# Token uses (auth_access_tokens.last_used_at, docs/configuration.md "Token uses") are noted
# on a request's way and written by each process's writer about once a second, never by the
# request: a request is answered at once while another session holds what the write needs
# (SQLite: the database's write lock; PostgreSQL: the token's row), and the use is recorded
# once it is free; uses of many tokens at once are all recorded; a server that stops writes
# what it noted before it exits.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Time::HiRes ();
use Bank::Test;
use Bank::Test qw(token_id db_wait);
use Bank::SignIn qw(hold_then_commit);
use Bank::Servers qw(start_server concurrent main_server);

my $pg   = $ENV{BANK_DBDRIVER} eq 'pgsql';
my $mark = error_log_mark();
sub banks { return (GET => '/misc/payment_banks', headers => { Authorization => "Bearer $_[0]" }) }
sub used  { return "SELECT last_used_at IS NOT NULL FROM auth_access_tokens WHERE id = $_[0]" }

# --- the write held by another session ------------------------------------------------------
my $token = issue_token(new_customer()->{email});
my $id    = token_id($token);
db_exec("UPDATE auth_access_tokens SET last_used_at = NULL WHERE id = $id");
my $holder = hold_then_commit(3, $pg ? "SELECT 1 FROM auth_access_tokens WHERE id = $id FOR UPDATE"
    : 'SELECT 1');
my $t0  = Time::HiRes::time();
my $res = json_request(banks($token));
my $took = Time::HiRes::time() - $t0;
is($res->code, 200, 'write held elsewhere: the bank list answers 200');
cmp_ok($took, '<', 1, "without waiting for the write ($took s)");
waitpid $holder, 0;
is($?, 0, 'the other session held for 3 s and committed');
ok(db_wait(6, used($id)), 'the use is recorded once the write is free (the writer tries again)');

# --- many tokens at once -----------------------------------------------------------------------
my @tokens = map { scalar issue_token(new_customer()->{email}) } 1 .. 30;
my @ids    = map { token_id($_) } @tokens;
db_exec('UPDATE auth_access_tokens SET last_used_at = NULL WHERE id IN (' . join(',', @ids) . ')');
my @all = concurrent(map { [main_server(), banks($_)] } @tokens);
is(scalar(grep { $_->code == 200 } @all), 30, 'thirty tokens at once: all 200');
ok(db_wait(6, 'SELECT count(*) = 30 FROM auth_access_tokens WHERE last_used_at IS NOT NULL AND id IN ('
        . join(',', @ids) . ')'), 'every one of the thirty uses recorded');

# --- a server that stops writes what it noted -----------------------------------------------
my $two = start_server();
my $t2  = issue_token(new_customer()->{email});
my $id2 = token_id($t2);
db_exec("UPDATE auth_access_tokens SET last_used_at = NULL WHERE id = $id2");
is($two->request(banks($t2))->code, 200, 'another server: the bank list');
$two->stop;    # at once: well within its writer's second
ok(db_bool(used($id2)), 'its use was recorded before it exited');
unlike($two->error_log_since(0), qr/BANK2401|BANK2402/, 'no use lost, no writer missing');
sleep 2;    # the test server's writers' next rounds
unlike(error_log_since($mark), qr/exit signal|BANK2402/,
    'the test server: no process died, every one has its writer');

done_testing();
