# A database that cannot be reached answers 503 E_UNAVAILABLE with Retry-After, never a
# crash and never a 200, and the reason is logged.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Bank::Test;

my $mark = error_log_mark();
Apache::TestRequest::module('bank_nodb');
my $res = GET '/misc/payment_banks', Authorization => 'Bearer oat_MQ.c2VjcmV0';
my $d = assert_error($res, 503, 'E_UNAVAILABLE', 'database unreachable');
like($res->header('Retry-After') // '', qr/^\d+$/, 'database unreachable: Retry-After');
unlike($res->content, qr{missing-dir|sqlite|/tmp}i, 'database unreachable: no internals');

# The server keeps answering (no crash): a second request gets the same.
is(GET('/misc/payment_banks')->code, 503, 'database unreachable: still 503');
Apache::TestRequest::module('default');

my $log = '';
for (1 .. 20) {    # the log line may land a moment after the answer
    $log = error_log_since($mark);
    last if $log =~ /BANK0202/;
    select undef, undef, undef, 0.1;
}
like($log, qr/BANK0202: no database connection/, 'database unreachable: logged why');
done_testing();
