# The dev server (scripts/devserver, make start): the commands it prints work as printed.
# The token it prints signs out with the printed sign-out command, and is refused after;
# /metrics and /server-status are mapped for 127.0.0.1.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(:DEFAULT slurp);
use Bank::DevServer;

my $d = dev_server(db => 'sqlite3');
my ($top, $run, $port) = @$d{qw(top run port)};
my $out = dev_start();
is($?, 0, 'dev server started') or diag($out);
# the demo BVN records are encrypted before they are written: never in plain text in the
# SQLite file or its WAL (an insert in plain text encrypted afterwards would leave them in
# freed pages or WAL frames)
my @plain = grep { length } split /\n/,
  `grep -lE '22212345678|22298765432|22255555555' '$run'/bank.db* 2>/dev/null`;
is_deeply(\@plain, [], 'no demo BVN in plain text in the database file or its WAL');
# On SQLite, DBDMax 8, not ThreadsPerChild (docs/deployment.md: memory per connection).
like(slurp("$run/httpd.conf"), qr/^DBDMax 8$/m, 'SQLite: DBDMax 8');

# The printed lines, by the sentence above each.
sub printed {
    my ($title) = @_;
    my ($cmd) = $out =~ /^\Q$title\E[^\n]*\n  ([^\n]+)$/m;
    ok($cmd, "printed: $title") or diag($out);
    return $cmd // 'false';
}
my ($token) = $out =~ /^  TOKEN=(oat_\S+)$/m;
ok($token, 'a token is printed');
local $ENV{TOKEN} = $token // '';

my $banks = printed('Banks for payments:');
like(`$banks`, qr/^\{"body":\{"banks":\[/, 'the printed bank-list command: the list');

my $sign_out = printed('Sign out');
like($sign_out, qr{-X POST http://127\.0\.0\.1:$port/auth/sign_out -H "Authorization: Bearer \$TOKEN"},
    'the sign-out command');
is(`$sign_out`, '{"body":{"revoked":true}}', 'the printed sign-out command revokes the token');
# Another httpd process may have cached the token (BankTokenCacheSeconds, 5 s by default):
# it hears of the revocation from the database, so after a second every request is refused.
select undef, undef, undef, 1.0;
my @refused = map { scalar `$banks` } 1 .. 8;
is(scalar(grep { !/"code":"E_UNAUTHORIZED_ACCESS"/ } @refused), 0,
    'the bank list then refuses the token on every request, a second later');

# /metrics and /server-status, for this machine (docs/operations.md, "Metrics").
my $sign_in = printed('Sign in');
like(`$sign_in`, qr/"token":\{"type":"bearer"/, 'the printed sign-in command signs in');
my $printed_metrics = printed('Metrics');
is($printed_metrics, "curl -s http://127.0.0.1:$port/metrics", 'the printed metrics command');
my $metrics = `$printed_metrics`;
like($metrics, qr/^bank_sign_ins_total\{outcome="ok"\} 1$/m, '/metrics counts the sign-in');
like($metrics, qr/^bank_request_duration_seconds_count\{endpoint="sign_out"\} 1$/m,
    '/metrics times the sign-out');
like(`curl -s 'http://127.0.0.1:$port/server-status?auto'`, qr/^bank_sign_ins_total\{outcome="ok"\}: 1$/m,
    '/server-status has the mod_bank section');
# A graceful restart (a changed setting) keeps the counts: the block outlives it.
system(Bank::Test::httpd_binary(), '-f', "$run/httpd.conf", '-k', 'graceful');
my $kept = '';
for (1 .. 50) {
    select undef, undef, undef, 0.1;
    $kept = `curl -s http://127.0.0.1:$port/metrics`;
    last if $kept =~ /bank_sign_ins_total/;
}
like($kept, qr/^bank_sign_ins_total\{outcome="ok"\} 1$/m, 'the count survives a graceful restart');
Bank::Test::http09_refused("127.0.0.1:$port", 'the dev server');
Bank::Test::httpd_errors_json("127.0.0.1:$port", 'the dev server');

# httpd killed (SIGKILL): its pid answers kill -0 until it is reaped and its children go on
# holding the port; make start stops what is left and starts
my $pid = slurp("$run/httpd.pid");
chomp $pid;
kill 'KILL', $pid;
$out = dev_start();
is($?, 0, 'make start right after httpd was killed: started') or diag($out);
like($out, qr/Stopping what is left of a dev server that was killed/, '... after stopping its children');
my $again = slurp("$run/httpd.pid");
chomp $again;
isnt($again, $pid, '... a new httpd');
my ($fresh) = $out =~ /^  TOKEN=(oat_\S+)$/m;
like(`curl -s http://127.0.0.1:$port/misc/payment_banks -H "Authorization: Bearer @{[ $fresh // '' ]}"`,
    qr/^\{"body":\{"banks":\[/, '... which answers');

dev_stop();
done_testing();
