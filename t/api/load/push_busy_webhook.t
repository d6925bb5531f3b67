# The push sender gives way to a busy webhook: while 8 or more payment notices wait for their
# commit across the server, its rounds are lean (10 messages; bank_push_lean_rounds_total),
# even with the CPUs idle, and every message still goes out (docs/push.md, "Under a flood").
# The notices are made to wait by another session inserting their keys and holding them
# uncommitted; the messages due meanwhile are outbox rows of an earlier notice.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Webhook;
use Bank::Push;
use Bank::Servers qw(require_pgsql concurrent pg_hold);

require_pgsql('the notices are held by row locks while the sender writes the outbox; on '
      . 'SQLite both need the file\'s one write lock, so the sender would wait too');

my $fake = fake_start(delay => 0.05);
# BankPushSpareCPU 1: the CPUs count as having room unless fully busy
my $srv = push_server($fake, 'BankPushSpareCPU 1', 'BankDatabaseTimeout 30');

sub lean { return server_metric($srv, 'bank_push_lean_rounds_total') }

my $c = customer_with_devices(1);
my $first = notice(walletId => $c->{wallet});
is($srv->request(delivery($first))->code, 200, 'a first notice stored');
ok(wait_for(5, sub { fake_calls($fake, $c->{tokens}[0]) }), 'its message sent at once');
is(lean(), 0, 'no lean round while the webhook is quiet');

# 30 more messages of that notice, due in 1.5 s: while the notices below wait
my $u   = unique();
my $nid = db_value("SELECT id FROM payment_notices WHERE transaction_reference = "
      . "'$first->{data}{transactionReference}'");
chomp $nid;
my @tokens = map { "busy-$u-$_" } 1 .. 30;
db_exec('INSERT INTO push_outbox (notice_id, customer_id, device_token, next_at, created_at)'
      . " VALUES " . join(', ', map { "('$nid', '$c->{id}', '$_', now() + interval '1.5 seconds', now())" } @tokens));

# 12 notices whose keys another session is inserting and holds uncommitted: theirs wait
my @held = map { notice(walletId => "NO-WALLET-$u") } 1 .. 12;
my $partner = db_value("SELECT partner FROM payment_notices WHERE id = '$nid'");
chomp $partner;
my $holder = pg_hold(5, 'INSERT INTO payment_notices (id, partner, service, type, status,'
      . ' status_code, transaction_reference, raw_body, received_at) VALUES '
      . join(', ', map { "(gen_random_uuid(), '$partner', 'payments', 'fund_transfer', 'received',"
          . " 'T100', '$_->{data}{transactionReference}', '{}', now())" } @held));
my @res = concurrent(map { [$srv, delivery($_)] } @held);
my $sent_meanwhile = grep { fake_calls($fake, $_) } @tokens;
waitpid $holder, 0;
is(scalar(grep { $_->code == 200 } @res), 12, 'the held notices answered 200 once the lock went')
  or diag(join "\n", map { $_->status_line } @res);
cmp_ok(lean(), '>', 0, '12 notices waiting for their commit: lean rounds, CPUs idle or not');
cmp_ok($sent_meanwhile, '>', 0, 'messages went out while the notices waited (lean, not stopped)');
ok(wait_for(20, sub { (grep { fake_calls($fake, $_) } @tokens) == @tokens }),
    'every message due meanwhile reached FCM')
  or diag(scalar(grep { fake_calls($fake, $_) } @tokens) . ' of ' . scalar @tokens);

$srv->stop;
fake_stop($fake);
done_testing();
