# E-mail matching folds ASCII letters only, on both drivers (docs/api.md): a spelling with
# U+212A KELVIN SIGN or U+0130 (capital I with dot above), which PostgreSQL's lower() folds
# to 'k' and 'i' under a UTF-8 locale, is another e-mail. It neither signs in as the ASCII
# customer nor shares or escapes that customer's throttle count. `make test DB=pgsql` runs
# on a UTF-8 cluster (scripts/pgcluster), checked below.
use strict;
use warnings FATAL => 'all';
use utf8;
use Apache::Test qw(-withtestmore);
use Encode ();
use JSON::PP ();
use Bank::Test;
use Bank::SignIn;

my $utf8 = JSON::PP->new->utf8->canonical;

# A sign-in whose e-mail may hold non-ASCII characters (the body sent as UTF-8).
sub sign_in_u {
    my ($email, $password) = @_;
    return json_request('POST', '/auth/sign_in',
        headers => { Authorization => "Bearer $CLIENT_KEY" },
        body    => $utf8->encode({ email => $email, password => $password, deviceToken => 'd' }));
}

sub attempts_of {
    my ($email) = @_;
    (my $key = $email) =~ tr/A-Z/a-z/;    # the throttle key folds ASCII only
    my $hex = unpack 'H*', Encode::encode_utf8($key);
    my $where = $ENV{BANK_DBDRIVER} eq 'sqlite3' ? "email = CAST(x'$hex' AS TEXT)"
      : "email = convert_from('\\x$hex', 'UTF8')";
    return db_value("SELECT failures FROM sign_in_attempts WHERE $where");
}

if ($ENV{BANK_DBDRIVER} eq 'pgsql') {
    is(db_value("SELECT lower(U&'\\212A') = 'k' AND lower(U&'\\0130') = 'i'"), 't',
        'the test cluster folds Kelvin and dotted I in lower() (a UTF-8 locale)');
}

my $u = unique();
my $c = new_customer(email => "kiki$u\@example.com");
my $kelvin = "\x{212A}iki$u\@example.com";     # K is U+212A KELVIN SIGN
my $dotted = "K\x{130}K\x{130}$u\@example.com"; # I is U+0130

# --- neither spelling signs in as the ASCII customer -----------------------------------------
for my $e ([$kelvin, 'Kelvin sign'], [$dotted, 'dotted capital I']) {
    my $r = sign_in_u($e->[0], $c->{password});
    assert_error($r, 400, 'E_INVALID_CREDENTIALS', "$e->[1] spelling, right password");
}
is(sign_in("KIKI$u\@EXAMPLE.COM", $c->{password})->code, 200, 'ASCII case still folds');

# --- their failures are their own: the ASCII customer's count is untouched -----------------
is(attempts_of($kelvin), 1, 'the Kelvin spelling has its own throttle row');
is(attempts_of($dotted), 1, 'the dotted-I spelling has its own throttle row');
my $r = sign_in($c->{email}, 'wrong');
is($r->header('X-RateLimit-Remaining'), 4, 'the ASCII e-mail: its first failure (4 left)');

# --- nor do they escape it: the ASCII customer throttled, the spellings still refused -------
sign_in($c->{email}, 'wrong') for 2 .. 5;
is_429(sign_in($c->{email}, $c->{password}), 'the ASCII e-mail throttled', 60);
for my $e ([$kelvin, 'Kelvin sign'], [$dotted, 'dotted capital I']) {
    assert_error(sign_in_u($e->[0], $c->{password}), 400, 'E_INVALID_CREDENTIALS',
        "$e->[1] spelling while the ASCII e-mail is throttled");
}
is(attempts_row("kiki$u\@example.com"), '5|127.0.0.1', 'the ASCII count stays at five');

# --- the unique e-mail key agrees: a Kelvin spelling is another customer ----------------------
my $k = new_customer(email => Encode::encode_utf8($kelvin)); # bankctl's arguments are bytes
isnt($k->{id}, $c->{id}, 'bankctl adds the Kelvin spelling as another customer');
my $ok = sign_in_u($kelvin, $k->{password});
is($ok->code, 200, 'the Kelvin customer signs in with their own password') or diag($ok->content);
is((decode_body($ok) // {})->{body}{customer}{customerId} // '', $k->{id},
    'as themselves, not as the ASCII customer');
my ($rc, undef, $err) = bankctl('customer', 'add', '--email', "KIKI$u\@example.com",
    '--password', 'x-password-1', '--first', 'A', '--last', 'B', '--phone', '+2348000000000');
isnt($rc, 0, 'an ASCII-case variant of an existing e-mail is refused') or diag($err);

done_testing();
