# Password verifications are bounded per server, across httpd's processes
# (docs/configuration.md, BankPasswordVerifyServerConcurrency): the test server allows one at a
# time, and /wide/sign_in gives each process four verification threads. Concurrent sign-ins
# there are all answered as usual (nobody refused: they wait), and the metrics show that no
# two verifications ever computed at once. Then the semaphore is removed under the running
# server (as `ipcrm` or systemd's RemoveIPC would): sign-ins go on, bounded per process only,
# and each process says so once (BANK1404).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Bank::Test;
use Bank::SignIn;
use Bank::Servers qw(main_server concurrent);

sub gauge {
    my ($name) = @_;
    my $res = GET('/metrics');
    is($res->code, 200, 'GET /metrics') unless $res->code == 200;
    my ($v) = $res->content =~ /^\Q$name\E (\d+)$/m;
    return $v;
}

my $server = main_server();
my $c      = new_customer();
my @jobs   = map { [$server, sign_in_req($c->{email}, $c->{password}, '/wide/sign_in')] } 1 .. 12;
my @res    = concurrent(@jobs);
diag('answers: ' . join ',', map { $_->code } @res);
is(scalar(grep { $_->code == 200 && decode_body($_)->{body}{token}{token} } @res), 12,
    'twelve concurrent sign-ins on four threads per process: all 200 with a token');
is(gauge('bank_password_verifications_running_max'), 1,
    'never more than one verification computing at once in all processes (the server bound)');
is(gauge('bank_password_verifications_waiting'), 0, 'none under way once all are answered');

# --- the semaphore removed from outside -----------------------------------------------------
my @ids = Bank::Test::error_log_since(0) =~
  /BANK1405: BankPasswordVerifyServerConcurrency: 1 slots, semaphore id (\d+)/g;
ok(scalar @ids, 'start-up logs the server\'s semaphore (BANK1405)');
is(system('ipcrm', '-s', $ids[-1]), 0, 'the semaphore is removed from outside (ipcrm -s)');
my $mark  = $server->error_log_mark;
my @after = concurrent(map { [$server, sign_in_req($c->{email}, $c->{password}, '/wide/sign_in')] }
      1 .. 8);
is(scalar(grep { $_->code == 200 } @after), 8, 'without it, eight concurrent sign-ins: all 200');
my $log = $server->error_log_since($mark);
my @lost = $log =~ /\[pid (\d+)[^\]]*\][^\n]*BANK1404: the semaphore of BankPasswordVerifyServerConcurrency is gone/g;
cmp_ok(scalar @lost, '>=', 1, 'the loss is logged (BANK1404)');
my %per;
$per{$_}++ for @lost;
is(scalar(grep { $_ > 1 } values %per), 0, 'once per process, not once per sign-in') or diag(join ',', %per);

done_testing();
