# No connection resets (docs/deployment.md, "Processes, threads and connection resets"): the
# dev server, freshly started, answers wrk's busy keep-alive connections at 64 and 256 with no
# connect, read, write or timeout error and no non-2xx. It runs the worker MPM, whose thread
# keeps a connection from its first request to its last: every connection needs a thread, so
# both processes are started at once with threads for all of them. (With
# the event MPM, processes started under load or too few threads per process, the listener
# closed keep-alive connections whose next request found no idle worker: hundreds of read
# errors in 3 s on 2 CPUs.)
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(:DEFAULT slurp unweighable);
use Bank::DevServer;

plan skip_all => 'wrk is not installed (make deps)' unless grep { -x "$_/wrk" } split /:/, $ENV{PATH};

# the MPM is the same on both drivers
my $d = dev_server(db => 'sqlite3', env => { BANK_SERVER_NICE => -5 });
my ($top, $dir, $run, $port) = @$d{qw(top dir run port)};
my $out = dev_start();
is($?, 0, 'dev server started') or diag($out);
my ($token) = $out =~ /^  TOKEN=(oat_\S+)$/m;
ok($token, 'a token is printed');

# StartServers processes started before the first request, none stopped for being idle,
# threads for 256 connections on each.
my $conf = slurp("$run/httpd.conf");
like($conf, qr/^LoadModule mpm_worker_module /m, 'the worker MPM');
my %mpm  = $conf =~ /^(StartServers|ServerLimit|MaxRequestWorkers|MaxSpareThreads|ThreadsPerChild)\s+(\d+)$/mg;
# The worker MPM uses MaxRequestWorkers / ThreadsPerChild slots only: all of ServerLimit's,
# so that a graceful restart's new processes have free slots beside the old ones.
is($mpm{ServerLimit} * $mpm{ThreadsPerChild}, $mpm{MaxRequestWorkers},
    'ServerLimit x ThreadsPerChild = MaxRequestWorkers');
cmp_ok($mpm{ServerLimit}, '>=', 2 * $mpm{StartServers}, 'ServerLimit leaves a new generation room');
is($mpm{MaxSpareThreads}, $mpm{MaxRequestWorkers}, 'MaxSpareThreads = MaxRequestWorkers');
cmp_ok($mpm{ThreadsPerChild}, '>=', 256, 'a process has a thread for each of 256 connections');
my $ppid     = slurp("$run/httpd.pid") =~ s/\s+//gr;
my @children = split ' ', `ps -o pid= --ppid $ppid`;
is(scalar @children, $mpm{StartServers}, "all $mpm{StartServers} processes run before the first request");

# The server's session weighted against other sessions, wrk's here (docs/deployment.md, "The
# server's share of the CPUs"): without it, at 256 connections some requests waited 1-2 s
# for a CPU, and now and then over 2 s.
my $unweighed = unweighable()
  || ($out =~ /^CPU share: .* could not be set/m ? 'not allowed here (no CAP_SYS_NICE)' : '');
SKIP: {
    skip $unweighed, 2 if $unweighed;
    like($out, qr/^CPU share: httpd's session weighted as nice -5 against other sessions/m,
        'the start says how it weighted the server');
    like(slurp("/proc/$ppid/autogroup"), qr/ nice -5$/m, "httpd's session has the weight of nice -5");
}
{
    local $ENV{BANK_SERVER_NICE} = 'high';
    my $bad = dev_start();
    isnt($?, 0, 'BANK_SERVER_NICE that is not a nice value: no start');
    like($bad, qr/BANK_SERVER_NICE=high is not a nice value \(-20 to 19\)/, '... and why');
}

# wrk's report: "Socket errors: connect C, read R, write W, timeout T" (only when not all 0)
# and "Non-2xx or 3xx responses: N".
my $lua = "$dir/webhook.lua";
open my $fh, '>', $lua or die $!;
print $fh <<'LUA';
local n, id = 0, 0
function setup(thread) id = id + 1; thread:set("tid", id) end
function request()
    n = n + 1
    local body = string.format('{"service":"payments","type":"fund_transfer","data":{' ..
        '"amount":5000,"charges":10.75,"currency":"NGN","narration":"resets",' ..
        '"receiverAccountName":"A B","receiverAccountNumber":"0000000019",' ..
        '"receiverBankCode":"999","sessionId":"1","statusCode":"T100",' ..
        '"statusMessage":"ok","transactionReference":"RST-%s-%d","walletId":"w"}}', tostring(tid), n)
    return wrk.format("POST", "/webhook/partner", {["Content-Type"] = "application/json",
        ["Authorization"] = "Bearer dev-webhook-secret"}, body)
end
LUA
close $fh;
my $url = "http://127.0.0.1:$port";
for my $c (64, 256) {
    my @runs = (
        [banks   => qq{-H 'Authorization: Bearer $token' $url/misc/payment_banks}],
        [webhook => "-s $lua $url/webhook/partner"],
    );
    for my $r (@runs) {
        my ($name, $args) = @$r;
        my $report = `wrk -t2 -c$c -d3s $args 2>&1`;
        my ($n) = $report =~ /(\d+) requests in/;
        cmp_ok($n // 0, '>', 0, "$name, $c connections: requests answered") or diag($report);
        my ($errors) = $report =~ /^\s*(Socket errors:[^\n]*)/m;
        my ($non2xx) = $report =~ /Non-2xx or 3xx responses: (\d+)/;
        my ($timeouts) = ($errors // '') =~ /timeout (\d+)/;
        (my $resets = $errors // 'no socket errors') =~ s/, timeout \d+//;
        is($resets . ', non-2xx ' . ($non2xx // 0), $errors ? 'Socket errors: connect 0, read 0, write 0, non-2xx 0' : 'no socket errors, non-2xx 0',
            "$name, $c connections for 3 s: no reset, every answer 2xx")
            or diag($report);
        # Timeouts (no answer within wrk's 2 s): none, at 256 connections too, with the
        # server's session weighted against wrk's (above). Unweighted (not root, no
        # autogroup), answers waited up to 1.5 s at 256: reported, as a TODO there.
        TODO: {
            local $TODO = $c >= 256 && $unweighed ? "the server's session not weighted: $unweighed" : undef;
            is($timeouts // 0, 0, "$name, $c connections: no request timed out") or diag($report);
        }
    }
}
@children = split ' ', `ps -o pid= --ppid $ppid`;
is(scalar @children, $mpm{StartServers}, 'the same number of processes after the runs');

dev_stop();
done_testing();
