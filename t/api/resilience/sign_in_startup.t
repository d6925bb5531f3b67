# BankClientKey unset (docs/configuration.md): httpd logs a warning at start-up, and sign-in takes no
# client key. The test server sets keys, so this starts a small httpd of its own on the
# same database, once without BankClientKey and once with it.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use LWP::UserAgent;
use Bank::Test;
use Bank::Test qw(slurp spew);
use Bank::Docs qw(free_port private_conf);

my $httpd = Bank::Test::httpd_binary();
my $dir = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
chmod 0755, $dir;

# Starts httpd with $extra in its configuration; returns (port, error log text at start-up).
sub start {
    my ($name, $extra) = @_;
    my $port = free_port();
    open my $fh, '>', "$dir/$name.conf" or die $!;
    print $fh private_conf($dir, $name, $port) . <<"CONF";
# the suite's other failed sign-ins from 127.0.0.1 share the per-address count
BankSignInAddressThrottle 1000000 300
<Location /auth/sign_in>
    SetHandler bank-sign-in
</Location>
$extra
CONF
    close $fh;
    system($httpd, '-f', "$dir/$name.conf", '-k', 'start') == 0 or die "$httpd would not start";
    my $log = '';
    for (1 .. 200) {    # start-up is over once httpd says it resumes normal operations
        $log = do { local (@ARGV, $/) = "$dir/$name.log"; <> } // '' if -e "$dir/$name.log";
        last if $log =~ /AH00489/;
        select undef, undef, undef, 0.05;
    }
    return ($port, $log);
}

sub stop {
    my ($name) = @_;
    my $pid = do { local (@ARGV, $/) = "$dir/$name.pid"; <> } // '';
    system($httpd, '-f', "$dir/$name.conf", '-k', 'stop');
    for (1 .. 100) {
        last unless $pid =~ /(\d+)/ && kill 0, $1;
        select undef, undef, undef, 0.05;
    }
}

my $c = new_customer();
my $body = JSON::PP->new->encode({ email => $c->{email}, password => $c->{password},
        deviceToken => 'startup' });
my $ua = LWP::UserAgent->new(timeout => 30);

my ($port, $log) = start('nokey', '');
like($log, qr/\[bank:warn\].*BANK0001: BankClientKey is not set/,
    'BankClientKey unset: warning at start-up');
my $res = $ua->post("http://127.0.0.1:$port/auth/sign_in", 'Content-Type' => 'application/json',
    Content => $body);
is($res->code, 200, 'BankClientKey unset: sign-in without a client key') or diag($res->content);
stop('nokey');

($port, $log) = start('key', 'BankClientKey startup-key-123');
unlike($log, qr/BANK0001/, 'BankClientKey set: no warning');
$res = $ua->post("http://127.0.0.1:$port/auth/sign_in", 'Content-Type' => 'application/json',
    Content => $body);
is($res->code, 401, 'BankClientKey set: sign-in without the key refused');
$res = $ua->post("http://127.0.0.1:$port/auth/sign_in", 'Content-Type' => 'application/json',
    Authorization => 'Bearer startup-key-123', Content => $body);
is($res->code, 200, 'BankClientKey set: sign-in with the key');
stop('key');

# A key in one virtual host must not hide another server's lack of one: the warning is
# per server, naming it.
my $vport = free_port();
($port, $log) = start('vhost', <<"VH");
Listen 127.0.0.1:$vport
<VirtualHost 127.0.0.1:$vport>
    ServerName keyed.example
    BankClientKey vhost-key-123
    <Location /auth/sign_in>
        SetHandler bank-sign-in
    </Location>
</VirtualHost>
VH
my @warned = $log =~ /BANK0001: BankClientKey is not set for server ([^:]+):/g;
is_deeply(\@warned, ['localhost'], 'one warning, for the server without a key only');
is($ua->post("http://127.0.0.1:$port/auth/sign_in", 'Content-Type' => 'application/json',
    Content => $body)->code, 200, 'the server without a key takes sign-ins without one');
is($ua->post("http://127.0.0.1:$vport/auth/sign_in", 'Content-Type' => 'application/json',
    Content => $body)->code, 401, 'the keyed virtual host requires its key');
stop('vhost');

# A key at server scope: a virtual host without its own inherits it, so no warning at all
# (docs/configuration.md: how to silence the warning for servers that map no handler).
$vport = free_port();
($port, $log) = start('scoped', <<"VH");
BankClientKey scoped-key-123
Listen 127.0.0.1:$vport
<VirtualHost 127.0.0.1:$vport>
    ServerName unkeyed.example
    <Location /auth/sign_in>
        SetHandler bank-sign-in
    </Location>
</VirtualHost>
VH
unlike($log, qr/BANK0001/, 'a key at server scope: no warning for either server');
is($ua->post("http://127.0.0.1:$vport/auth/sign_in", 'Content-Type' => 'application/json',
    Content => $body)->code, 401, 'the virtual host without a key of its own requires the inherited one');
is($ua->post("http://127.0.0.1:$vport/auth/sign_in", 'Content-Type' => 'application/json',
    Authorization => 'Bearer scoped-key-123', Content => $body)->code, 200, 'and takes it');
stop('scoped');

# The database in a virtual host only: the main server has none, maps no mod_bank endpoint
# that works, and is not warned about, though it has no key either.
$vport = free_port();
my $main = private_conf($dir, 'nodb', free_port());
my $dbd = join '', $main =~ /^(DBD\w+ .*\n)/mg;
$main =~ s/^DBD\w+ .*\n//mg;
like($dbd, qr/^DBDriver /m, 'the database lines, moved into the virtual host');
spew("$dir/nodb.conf", $main . <<"VH");
Listen 127.0.0.1:$vport
<VirtualHost 127.0.0.1:$vport>
    ServerName dbhost.example
$dbd    <Location /auth/sign_in>
        SetHandler bank-sign-in
    </Location>
</VirtualHost>
VH
system($httpd, '-f', "$dir/nodb.conf", '-k', 'start') == 0 or die "$httpd would not start";
$log = '';
for (1 .. 200) {
    $log = -e "$dir/nodb.log" ? slurp("$dir/nodb.log") : '';
    last if $log =~ /AH00489/;
    select undef, undef, undef, 0.05;
}
@warned = $log =~ /BANK0001: BankClientKey is not set for server ([^:]+):/g;
is_deeply(\@warned, ['dbhost.example'],
    'a warning for the server with a database only, not for the main server without one')
  or diag($log);
is($ua->post("http://127.0.0.1:$vport/auth/sign_in", 'Content-Type' => 'application/json',
    Content => $body)->code, 200, 'the virtual host with the database signs in without a key');
stop('nodb');

done_testing();
