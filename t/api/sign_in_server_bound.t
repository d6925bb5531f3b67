# Password verifications are bounded per server, across httpd's processes
# (docs/configuration.md, BankPasswordVerifyServerConcurrency): the test server allows one at a
# time, and /wide/sign_in gives each process four verification threads. Concurrent sign-ins
# there are all answered as usual (nobody refused: they wait), and the metrics show that no
# two verifications ever computed at once.
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

done_testing();
