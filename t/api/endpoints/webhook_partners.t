# Each partner's notices are its own: the default partner name is the last segment of the
# Location path, with or without a trailing slash, so one transaction reference sent by two
# partners is two notices, never a duplicate of the other's (docs/configuration.md, docs/api.md).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Webhook;

my $n   = notice();
my $ref = $n->{data}{transactionReference};

my $a = decode_body(deliver($n));
is($a->{body}{duplicate}, JSON::PP::false, 'partner: first notice stored');
my $b = decode_body(deliver($n, path => '/webhook/slashy/'));
is($b->{body}{duplicate}, JSON::PP::false,
    'slashy: the same reference from another partner is not a duplicate');
my $c = decode_body(deliver($n, path => '/webhook/slashy/'));
is($c->{body}{duplicate}, JSON::PP::true, 'slashy: its own repeat is');
is(stored_count($ref), 2, 'two notices stored, one per partner');
is(stored($ref, 'partner', 'slashy'), 'slashy', 'trailing slash: the partner is the last segment');
is(stored($ref, 'partner', 'partner'), 'partner', 'no slash: the partner is the last segment');

done_testing();
