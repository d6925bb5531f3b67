#!/usr/bin/perl
# A fake identity provider for the suite (CGI under the test httpd, t/conf/extra.conf.in):
# Dojah's "Validate BVN" (GET .../api/v1/kyc/bvn/full) and Prembly's "BVN"
# (POST .../verification/bvn), as their public documentation describes them.
# The path's first segment picks the behaviour: ok (judges the request against the
# identities the tests wrote to $FAKE_IDP_DIR/fake-ids/<bvn>: "first|middle|last|YYYY-MM-DD"),
# e500, e400 (400 "malformed request"), slow (3 s, then as ok), waitN (N ms, then as ok),
# malformed, oversized (1 MiB), brk (always 500).
# Every call appends "<mode> <dialect>" to $FAKE_IDP_DIR/fake-hits. Nothing goes to stderr.
use strict;
use warnings;
use JSON::PP ();

my $dir     = $ENV{FAKE_IDP_DIR} // '/nonexistent';
my $json    = JSON::PP->new->canonical;
my $APP_ID  = 'test-app-id';
my $SECRET  = 'test-idp-secret-1';
my @MONTHS  = qw(Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec);

sub reply {
    my ($status, $body) = @_;
    $body = $json->encode($body) if ref $body;
    print "Status: $status\r\nContent-Type: application/json\r\n\r\n$body";
    exit 0;
}

# The body first, whatever the answer: a request body left unread can cut the answer off.
read STDIN, my $body, $ENV{CONTENT_LENGTH} // 0;
my ($mode, $rest) = ($ENV{PATH_INFO} // '') =~ m{^/([a-z0-9]+)(/.*)$}
  or reply(404, { error => 'no such path' });
my $method  = $ENV{REQUEST_METHOD} // '';
my $dialect = $rest eq '/api/v1/kyc/bvn/full' && $method eq 'GET' ? 'dojah'
  : $rest eq '/verification/bvn' && $method eq 'POST' ? 'prembly'
  : reply(404, { error => 'no such endpoint' });
if (open my $h, '>>', "$dir/fake-hits") { print $h "$mode $dialect\n"; close $h }

reply(500, { error => 'internal error' }) if $mode eq 'e500' || $mode eq 'brk';
reply(400, { error => 'malformed request' }) if $mode eq 'e400';
sleep 3 if $mode eq 'slow';
select undef, undef, undef, $1 / 1000 if $mode =~ /^wait(\d+)$/;
reply(200, '{"entity": {"bvn": ') if $mode eq 'malformed';
reply(200, '{"entity": "' . ('x' x (1024 * 1024)) . '"}') if $mode eq 'oversized';

my %q;
if ($dialect eq 'dojah') {
    reply(401, { error => 'Unauthorized' })
      unless ($ENV{HTTP_APPID} // '') eq $APP_ID && ($ENV{HTTP_AUTHORIZATION} // '') eq $SECRET;
    for (split /&/, $ENV{QUERY_STRING} // '') {
        my ($k, $v) = split /=/, $_, 2;
        $v //= '';
        $v =~ s/%([0-9A-Fa-f]{2})/chr hex $1/ge;
        $q{$k} = $v;
    }
} else {
    reply(401, { status => JSON::PP::false, detail => 'Invalid credentials' })
      unless ($ENV{HTTP_APP_ID} // '') eq $APP_ID && ($ENV{HTTP_X_API_KEY} // '') eq $SECRET;
    my $b = eval { $json->decode($body) } || {};
    $q{bvn} = $b->{number} // '';
}

my ($first, $middle, $last, $dob);
if ($q{bvn} =~ /^\d{11}$/ && open my $f, '<', "$dir/fake-ids/$q{bvn}") {
    my $line = <$f>;
    chomp $line;
    ($first, $middle, $last, $dob) = split /\|/, $line;
}

if ($dialect eq 'dojah') {
    reply(404, { error => 'BVN not found' }) unless defined $first;
    my $same = sub { lc($_[0] // '') eq lc($_[1] // '') };
    reply(200, { entity => {
        bvn           => { value => $q{bvn}, status => JSON::PP::true },
        first_name    => { confidence_value => $same->($first, $q{first_name}) ? 100 : 0,
                           status => $same->($first, $q{first_name}) ? JSON::PP::true : JSON::PP::false },
        last_name     => { confidence_value => $same->($last, $q{last_name}) ? 100 : 0,
                           status => $same->($last, $q{last_name}) ? JSON::PP::true : JSON::PP::false },
        date_of_birth => { status => ($q{dob} // '') eq $dob ? JSON::PP::true : JSON::PP::false },
    } });
}
reply(200, { status => JSON::PP::false, response_code => '01',
    detail => 'Record not found', data => undef }) unless defined $first;
my ($y, $m, $d) = split /-/, $dob;
reply(200, { status => JSON::PP::true, detail => 'Verification Successfull', response_code => '00',
    data => { firstName => $first, middleName => $middle, lastName => $last,
        dateOfBirth => sprintf('%d-%s-%04d', $d, $MONTHS[$m - 1], $y),
        phoneNumber => '08012345678' },
    source => 'API', user_info => undef, request_data => { number => $q{bvn} } });
