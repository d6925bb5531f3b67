# Password verifications are bounded per server, across httpd's processes
# (docs/configuration.md, BankPasswordVerifyServerConcurrency): the test server allows one at a
# time, and /wide/sign_in gives each process four verification threads. Concurrent sign-ins
# there are all answered as usual (nobody refused: they wait), and the metrics show that no
# two verifications ever computed at once; the same for argon2id hashes. Then the semaphore is removed under the running
# server (as `ipcrm` or systemd's RemoveIPC would): sign-ins go on, bounded per process only,
# and each process says so once (BANK1404).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Bank::Test;
use Bank::SignIn;
use Bank::Servers qw(main_server concurrent);
use LWP::UserAgent ();
use POSIX ();

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

# --- argon2 verifications take the same bound ----------------------------------------------
# A customer whose stored hash is argon2id as AdonisJS's driver writes it (the hash of
# t/api/endpoints/sign_in_argon2.t): eight concurrent sign-ins, all 200; meanwhile the metrics are read
# in a loop: the sign-ins queued for the bound (more than one waiting at once) and never did
# two compute at once.
my $argon2 = '$argon2id$v=19$m=65536,t=3,p=4$69FjE/fPLzZfE7lBLrrTTA$YAuYW3A3BFB3pCPTyxhRv/qrn4/wOad/SX/rjCS3xbQ';
my $a2 = new_customer();
db_exec("UPDATE customers SET password = '$argon2' WHERE id = '$a2->{id}'");
my $peak = "$ENV{BANK_TEST_ROOT}/argon2-waiting.$$";
my $poller = fork // die "fork: $!";
if (!$poller) {
    my $ua = LWP::UserAgent->new(timeout => 10);
    my $max = 0;
    for (1 .. 600) {
        my ($w) = ($ua->get($server->url('/metrics'))->content
              =~ /^bank_password_verifications_waiting (\d+)$/m);
        $max = $w if defined $w && $w > $max;
        last if -e "$peak.stop";
        select undef, undef, undef, 0.02;
    }
    Bank::Test::spew($peak, $max);
    POSIX::_exit(0);
}
my @a2 = concurrent(map { [$server, sign_in_req($a2->{email}, 'secret-Pa55', '/wide/sign_in')] } 1 .. 8);
Bank::Test::spew("$peak.stop", '');
waitpid $poller, 0;
my $waiting = Bank::Test::slurp($peak);
diag('argon2id answers: ' . join(',', map { $_->code } @a2) . "; most waiting at once: $waiting");
is(scalar(grep { $_->code == 200 } @a2), 8, 'argon2id: eight concurrent sign-ins, all 200');
cmp_ok($waiting, '>=', 2, 'argon2id: they waited for the server bound (the verifier counted them)');
is(gauge('bank_password_verifications_running_max'), 1,
    'argon2id: still never more than one verification computing at once');

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
