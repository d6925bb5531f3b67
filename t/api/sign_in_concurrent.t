# Concurrent sign-ins: twenty at once for one customer each get their own working token,
# and concurrent failures are all counted (the throttle's upsert loses no update).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use File::Temp qw(tempdir);
use Bank::Test;

my $KEY = 'test-client-key-1';
my $dir = tempdir(CLEANUP => 1);

# Runs $n sign-ins at once (one child process each); returns [status, token or ''] per child.
sub at_once {
    my ($n, $body) = @_;
    my @pids;
    for my $i (1 .. $n) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            # a connection of its own, not the parent's kept-alive one
            Apache::TestRequest::user_agent(reset => 1, keep_alive => 0);
            my $r = json_request('POST', '/auth/sign_in',
                headers => { Authorization => "Bearer $KEY" }, body => { %$body, deviceToken => "dev-$i" });
            my $d = decode_body($r);
            my $tok = $d && $d->{body} ? $d->{body}{token}{token} : '';
            open my $fh, '>', "$dir/$i" or die $!;
            print $fh $r->code, ' ', $tok;
            close $fh;
            require POSIX;
            POSIX::_exit(0);
        }
        push @pids, $pid;
    }
    waitpid $_, 0 for @pids;
    my @out;
    for my $i (1 .. $n) {
        open my $fh, '<', "$dir/$i" or die $!;
        push @out, [split / /, scalar(<$fh>) // '', 2];
        close $fh;
        unlink "$dir/$i";
    }
    return @out;
}

my $c = new_customer();
my @res = at_once(20, { email => $c->{email}, password => $c->{password} });
is(scalar(grep { $_->[0] == 200 } @res), 20, 'twenty concurrent sign-ins: all 200')
  or diag(join ', ', map { $_->[0] } @res);
my %tokens = map { ($_->[1] // '') => 1 } grep { $_->[0] == 200 } @res;
is(scalar keys %tokens, 20, 'twenty concurrent sign-ins: twenty distinct tokens');
my $working = grep {
    Apache::TestRequest::GET('/misc/payment_banks', Authorization => "Bearer $_")->code == 200
} keys %tokens;
is($working, 20, 'each of the twenty tokens opens /misc/payment_banks');
is(db_value("SELECT count(*) FROM auth_access_tokens WHERE tokenable_id = '$c->{id}'"), 20,
    'twenty tokens stored');
is(db_value("SELECT count(*) FROM devices WHERE customer_id = '$c->{id}'"), 20,
    'twenty devices recorded');

# Ten wrong passwords at once: every 400 is counted, none lost to a race.
my $w = new_customer();
my @bad = at_once(10, { email => $w->{email}, password => 'wrong' });
my $refused = grep { $_->[0] == 400 } @bad;
my $throttled = grep { $_->[0] == 429 } @bad;
is($refused + $throttled, 10, 'concurrent failures: each answered 400 or 429');
cmp_ok($refused, '>=', 5, 'concurrent failures: at least the allowance was verified');
is(db_value("SELECT failures FROM sign_in_attempts WHERE email = '" . lc($w->{email}) . "'"),
    $refused, 'concurrent failures: every 400 counted in the database');

done_testing();
