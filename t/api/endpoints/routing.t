# Routing is httpd's (<Location> + SetHandler); a handler reached for a path below its
# Location that it does not serve answers 404 E_ROUTE_NOT_FOUND (docs/api.md).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Bank::Test;
use Bank::Test qw(spew);

my $c     = new_customer();
my %auth  = (Authorization => 'Bearer ' . issue_token($c->{email}));

for my $path ('/misc/payment_banks/extra', '/misc/payment_banks/x/y', '/v2/banks/more') {
    assert_error(GET($path, %auth), 404, 'E_ROUTE_NOT_FOUND', "GET $path");
}
for my $path ('/auth/sign_in/x', '/onboarding/bvn/x', '/webhook/partner/x') {
    assert_error(json_request('POST', $path, body => {}), 404, 'E_ROUTE_NOT_FOUND', "POST $path");
}

# The endpoint's own path, with or without a trailing slash, is served.
is(GET('/misc/payment_banks', %auth)->code,  200, 'the Location path itself is served');
is(GET('/misc/payment_banks/', %auth)->code, 200, 'a trailing slash is served');
is(GET('/v2/banks', %auth)->code,            200, 'another prefix, its own path');
# A path outside every Location is httpd's own 404 (no handler of ours reached).
isnt(GET('/misc/payment_banksX', %auth)->header('Content-Type') // '', 'application/json; charset=utf-8',
    'a path that only shares a prefix is not ours');

# No directory walk for an endpoint (no file behind it): a <Directory> over the document
# root's misc/ (t/conf/extra.conf.in) denies the file there, not /misc/payment_banks.
my $misc = Apache::Test::vars('documentroot') . '/misc';
mkdir $misc;
spew("$misc/file.json", '{}');
chmod 0755, $misc;
chmod 0644, "$misc/file.json";
is(GET('/misc/file.json')->code, 403, 'the <Directory> section denies the file below it');
is(GET('/misc/payment_banks', %auth)->code, 200, 'and does not reach the endpoint at that URL');

done_testing();
