# Virtual hosts without DBD directives of their own share the main server's mod_dbd record:
# mod_bank prepares its statements into it once, so mod_dbd logs no "conflicting SQL
# statements with label" (AH02653) at start or graceful restart, and every virtual host,
# also one with its own pool settings, serves from the database. Either driver.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Test;
use Bank::Docs qw(free_port spew private_conf);

my $dir = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT});
chmod 0755, $dir;
# three different ports: free_port can give the same one twice (the kernel hands a port
# closed a moment ago out again), and httpd then refuses two Listen lines for it
my (@ports, %seen);
while (@ports < 3) {
    my $p = free_port();
    push @ports, $p unless $seen{$p}++;
}
my $vhosts = join '', map {
    "<VirtualHost 127.0.0.1:$ports[$_]>\n" . ($_ == 2 ? "    DBDMax 4\n" : '') . "</VirtualHost>\n"
} 0 .. 2;
spew("$dir/httpd.conf", private_conf($dir, 'httpd', @ports) . <<"CONF");
DBDMin 0
BankClientKey vhost-client-key
<Location /misc/payment_banks>
    SetHandler bank-banks
</Location>
$vhosts
CONF

my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $ports[0],
    log => "$dir/httpd.log", pidfile => "$dir/httpd.pid");
$h->start('three virtual hosts') or BAIL_OUT('no server');
my $c     = new_customer();
my $token = issue_token($c->{email});

sub every_vhost {
    my ($when) = @_;
    for my $p (@ports) {
        my $res = json_request(GET => "http://127.0.0.1:$p/misc/payment_banks",
            headers => { Authorization => "Bearer $token" });
        is($res->code, 200, "$when: the virtual host on port $p serves the bank list")
          or diag($res->as_string);
    }
}
every_vhost('after a start');
my $log = $h->log_since(0);
is(() = $log =~ /AH02653/g, 0, 'after a start: no conflicting SQL statements');

my $mark = $h->log_mark;
$h->graceful('three virtual hosts');
every_vhost('after a graceful restart');
is(() = $h->log_since($mark) =~ /AH02653/g, 0, 'after a graceful restart: no conflicting SQL statements');
$h->stop;

done_testing();
