# Every SQLite connection mod_bank gets from mod_dbd enforces foreign keys, whatever
# DBDInitSQL says. SQLite turns them off in each new connection, and mod_dbd runs DBDInitSQL
# only up to the first statement that returns a row ("PRAGMA busy_timeout = 2000" does): the
# suite's own "PRAGMA foreign_keys = ON" comes after that one and never runs, so only the
# module's session setup can turn them on. It reads the setting back and logs it, with the
# page cache it bounds to 64 KiB per connection (SQLite's default is 2,000 KiB, times
# DBDMax connections in every process; docs/deployment.md).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Bank::Test;
use Bank::Servers qw(require_sqlite);

require_sqlite('SQLite sessions');

# Some requests, so that this server has opened connections even when this file runs alone.
my $token = issue_token(new_customer()->{email});
for my $i (1 .. 3) {
    is(GET('/misc/payment_banks', Authorization => "Bearer $token")->code, 200, "banks $i");
}

my $log = '';
for (1 .. 20) {    # the log line may land a moment after the answer
    $log = error_log_since(0);
    last if $log =~ /BANK0813/;
    select undef, undef, undef, 0.1;
}
my @on  = $log =~ /BANK0813: SQLite connection: foreign_keys=(\S+)/g;
my @bad = $log =~ /(BANK0812: [^\n]*)/g;
ok(scalar @on, 'each new SQLite connection logs its foreign_keys setting (' . @on . ' seen)');
is_deeply([grep { $_ ne '1' } @on], [], 'foreign keys are on in every one of them');
is_deeply(\@bad, [], 'no connection failed to turn them on');
my @cache = $log =~ /BANK0813: SQLite connection: foreign_keys=\S+ cache_size=(\S+)/g;
is(scalar @cache, scalar @on, 'each of them logs its page cache size');
is_deeply([grep { $_ ne '-64' } @cache], [], 'every page cache is bounded to 64 KiB (-64)');
done_testing();
