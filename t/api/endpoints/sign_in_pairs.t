# Two sign-ins waiting at once for a verification are computed together on one CPU when their
# stored hashes are scrypt of one cost (docs/configuration.md, BankPasswordVerifyConcurrency;
# bank_password_verification_pairs_total counts the pairs), and each still gets its own
# answer. The test server lets one verification compute at a time and /deep/sign_in queues
# them, so that many wait: right and wrong passwords of several customers, unknown e-mails, a
# customer whose scrypt hash has another cost and one with a bcrypt hash, all at once. Every
# answer is the one a sign-in alone gets: 200 with the customer's own token, or 400
# E_INVALID_CREDENTIALS. And a sign-in that a free CPU and a free thread can verify at once is
# not paired: on a server of four slots and four threads per process, two sign-ins at a time
# are never verified together.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Bank::Test;
use Bank::SignIn;
use Bank::Servers qw(main_server concurrent start_server);

sub pairs {
    my ($srv) = @_;
    my $res = $srv ? $srv->request(GET => '/metrics') : GET('/metrics');
    my ($v) = $res->content =~ /^bank_password_verification_pairs_total (\d+)$/m;
    return $v;
}

# python3 hashlib.scrypt(b'hunter2', salt=b'saltsalt', n=1024, r=4, p=2, dklen=64), as
# t/unit/test_password.c's PY_SCRYPT_REORDERED; htpasswd -nbB -C 5 user password.
my $cheap = '$scrypt$p=2,n=1024,r=4$c2FsdHNhbHQ$/EPyCrj1OqXOLLAFBeM3JlxYwQrO7iMYzQkuddeHM6l6ezVINDM'
  . 'ctFNHQ+Z++TfjnS80L6X9toAr82GFQLz7pQ';
my $bcrypt = '$2b$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6';

my $server = main_server();
my @cust   = map { new_customer() } 1 .. 6;
my $odd    = new_customer();
db_exec("UPDATE customers SET password = '$cheap' WHERE id = '$odd->{id}'");
$odd->{password} = 'hunter2';
my $bc = new_customer();
db_exec("UPDATE customers SET password = '$bcrypt' WHERE id = '$bc->{id}'");
$bc->{password} = 'password';

# [email, password, customer id expected or undef for a 400]
my @cases;
for my $c (@cust) {
    push @cases, [$c->{email}, $c->{password}, $c->{id}], [$c->{email}, $c->{password}, $c->{id}],
      [$c->{email}, "$c->{password}-not", undef];
}
push @cases, ["nobody-$_-" . unique() . '@example.com', 'whatever-1', undef] for 1 .. 3;
push @cases, [$odd->{email}, $odd->{password}, $odd->{id}], [$odd->{email}, $odd->{password}, $odd->{id}],
  [$odd->{email}, 'hunter3', undef];
push @cases, [$bc->{email}, 'password', $bc->{id}], [$bc->{email}, 'passwore', undef];
# in an order that mixes customers, rights and wrongs
@cases = @cases[map { ($_ * 7) % @cases } 0 .. $#cases];

my $before = pairs();
ok(defined $before, 'the metrics count pairs of verifications');
my @res = concurrent(map { [$server, sign_in_req($_->[0], $_->[1], '/deep/sign_in')] } @cases);
my $after = pairs();
diag('answers: ' . join(',', map { $_->code } @res) . '; pairs computed: ' . ($after - $before));
for my $i (0 .. $#cases) {
    my ($email, $password, $id) = @{ $cases[$i] };
    my $what = "sign-in $i (" . ($id ? 'right' : 'wrong') . " password, $email)";
    if ($id) {
        my $b = decode_body($res[$i]);
        is($res[$i]->code, 200, "$what: 200") or diag($res[$i]->as_string);
        is($b->{body}{customer}{customerId} // '', $id, "$what: its own customer") or diag($res[$i]->content);
        ok($b->{body}{token}{token}, "$what: a token");
    } else {
        assert_error($res[$i], 400, 'E_INVALID_CREDENTIALS', $what);
    }
}
# 26 sign-ins wait for one verification slot: the 21 scrypt ones of the default cost (the
# unknown e-mails' dummy included) can be computed two at a time
cmp_ok($after - $before, '>=', 3, 'sign-ins that waited together were verified in pairs');
# every token issued is accepted
for my $i (grep { $cases[$_][2] && $res[$_]->code == 200 } 0 .. $#cases) {
    my $tok = decode_body($res[$i])->{body}{token}{token};
    my $r   = json_request('GET', '/misc/payment_banks', headers => { Authorization => "Bearer $tok" });
    is($r->code, 200, "sign-in $i: its token is accepted");
}

# --- room for both: no pair ------------------------------------------------------------
my $roomy = start_server(extra => "\nBankPasswordVerifyServerConcurrency 4\n");
my $was   = pairs($roomy);
for my $round (1 .. 4) {
    my @two = concurrent(map { [$roomy, sign_in_req($_->{email}, $_->{password}, '/wide/sign_in')] }
          @cust[0, 1]);
    is(join(',', map { $_->code } @two), '200,200', "room for both, round $round: both 200");
}
is(pairs($roomy) - $was, 0, 'room for both: each verified on its own CPU, no pair');
$roomy->stop;

done_testing();
