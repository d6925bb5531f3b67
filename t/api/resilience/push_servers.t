# Two servers with push on, on one database (PostgreSQL under DB=pgsql, the SQLite file
# otherwise), each with several processes: notices delivered to both at once produce every
# message exactly once, never one message from two senders (docs/push.md, "How sending
# works"). FCM (the fake) answers in ~50 ms, so the senders overlap.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Webhook;
use Bank::Push;
use Bank::Servers qw(concurrent);

my $fake = fake_start(delay => 0.05);
my @srv  = (push_server($fake), push_server($fake));

my @customers = map { customer_with_devices(2) } 1 .. 6;
my @jobs;
my %want;    # "token reference" => 1
for my $round (1 .. 5) {
    for my $i (0 .. $#customers) {
        my $c = $customers[$i];
        my $n = notice(walletId => $c->{wallet});
        $want{"$_ $n->{data}{transactionReference}"} = 1 for @{ $c->{tokens} };
        push @jobs, [$srv[($i + $round) % 2], delivery($n)];
    }
}
my @res = concurrent(@jobs);
is(scalar(grep { $_->code == 200 } @res), scalar @jobs, 'every notice answered 200');

my %tokens = map { my $c = $_; map { $_ => 1 } @{ $c->{tokens} } } @customers;
sub ours { return grep { $tokens{ $_->{token} } } @{ fake_info($fake)->{calls} } }
ok(wait_for(30, sub { scalar(ours()) >= keys %want }), 'every message reached FCM')
  or diag(scalar(ours()) . ' of ' . scalar(keys %want));
sleep 2;    # anything sent twice would arrive now
my %seen;
$seen{"$_->{token} $_->{message}{data}{transactionReference}"}++ for ours();
is(scalar(keys %seen), scalar(keys %want), 'one message per device and notice');
my @twice = grep { $seen{$_} > 1 } keys %seen;
is(scalar @twice, 0, 'no message sent twice') or diag(explain(\@twice));
is(scalar(grep { !$want{$_} } keys %seen), 0, 'no message that should not be')
  or diag(explain([grep { !$want{$_} } keys %seen]));
if (keys %seen != keys %want) {
    diag(db_value("SELECT state || ' ' || attempts || ' ' || COALESCE(last_error, '-') FROM push_outbox"
          . " WHERE state <> 'sent'"));
    diag(explain([grep { $_->{problem} } @{ fake_info($fake)->{calls} }]));
    diag(db_value("SELECT count(*) FROM push_outbox"), ' rows; ',
        db_value("SELECT count(*) FROM payment_notices WHERE customer_id IS NOT NULL"), ' matched notices');
    my %by; $by{$_->{token}}++ for ours();
    diag(explain(\%by));
}

$_->stop for @srv;
fake_stop($fake);
done_testing();
