# The in-process bank-list cache of GET /misc/payment_banks (docs/api.md, docs/configuration.md):
# one entry per server in each httpd child, read until it is BankBanksMaxAge old. Every
# request here travels on ONE kept-alive connection, so one child (and so one cache) serves
# them all; the test checks that the connection really was the same each time.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use LWP::UserAgent;
use Scalar::Util qw(refaddr);
use Time::HiRes qw(sleep);
use Bank::Test;

my $c     = new_customer();
my $token = issue_token($c->{email}, '--abilities', 'banks:read');
my $ua    = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
my $orig  = db_value("SELECT name FROM banks WHERE code = '057'");
my $renamed = 'Zenith Bank Cache ' . unique();
my ($conn_id, $port);

# GET on the one connection, checking it was not replaced.
sub get {
    my ($path, $name) = @_;
    my $res = json_request('GET', $path, headers => { Authorization => "Bearer $token" },
        ua => $ua);
    is($res->code, 200, "$name: 200");
    my @conns = $ua->conn_cache->get_connections;
    is(scalar @conns, 1, "$name: the agent holds one connection");
    if (@conns) {
        $conn_id //= refaddr $conns[0];
        $port    //= $conns[0]->sockport;
        ok(refaddr $conns[0] == $conn_id && $conns[0]->sockport == $port,
            "$name: on the same connection (client port $port)");
    }
    return $res;
}

# Whether the list in $res names a bank $n.
sub has_name {
    my ($res, $n) = @_;
    my $d = decode_body($res) || {};
    return scalar grep { $_->{name} eq $n } @{ $d->{body}{banks} || [] };
}

is(db_value("SELECT count(*) FROM banks WHERE code = '057' AND active = 1"), 1,
    'the bank to rename is listed');

# A fresh entry to start from: after a second, the 1-second Location refreshes it.
sleep 1.2;
my $fresh = get('/short/banks', 'refresh');
is($fresh->header('Cache-Control'), 'private, max-age=1', 'refresh: max-age 1 there');
ok(has_name($fresh, $orig), "refresh: lists '$orig'");

my $before = get('/misc/payment_banks', 'before');
is($before->header('Cache-Control'), 'private, max-age=300', 'before: max-age 300');
is($before->content, $fresh->content, 'before: the same list');

db_exec("UPDATE banks SET name = '$renamed' WHERE code = '057'");

# Within max-age the child answers from its entry, not from the database.
my $cached = get('/misc/payment_banks', 'cached');
is($cached->content, $before->content, 'cached: byte-identical to the list before the change');
is($cached->header('ETag'), $before->header('ETag'), 'cached: the same ETag');
ok(!has_name($cached, $renamed), 'cached: the new name is not there yet');
# ...while the database has the change: max-age 0 reads it at every request.
my $direct = get('/v2/banks', 'max-age 0');
ok(has_name($direct, $renamed), 'max-age 0: the database has the new name');

# Once the entry is older than a Location's max-age, that Location refreshes it.
sleep 1.2;
my $expired = get('/short/banks', 'expired');
ok(has_name($expired, $renamed), 'expired: the new name');
ok(!has_name($expired, $orig), 'expired: the old name is gone');
isnt($expired->header('ETag'), $before->header('ETag'), 'expired: a new ETag');
is($expired->header('ETag'), $direct->header('ETag'), 'expired: the ETag of the new list');
# The entry is the server's: the max-age 300 Location now reads the refreshed one.
my $after = get('/misc/payment_banks', 'after');
is($after->content, $expired->content, 'after: the refreshed list, shared by the server');

# Put the name back, and the cache with it, for the tests that follow.
db_exec("UPDATE banks SET name = '$orig' WHERE code = '057'");
sleep 1.2;
my $restored = get('/short/banks', 'restored');
ok(has_name($restored, $orig), 'restored: the original name is cached again');
is($restored->header('ETag'), $before->header('ETag'), 'restored: the original ETag');

done_testing();
