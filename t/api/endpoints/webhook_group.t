# Group commit of payment notices (docs/api.md): notices arriving together in one process
# share one transaction, and each request answers only after the transaction that holds its
# notice: a 200 only for a notice that is stored, and when that transaction fails, nobody
# in it gets a 200 and nothing of it is stored (t/unit/test_notice_store.c on both drivers;
# here on PostgreSQL, where a trigger refuses one notice: it alone fails, 500, and the
# notices that shared its transaction are stored again without it and answered 200).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Webhook;
use Bank::SignIn qw(hold_then_commit);
use Bank::Servers qw(main_server concurrent);

my $server = main_server();
my $run    = unique();

sub jobs { return map { [$server, delivery(notice(transactionReference => $_))] } @_ }

# Sixteen at once, four of them copies of others, while another session holds the table
# for a second (so they queue behind the first commit): one transaction then commits several
# (logged at debug level), each copy answers "duplicate": true, every 200 is stored once.
{
    my @refs = map { "TRF-GROUP-$run-many-$_" } 1 .. 12;
    my $mark = $server->error_log_mark;
    my $holder = hold_then_commit(1, $ENV{BANK_DBDRIVER} eq 'pgsql'
        ? 'LOCK TABLE payment_notices IN EXCLUSIVE MODE' : 'SELECT 1');
    my @res  = concurrent(jobs(@refs, @refs[0 .. 3]));
    waitpid $holder, 0;
    is(scalar(grep { $_->code == 200 } @res), 16, 'sixteen concurrent notices: all 200');
    my @dup = map { decode_body($_)->{body}{duplicate} ? 1 : 0 } @res;
    is(scalar(grep { $_ } @dup), 4, 'the four copies answer "duplicate": true');
    is(stored_count($_), 1, "$_: stored once") for @refs;
    my @sizes = $server->error_log_since($mark)
      =~ /BANK0708: (\d+) payment notice\(s\) committed in one transaction/g;
    diag("notices per transaction: @sizes");
    cmp_ok((sort { $b <=> $a } @sizes)[0] // 0, '>', 1, 'one transaction committed several notices');
    my $total = 0;
    $total += $_ for @sizes;
    is($total, 16, 'the transactions held the sixteen notices, each once');
}

SKIP: {
    # SQLite re-prepares nothing after a schema change (apr_dbd's sqlite3_prepare), so a
    # trigger cannot be added under a running server: the refused notice's fallback is
    # C-tested on both drivers instead (t/unit/test_group_commit.c).
    skip 'a trigger added under a running server needs PostgreSQL (SQLite: '
      . 't/unit/test_group_commit.c)', 1
      if $ENV{BANK_DBDRIVER} ne 'pgsql';
    my $bad = "TRF-GROUP-$run-poison";
    db_exec(<<"SQL");
CREATE FUNCTION group_refuse() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN IF NEW.transaction_reference = '$bad' THEN RAISE EXCEPTION 'refused'; END IF;
RETURN NEW; END \$\$;
CREATE TRIGGER group_refuse BEFORE INSERT ON payment_notices
FOR EACH ROW EXECUTE FUNCTION group_refuse();
SQL
    my @refs = map { "TRF-GROUP-$run-ok-$_" } 1 .. 7;
    my @res  = concurrent(jobs($bad, @refs));
    db_exec('DROP TRIGGER group_refuse ON payment_notices; DROP FUNCTION group_refuse()');
    diag('answers: ' . join ',', map { $_->code } @res);
    assert_error($res[0], 500, 'E_INTERNAL', 'the refused notice');
    is(stored_count($bad), 0, 'the refused notice is not stored');
    is(scalar(grep { $_->code == 200 } @res[1 .. $#res]), 7,
        'the notices sent with it: all 200');
    is(stored_count($_), 1, "$_: stored") for @refs;
}
done_testing();
