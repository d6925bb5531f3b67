package Bank::Push;
# Helpers for the push notification tests (t/api/*/push*.t, docs/push.md): the fake FCM and
# OAuth server t/fake/fcm.py (it checks the JWT's RS256 signature with the test key, its
# scope and aud), a service-account file for it, a customer with devices and an account, and
# a server with BankPush pointing at the fake.
#
#   my $fake = fake_start();                  # t/fake/fcm.py on a free port
#   fake_control($fake, { token => 'T', answers => [{ status => 503 }] });
#   my @calls = fake_calls($fake, 'T');       # the messages:send calls for device token T
#   my $srv = push_server($fake, 'BankPushAttempts 3');   # Bank::Servers::start_server
#   my $c = customer_with_devices(2);         # {id, wallet, tokens => [...]}
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use JSON::PP ();
use LWP::UserAgent ();
use POSIX ();
use Apache::Test qw(-withtestmore);
use Bank::Test qw(json_request new_customer db_exec unique uuid4 slurp spew);
use Bank::SignIn qw($CLIENT_KEY);
use Bank::Servers qw(start_server);

our @EXPORT = qw(fake_start fake_stop fake_control fake_calls fake_info push_server
  customer_with_devices wait_for outbox_rows server_metric $SA_EMAIL $PROJECT);

our $SA_EMAIL = 'push@test-project.iam.gserviceaccount.com';
our $PROJECT  = 'test-project';
my $json = JSON::PP->new->canonical;
my $ua   = LWP::UserAgent->new(timeout => 30, keep_alive => 1);
# Every fake this test started ends with it, whatever happened; waiting for it must not
# change the test's exit status.
my @started;
END { local $?; fake_stop($_) for @started }

# The source tree (the fake and the test key are read from there, by this test's user).
sub _top { return Apache::Test::vars('top_dir') }

# The fake on a free port: {pid, port, url, credentials (a service-account file only its
# owner reads, token_uri the fake's)}.
sub fake_start {
    my (%o) = @_;
    my $dir = "$ENV{BANK_TEST_ROOT}/fcm-" . unique();
    mkdir $dir or die "$dir: $!";
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        # Its output to a file: a process holding the test's stdout keeps the harness waiting.
        open STDOUT, '>', "$dir/fake.log" or POSIX::_exit(126);
        open STDERR, '>&', \*STDOUT or POSIX::_exit(126);
        { exec('python3', _top() . '/t/fake/fcm.py', '--port-file', "$dir/port", '--pubkey',
            _top() . '/t/fake/push_test_key.pub', '--email', $SA_EMAIL, '--project', $PROJECT,
            '--delay', $o{delay} // 0) }
        POSIX::_exit(127);
    }
    for (1 .. 200) {
        last if -s "$dir/port";
        select undef, undef, undef, 0.05;
    }
    my $port = slurp("$dir/port") or die "the fake FCM server did not start";
    my $self = { pid => $pid, port => $port, url => "http://127.0.0.1:$port", dir => $dir };
    push @started, $self;
    $self->{credentials} = "$dir/service-account.json";
    my $old = umask 077;
    spew($self->{credentials}, $json->encode({
        type           => 'service_account',
        project_id     => $PROJECT,
        private_key_id => 'test-key-1',
        private_key    => slurp(_top() . '/t/fake/push_test_key.pem'),
        client_email   => $SA_EMAIL,
        token_uri      => "$self->{url}/token",
    }));
    umask $old;
    return $self;
}

sub fake_stop {
    my ($f) = @_;
    return unless $f && $f->{pid};
    kill 'TERM', $f->{pid};
    waitpid $f->{pid}, 0;
    $f->{pid} = 0;
}

sub fake_control {
    my ($f, $c) = @_;
    my $res = $ua->post("$f->{url}/control", 'Content-Type' => 'application/json',
        Content => $json->encode($c));
    die 'fake control failed: ' . $res->status_line unless $res->is_success;
}

# Everything the fake saw: {calls => [...], tokens => N, refused => [...]}.
sub fake_info {
    my ($f) = @_;
    my $res = $ua->get("$f->{url}/calls");
    die 'fake calls failed: ' . $res->status_line unless $res->is_success;
    return $json->decode($res->content);
}

# The messages:send calls for one device token, oldest first.
sub fake_calls {
    my ($f, $token) = @_;
    return grep { $_->{token} eq $token } @{ fake_info($f)->{calls} };
}

# Waits up to $secs for $cond->() to be true; returns its last value.
sub wait_for {
    my ($secs, $cond) = @_;
    my $end = time + $secs;
    my $v;
    while (1) {
        $v = $cond->();
        return $v if $v || time > $end;
        select undef, undef, undef, 0.1;
    }
}

# A metric's value (the whole name, labels included) from $srv's /metrics, -1 if absent.
sub server_metric {
    my ($srv, $name) = @_;
    my ($v) = $srv->request(GET => '/metrics')->content =~ /^\Q$name\E (\S+)$/m;
    return $v // -1;
}

# Another httpd (Bank::Servers::start_server) with push on, to the fake; more lines appended.
sub push_server {
    my ($f, @lines) = @_;
    return start_server(extra => join("\n", "", "BankPush fcm $PROJECT $f->{url}",
        "BankPushCredentials $f->{credentials}", @lines, ""));
}

# A customer signed in from $n devices (fresh tokens), with an account whose bank-side id is
# {wallet}.
sub customer_with_devices {
    my ($n) = @_;
    my $c = new_customer();
    my $u = unique();
    $c->{wallet} = "WAL-$u";
    $c->{tokens} = [map { "fcm-token-$u-$_" } 1 .. $n];
    for my $t (@{ $c->{tokens} }) {
        my $res = json_request('POST', '/auth/sign_in', headers => { Authorization => "Bearer $CLIENT_KEY" },
            body => { email => $c->{email}, password => $c->{password}, deviceToken => $t });
        die 'sign-in failed: ' . $res->status_line unless $res->code == 200;
    }
    my $acctno = '8' . substr($u, -9);
    db_exec("INSERT INTO accounts (id, customer_id, status, bank_name, bank_account_id,"
          . " account_name, account_number, created_at, updated_at) VALUES ('${\ uuid4()}',"
          . " '$c->{id}', 'bvn_verified', 'mod_bank Test Bank', '$c->{wallet}', 'ADA OBI',"
          . " '$acctno', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')");
    return $c;
}

# The outbox rows of the notice with this reference: [{id, state, attempts, device_token,
# last_error}], by id.
sub outbox_rows {
    my ($ref) = @_;
    my $out = db_exec("SELECT o.id || '|' || o.state || '|' || o.attempts || '|' ||"
          . " o.device_token || '|' || COALESCE(o.last_error, '') FROM push_outbox o"
          . " JOIN payment_notices n ON n.id = o.notice_id"
          . " WHERE n.transaction_reference = '$ref' ORDER BY o.id");
    return map {
        my @f = split /\|/, $_, 5;
        { id => $f[0], state => $f[1], attempts => $f[2], device_token => $f[3], last_error => $f[4] }
    } grep { length } split /\n/, $out;
}

1;
