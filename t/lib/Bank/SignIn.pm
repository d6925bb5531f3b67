package Bank::SignIn;
# Helpers for the sign-in throttle tests (t/api/security/sign_in_throttle.t, sign_in_concurrent.t,
# pg_servers.t): a sign-in as a request that any server can send, the checks of a 429, and
# another database session holding throttle rows while a sign-in runs.
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use POSIX qw(strftime);
use Apache::Test qw(-withtestmore);
use Bank::Test;

our @EXPORT = qw(hash_majority sign_in_req sign_in is_429 attempts_row iso_ago hold_then_commit
  sign_in_outcomes $CLIENT_KEY);

our $CLIENT_KEY = 'test-client-key-1';

# (METHOD, path, options) of a sign-in: for json_request, a server's request() or
# Bank::Servers::concurrent.
sub sign_in_req {
    my ($email, $password, $path) = @_;
    return ('POST', $path || '/auth/sign_in',
        headers => { Authorization => "Bearer $CLIENT_KEY" },
        body    => { email => $email, password => $password, deviceToken => 'throttle-device' });
}

# A sign-in against the test server.
sub sign_in { return json_request(sign_in_req(@_)) }

# failures|ip of the throttle row of a lower-cased e-mail ('' when there is none).
sub attempts_row {
    my ($email) = @_;
    return db_value("SELECT failures || '|' || ip FROM sign_in_attempts WHERE email = '$email'");
}

# The time $secs seconds ago as the module stores it (2026-11-22T07:40:22.000Z).
sub iso_ago { return strftime('%Y-%m-%dT%H:%M:%S.000Z', gmtime(time - $_[0])) }

# Runs the statements @sql in a transaction of another database session, in the background,
# that holds what they write (rows, unique keys; on SQLite the database's write lock) for
# $secs seconds and then COMMITS. Returns the holder's pid (waitpid it; $? 0: it held and
# committed) once it holds.
my $holds = 0;

sub hold_then_commit {
    my ($secs, @sql) = @_;
    my $flag = "$ENV{BANK_TEST_ROOT}/hold.$$." . $holds++;
    my $stmts = join '', map { "$_;\n" } @sql;
    my ($script, @cmd);
    if ($ENV{BANK_DBDRIVER} eq 'sqlite3') {
        $script = ".timeout 10000\nBEGIN IMMEDIATE;\n$stmts.shell touch $flag\n"
          . ".shell sleep $secs\nCOMMIT;\n";
        @cmd = ('sqlite3', '-bail', $ENV{BANK_DBPARAMS});
        unshift @cmd, qw(runuser -u nobody --) if $> == 0;    # as httpd: the file is its
    } else {
        $script = "BEGIN;\n$stmts\\! touch $flag\nSELECT pg_sleep($secs);\nCOMMIT;\n";
        @cmd = ($ENV{BANK_PSQL} // 'psql', '-X', '-q', '-o', '/dev/null', '-v', 'ON_ERROR_STOP=1',
            $ENV{BANK_PSQL_URL});
    }
    open my $in, '>', "$flag.sql" or die "hold_then_commit: $!";
    print $in $script;
    close $in;
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        open STDIN, '<', "$flag.sql" or POSIX::_exit(1);
        { exec @cmd }
        POSIX::_exit(1);
    }
    for (1 .. 400) {
        if (-e $flag) {
            unlink $flag, "$flag.sql";
            return $pid;
        }
        last if waitpid($pid, POSIX::WNOHANG()) == $pid;    # it failed
        select undef, undef, undef, 0.025;
    }
    kill 'TERM', $pid;
    waitpid $pid, 0;
    die "hold_then_commit: the holder never held (@sql)";
}

# What sign-ins logged: each one logs exactly one of these lines (LogLevel bank:info or more).
my %OUTCOME = (
    unchecked => 'BANK0502',    # 429 before the password was verified, not counted
    refused   => 'BANK0503',    # 400, a counted failure within the limit
    signed_in => 'BANK0507',    # 200
    over      => 'BANK0509',    # 429 for a wrong password counted over the limit
    late      => 'BANK0510',    # 429 for a right password: the limit was reached meanwhile
);

# The outcomes servers logged after their marks ([$server, $mark] pairs of Bank::Servers
# objects), once $want of them are there (a line may land a moment after its answer): a
# hash of counts by the names above, and text => the lines.
sub sign_in_outcomes {
    my ($want, @marks) = @_;
    my %n;
    for (1 .. 30) {
        my $log = join '', map { $_->[0]->error_log_since($_->[1]) } @marks;
        my $all = 0;
        %n = (text => $log);
        for my $k (keys %OUTCOME) {
            $all += $n{$k} = () = $log =~ /\b$OUTCOME{$k}:/g;
        }
        last if $all >= $want;
        select undef, undef, undef, 0.1;
    }
    return \%n;
}

# Checks a throttled answer: Retry-After within 1..$max_wait, X-RateLimit-Limit $limit (the
# test server's BankSignInThrottle is `5 60`: with $max_wait 60 and no $limit, 5);
# returns its Retry-After.
sub is_429 {
    my ($res, $name, $max_wait, $limit) = @_;
    $limit //= 5 if $max_wait == 60;
    assert_error($res, 429, 'E_TOO_MANY_REQUESTS', $name);
    my $ra = $res->header('Retry-After') // '';
    like($ra, qr/^\d+$/, "$name: Retry-After in seconds");
    ok($ra >= 1 && $ra <= $max_wait, "$name: Retry-After within the window (1..$max_wait)")
      or diag("Retry-After: $ra");
    is($res->header('X-RateLimit-Limit'), $limit, "$name: X-RateLimit-Limit $limit") if defined $limit;
    is($res->header('X-RateLimit-Remaining'), 0, "$name: X-RateLimit-Remaining 0");
    return $ra;
}

# Rows of one password hash, twice as many as all the others, so that the hash an unknown
# e-mail is verified against (BankPasswordDummyRefresh) is that one: each process samples 256
# hashes from a random place, and a bare majority would lose such a sample often. Returns
# their e-mail prefix.
sub hash_majority {
    my ($hash) = @_;
    my $n    = 2 * db_value('SELECT count(*) FROM customers') + 40;
    my $u    = Bank::Test::unique();
    my @rows = map {
        "('" . Bank::Test::uuid4() . "', 'imported$u.$_\@example.com', '$hash', 'Imp', 'Orted',"
          . " '+2348012345678', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')"
    } 1 .. $n;
    while (my @chunk = splice @rows, 0, 200) {
        db_exec('INSERT INTO customers (id, email, password, first_name, last_name, phone,'
              . ' created_at, updated_at) VALUES ' . join(',', @chunk));
    }
    return "imported$u";
}

1;
