# docs/openapi.yaml and the check every answer of the suite goes through (t/lib/Bank/OpenAPI.pm):
# the check is live, a drifted answer is caught, and the document covers what the module has.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use HTTP::Response ();
use JSON::PP ();
use Bank::Test;
use Bank::OpenAPI qw(violations load_document operation_for);

my $json = JSON::PP->new->canonical;
my $doc  = load_document();

# --- the check runs on every answer ---------------------------------------------------------
my $before = Bank::OpenAPI::checked();
my $c      = new_customer();
my $in     = json_request('POST', '/auth/sign_in',
    headers => { Authorization => 'Bearer test-client-key-1' },
    body    => { email => $c->{email}, password => $c->{password}, deviceToken => 'dev-openapi' });
is($in->code, 200, 'a sign-in');
my $banks = GET('/misc/payment_banks', Authorization => 'Bearer ' . decode_body($in)->{body}{token}{token});
is($banks->code, 200, 'the bank list through Apache::TestRequest::GET');
is(Bank::OpenAPI::checked(), $before + 2, 'both answers were validated by the hook');
is_deeply([violations($in)],    [], 'the real sign-in answer conforms');
is_deeply([violations($banks)], [], 'the real bank list conforms');

# --- a drifted answer is caught ---------------------------------------------------------------
# A copy of a real answer with one thing changed, as the module would send it after a change
# nobody wrote into the document.
sub drifted {
    my ($res, %o) = @_;
    my $d = $res->clone;
    $d->request($res->request);
    if ($o{edit}) {
        my $body = decode_body($res);
        $o{edit}->($body);
        $d->content($json->encode($body));
    }
    $d->code($o{status}) if $o{status};
    $d->remove_header($o{drop}) if $o{drop};
    $d->content($o{content}) if exists $o{content};
    return $d;
}

my @cases = (
    ['a customer field renamed', edit => sub { $_[0]{body}{customer}{full_name} = delete $_[0]{body}{customer}{fullName} },
        qr{/customer/fullName: Missing property|/customer: Properties not allowed: full_name}],
    ['an extra token field', edit => sub { $_[0]{body}{token}{refreshToken} = 'x' },
        qr{/token: Properties not allowed: refreshToken}],
    ['a datetime without milliseconds', edit => sub { $_[0]{body}{token}{expiresAt} =~ s/\.\d{3}Z$/Z/ },
        qr{/token/expiresAt: String does not match}],
    ['emailVerified as a string', edit => sub { $_[0]{body}{customer}{emailVerified} = 'false' },
        qr{/emailVerified: Expected boolean - got string}],
    ['an undocumented status', status => 418, qr{status 418 is not documented}],
    ['Cache-Control missing', drop => 'Cache-Control', qr{/Cache-Control: Missing property}],
    ['no JSON body', content => '<html></html>', qr{/body}],
);
for my $case (@cases) {
    my ($name, @o) = @$case;
    my $re = pop @o;
    my @v = violations(drifted($in, @o));
    ok(@v && grep({ $_ =~ $re } @v), "drift caught: $name") or diag(explain \@v);
}

# Errors: a 401 with another code, or without its challenge header; an error body without
# its errors[].
my $bad = json_request('POST', '/auth/sign_in', headers => { Authorization => 'Bearer wrong' },
    body => { email => $c->{email}, password => $c->{password}, deviceToken => 'd' });
assert_error($bad, 401, 'E_UNAUTHORIZED_ACCESS', 'wrong client key');
is_deeply([violations($bad)], [], 'the real 401 conforms');
ok((grep { m{/body/code: .*E_UNAUTHORIZED_ACCESS} } violations(drifted($bad, edit => sub { $_[0]{code} = 'E_FORBIDDEN' }))),
    'drift caught: a 401 with the code of a 403');
ok((grep { m{/WWW-Authenticate: Missing property} } violations(drifted($bad, drop => 'WWW-Authenticate'))),
    'drift caught: a 401 without WWW-Authenticate');
ok((grep { m{/body/errors: .*Missing property} } violations(drifted($bad, edit => sub { delete $_[0]{errors} }))),
    'drift caught: an error without errors[]');
ok((grep { m{/body/code: .*Not in enum list} } violations(drifted($bad, status => 400, edit => sub { $_[0]{code} = 'E_NEW' }))),
    'drift caught: an error code the document does not know');

# A drifted answer fails the test it arrives in, and is written where scripts/run-tests looks.
{
    my $file = "$ENV{BANK_TEST_ROOT}/openapi-violations";
    my $size = -s $file || 0;
    my @v;
    {    # the failing ok() the hook emits is caught here: this drift is made on purpose
        no warnings 'redefine';
        local *Test::More::ok = sub { push @v, [@_]; return 0 };
        local *Test::More::diag = sub { return 0 };
        Bank::OpenAPI::_report(drifted($bad, status => 418), 'post /auth/sign_in: status 418 is not documented');
    }
    is(scalar @v, 1, 'the hook fails a test for a drifted answer');
    ok((-s $file || 0) > $size, 'and records it for scripts/run-tests');
    # Leave the file as it was.
    truncate $file, $size if -e $file;
    unlink $file if -e $file && !$size;
}

# --- the document covers the module ------------------------------------------------------------
my $src = join '', map { do { local (@ARGV, $/) = $_; <> } } glob 'mod_bank/*http*.c';
my %module_codes = map { $_ => 1 } $src =~ /"(E_[A-Z_]+)"/g;
my %doc_codes    = map { $_ => 1 } @{ $doc->get('/components/schemas/Error/properties/code/enum') };
ok(keys %module_codes >= 16, 'the module\'s error codes were found in its source');
is_deeply(\%doc_codes, \%module_codes, 'the document lists exactly the error codes the module has');

my $conf = do { local (@ARGV, $/) = 'conf/bank.conf'; <> };
# Every endpoint's Location (not bank-error's: the ErrorDocument target answers no path).
for my $loc ($conf =~ /<Location\s+(\S+)>\s*SetHandler\s+bank-(?!error\b)/g) {
    my $tmpl = operation_for($loc) // '(none)';
    ok($tmpl && $doc->get([paths => $tmpl]), "conf/bank.conf's $loc is documented ($tmpl)");
}
my $api = do { local (@ARGV, $/) = 'docs/api.md'; <> };
like($api, qr{\(openapi\.yaml\)}, 'docs/api.md links the OpenAPI document');
is($doc->get('/openapi'), '3.1.0', 'OpenAPI 3.1');

done_testing();
