# Two httpd servers on different ports sharing one PostgreSQL (issue 6, point 4), for what
# exists now: a token issued by bankctl works on both; a revocation or an expiry is seen by
# both at once (tokens are looked up in the database on every request: the bound is 0 s);
# requests split across both at the same moment all succeed. The sign-in throttle, webhook
# and BVN cross-server cases are listed in t/lib/Bank/Servers.pm, to be added with those
# endpoints.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Servers qw(require_pgsql main_server start_server concurrent);

require_pgsql('runs two httpd servers on one database');

my $one = main_server();
my $two = start_server();
isnt($two->port, Apache::Test::vars('port'), 'a second server on its own port');
my @both = ([one => $one], [two => $two]);

sub banks {
    my ($server, $token, $path) = @_;
    return $server->request(GET => $path // '/misc/payment_banks',
        headers => { Authorization => "Bearer $token" });
}

# --- a token issued by bankctl is accepted by both -------------------------------------------
my $c     = new_customer();
my $token = issue_token($c->{email});
for (@both) {
    my ($name, $s) = @$_;
    my $r = banks($s, $token);
    is($r->code, 200, "token from bankctl accepted by server $name");
    is(decode_body($r)->{body}{banks}[0]{name} // '', decode_body(banks($one, $token))->{body}{banks}[0]{name},
        "server $name: same bank list");
}
is(banks($two, $token)->header('ETag'), banks($one, $token)->header('ETag'),
    'both servers render the same list (same ETag)');

# Used on one, then the other: both record use on the same row.
my ($id) = $token =~ /^oat_([^.]+)\./;
$id = do { (my $s = $id) =~ tr{-_}{+/}; require MIME::Base64; MIME::Base64::decode_base64($s . '=' x ((4 - length($s) % 4) % 4)) };
db_exec("UPDATE auth_access_tokens SET last_used_at = NULL WHERE id = $id");
is(banks($two, $token)->code, 200, 'used on server two');
is(db_bool("SELECT last_used_at IS NOT NULL FROM auth_access_tokens WHERE id = $id"), 1,
    'server two recorded the use in the shared database');

# --- a revocation is seen by both at once (bound: 0 s) -------------------------------------
my $c2 = new_customer();
my $t2 = issue_token($c2->{email});
is(banks($_->[1], $t2)->code, 200, "before revoke: server $_->[0] accepts") for @both;
bankctl('token', 'revoke', '--email', $c2->{email});
for (@both) {
    my ($name, $s) = @$_;
    assert_error(banks($s, $t2), 401, 'E_UNAUTHORIZED_ACCESS', "revoked, at once on server $name");
}

# --- an expiry written in the database is seen by both at once ----------------------------
my $c3 = new_customer();
my $t3 = issue_token($c3->{email});
my ($id3) = $t3 =~ /^oat_([^.]+)\./;
$id3 = do { (my $s = $id3) =~ tr{-_}{+/}; MIME::Base64::decode_base64($s . '=' x ((4 - length($s) % 4) % 4)) };
is(banks($two, $t3)->code, 200, 'before expiry: server two accepts');
db_exec("UPDATE auth_access_tokens SET expires_at = now() - interval '1 second' WHERE id = $id3");
assert_error(banks($_->[1], $t3), 401, 'E_UNAUTHORIZED_ACCESS', "expired, on server $_->[0]")
  for @both;

# --- the same customer's requests split across both at the same moment --------------------
my @res = concurrent(map { [$_ % 2 ? $one : $two, GET => '/misc/payment_banks',
    headers => { Authorization => "Bearer $token" }] } 1 .. 12);
is(scalar(grep { $_->code == 200 } @res), 12, '12 simultaneous requests split across both: 200');
is(scalar(keys %{ { map { ($_->header('ETag') // '') => 1 } @res } }), 1,
    'and the same list from both');

# --- the per-server bank-list cache: BankBanksMaxAge 0 sees a change on both at once ------
db_exec("UPDATE banks SET name = 'Zenith Bank Two' WHERE code = '057'");
like(banks($_->[1], $token, '/v2/banks')->content, qr/Zenith Bank Two/,
    "server $_->[0]: a database change is seen at once with max-age 0") for @both;
db_exec("UPDATE banks SET name = 'Zenith Bank' WHERE code = '057'");

# --- server two logged nothing alarming -------------------------------------------------------
my $log = $two->error_log_since(0);
ok($log =~ /resuming normal operations/, 'server two started normally');
ok($log !~ /\[(?:bank|dbd):(?:error|crit|alert|emerg)\]/, 'server two logged no database error');
ok($log !~ /\Q$token\E/, 'server two never logged a token');

$two->stop;
is($one->request(GET => '/misc/payment_banks', headers => { Authorization => "Bearer $token" })->code,
    200, 'server one unaffected by server two stopping');

done_testing();
