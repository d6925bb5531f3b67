# Push notifications (docs/push.md): a stored fund_transfer notice naming an account sends one
# FCM message per device of its customer, from a server with BankPush, through the fake FCM and
# OAuth server t/fake/fcm.py (it checks the JWT's RS256 signature, scope and aud). A repeat
# sends nothing; 503/429 and timeouts are retried with backoff (Retry-After honoured) up to
# BankPushAttempts, then failed (listed, retryable by bankctl); 404 UNREGISTERED and 400
# INVALID_ARGUMENT about the token remove the device; a refused bearer is renewed once; a
# server killed with SIGKILL mid-send leaves the message to be sent after the lease; the
# metrics count it all; nothing secret reaches a log.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(:DEFAULT slurp);
use Bank::Webhook;
use Bank::Push;
use Bank::Docs ();
use POSIX ();

my $fake = fake_start();
my $srv  = push_server($fake, 'BankPushAttempts 3', 'BankPushTimeout 2');
my $mark = $srv->error_log_mark;
like($srv->error_log_since(0), qr/BANK1814: push notifications on: FCM project test-project/,
    'start-up says push is on, and where');

sub deliver_to {
    my ($server, $n) = @_;
    my $res = $server->request(delivery($n));
    is($res->code, 200, 'notice answered 200') or diag($res->content);
    return $res;
}

sub metric { return server_metric($srv, $_[0]) }

# A notice to $server for a new customer with one device whose call FCM answers 200 after
# $delay seconds; returns once the call is under way: (device token, the notice's reference).
sub call_under_way {
    my ($server, $delay, $what) = @_;
    my $c = customer_with_devices(1);
    my $t = $c->{tokens}[0];
    fake_control($fake, { token => $t, answers => [{ status => 200, delay => $delay }] });
    my $n = notice(walletId => $c->{wallet});
    deliver_to($server, $n);
    ok(wait_for(5, sub { fake_calls($fake, $t) }), "$what: the call is under way (FCM slow)");
    return ($t, $n->{data}{transactionReference});
}

# Whether the message of the notice $ref is marked sent within $secs.
sub sent_within {
    my ($secs, $ref) = @_;
    return wait_for($secs, sub { my ($r) = outbox_rows($ref); $r->{state} eq 'sent' });
}

# --- a matched notice: one message per device, within 2 s ---------------------------------
my $c  = customer_with_devices(2);
my $n  = notice(walletId => $c->{wallet}, amount => 125000, receiverAccountName => 'CHIDI OKAFOR');
my $ref = $n->{data}{transactionReference};
my $t0 = time;
deliver_to($srv, $n);
my @rows = outbox_rows($ref);
is(scalar @rows, 2, 'one outbox row per device, written with the notice');
my $both = wait_for(2, sub { (grep { fake_calls($fake, $_) } @{ $c->{tokens} }) == 2 });
ok($both, 'both devices got their message within 2 s');
for my $t (@{ $c->{tokens} }) {
    my @calls = fake_calls($fake, $t);
    is(scalar @calls, 1, "one call for device $t");
    my $m = $calls[0]{message} // {};
    is($calls[0]{status}, 200, 'FCM accepted it');
    is($m->{data}{amount},   '125000',       'data: the amount');
    is($m->{data}{currency}, 'NGN',          'data: the currency');
    is($m->{data}{receiverAccountName}, 'CHIDI OKAFOR', 'data: the receiver');
    is($m->{data}{transactionReference}, $ref, 'data: the reference');
    is($m->{notification}{title}, 'Transfer successful', 'notification title');
    is($m->{notification}{body}, 'NGN 125000 to CHIDI OKAFOR: Transaction successful',
        'notification body: amount, currency, receiver, status message');
    my $text = JSON::PP->new->canonical->encode($m);
    unlike($text, qr/raw_body|bvn|narration|Rent for November/i,
        'no BVN, raw body or other notice fields in the message');
}
ok(wait_for(3, sub { (grep { $_->{state} eq 'sent' } outbox_rows($ref)) == 2 }),
    'both rows marked sent');

# --- the same notice again: nothing more --------------------------------------------------
my $res = deliver_to($srv, $n);
like($res->content, qr/"duplicate":true/, 'the repeat is a duplicate');
sleep 2;
is(scalar(outbox_rows($ref)), 2, 'the repeat wrote no outbox row');
is(scalar(map { fake_calls($fake, $_) } @{ $c->{tokens} }), 2, 'the repeat sent nothing');

# --- bankctl push list: the rows, never the token -----------------------------------------
my $list = bankctl('push', 'list');
like($list, qr/^\Q$rows[0]{id}\E\s+sent\s+1\s+\Q$c->{id}\E/m, 'push list shows the sent row');
unlike($list, qr/\Q$c->{tokens}[0]\E/, 'push list never shows a device token');

# --- 503 twice (Retry-After 1), then 200: delivered once ------------------------------------
my $c2 = customer_with_devices(1);
my $t2 = $c2->{tokens}[0];
fake_control($fake, { token => $t2, answers => [{ status => 503, retryAfter => '1' },
    { status => 503, retryAfter => '1' }] });
my $retried0 = metric('bank_push_total{outcome="retried"}');
my $n2 = notice(walletId => $c2->{wallet});
deliver_to($srv, $n2);
ok(wait_for(15, sub { grep { $_->{status} == 200 } fake_calls($fake, $t2) }),
    '503 twice, then delivered');
my @c2 = fake_calls($fake, $t2);
is(join(',', map { $_->{status} } @c2), '503,503,200', 'three calls: 503, 503, 200');
ok($c2[1]{at} - $c2[0]{at} >= 0.95, 'the retry waited at least Retry-After (1 s)')
  or diag($c2[1]{at} - $c2[0]{at});
ok(sent_within(3, $n2->{data}{transactionReference}),
    'the row is sent after its third attempt');
my ($r2) = outbox_rows($n2->{data}{transactionReference});
is($r2->{attempts}, 3, 'three attempts counted');
is(metric('bank_push_total{outcome="retried"}'), $retried0 + 2, 'bank_push_total retried +2');

# --- 404 UNREGISTERED: the device is removed, not retried ---------------------------------
for my $case ([404, 'UNREGISTERED'], [400, 'INVALID_ARGUMENT about the token']) {
    my ($status, $what) = @$case;
    my $c3 = customer_with_devices(2);
    my ($gone, $kept) = @{ $c3->{tokens} };
    fake_control($fake, { token => $gone, answers => [{ status => $status }] });
    my $n3 = notice(walletId => $c3->{wallet});
    deliver_to($srv, $n3);
    my $r3 = $n3->{data}{transactionReference};
    ok(wait_for(5, sub { (grep { $_->{state} ne 'pending' } outbox_rows($r3)) == 2 }),
        "$what: both rows settled");
    my %state = map { $_->{device_token} => $_->{state} } outbox_rows($r3);
    is($state{$gone}, 'unregistered', "$what: its row is unregistered");
    is($state{$kept}, 'sent', "$what: the other device got its message");
    is(db_value("SELECT count(*) FROM devices WHERE device_token = '$gone'"), 0,
        "$what: the device row is deleted");
    is(db_value("SELECT count(*) FROM devices WHERE device_token = '$kept'"), 1,
        "$what: the other device stays");
    sleep 1;
    is(scalar(fake_calls($fake, $gone)), 1, "$what: not retried");
}

# --- attempts used up: failed, listed, retried by bankctl ----------------------------------
my $c4 = customer_with_devices(1);
my $t4 = $c4->{tokens}[0];
fake_control($fake, { token => $t4, answers => [map { { status => 500, retryAfter => '1' } } 1 .. 3] });
my $n4 = notice(walletId => $c4->{wallet});
deliver_to($srv, $n4);
my $r4 = $n4->{data}{transactionReference};
ok(wait_for(20, sub { my ($r) = outbox_rows($r4); $r->{state} eq 'failed' }),
    'after BankPushAttempts (3) failures the row is failed');
my ($row4) = outbox_rows($r4);
is($row4->{attempts}, 3, 'three attempts');
is($row4->{last_error}, 'FCM answered HTTP 500', 'the last error is kept');
is(scalar(fake_calls($fake, $t4)), 3, 'three calls, no more');
like(bankctl('push', 'list', '--failed'), qr/^\Q$row4->{id}\E\s+failed\s+3\s/m,
    'push list --failed shows it');
unlike(bankctl('push', 'list', '--pending'), qr/^\Q$row4->{id}\E\s/m, 'not among --pending');
my ($rc, $out, $err) = bankctl('push', 'retry', $rows[0]{id});
is($rc, 1, 'push retry of a sent row: exit 1');
like($err, qr/no failed push message $rows[0]{id}/, 'push retry of a sent row: says why');
($rc, $out, $err) = bankctl('push', 'retry', 'abc');
is($rc, 2, 'push retry of a non-number: exit 2');
is(bankctl('push', 'retry', $row4->{id}), "push message $row4->{id} is pending again",
    'push retry ID');
ok(sent_within(5, $r4),
    'the retried message is sent');
is((fake_calls($fake, $t4))[-1]{status}, 200, 'its fourth call was accepted');

# --- a call past BankPushTimeout (2 s): retried ------------------------------------------
my $c5 = customer_with_devices(1);
my $t5 = $c5->{tokens}[0];
fake_control($fake, { token => $t5, answers => [{ status => 200, delay => 4 }] });
my $n5 = notice(walletId => $c5->{wallet});
deliver_to($srv, $n5);
ok(sent_within(15, $n5->{data}{transactionReference}),
    'a timed-out call is retried and sent');
is(scalar(fake_calls($fake, $t5)), 2, 'two calls: the slow one and the retry');

# --- a refused bearer: renewed once, the message still goes --------------------------------
my $issued = fake_info($fake)->{tokens};
fake_control($fake, { revoke => JSON::PP::true });
my $c6 = customer_with_devices(1);
my $n6 = notice(walletId => $c6->{wallet});
deliver_to($srv, $n6);
ok(wait_for(5, sub { grep { $_->{status} == 200 } fake_calls($fake, $c6->{tokens}[0]) }),
    'after a 401 the message is sent with a new bearer');
is(fake_info($fake)->{tokens}, $issued + 1, 'one new bearer fetched');
is_deeply(fake_info($fake)->{refused}, [], 'the fake refused no JWT (signature, scope, aud)');

# --- metrics ------------------------------------------------------------------------------
ok(metric('bank_push_total{outcome="sent"}') >= 8, 'bank_push_total sent');
ok(metric('bank_push_total{outcome="unregistered"}') >= 2, 'bank_push_total unregistered');
ok(metric('bank_push_total{outcome="failed"}') >= 1, 'bank_push_total failed');
ok(metric('bank_push_send_duration_seconds_count') >= 8, 'the send latency histogram');
# counted each second, every 10 s while the CPUs are busy (BANK_PUSH_COUNT_BUSY: a loaded
# machine running the suite)
ok(wait_for(12, sub { metric('bank_push_backlog') == 0 }), 'bank_push_backlog back to 0');

# --- SIGKILL mid-send: sent again after the lease ------------------------------------------
my ($t7, $ref7) = call_under_way($srv, 30, 'killed mid-send');
my $parent = slurp("$srv->{pidfile}");
chomp $parent;
my @kids = split /\s+/, `pgrep -P $parent`;
kill 'KILL', $parent, @kids;
sleep 1;
my ($r7) = outbox_rows($ref7);
is($r7->{state}, 'pending', 'killed mid-send: the row is still pending');
is($r7->{attempts}, 0, 'the killed call counts no attempt (counted when an outcome is written)');
my $again = push_server($fake, 'BankPushAttempts 3', 'BankPushTimeout 2');
ok(sent_within(20, $ref7), 'after the lease a restarted server sends it');
ok(scalar(fake_calls($fake, $t7)) >= 2, 'sent again (at least once)')
  or diag(explain([fake_calls($fake, $t7)]), $again->error_log_since(0) =~ /^.*BANK18.*$/mg);
is((outbox_rows($ref7))[0]{attempts}, 1,
    'sent: one attempt counted, the one that was answered');

# --- a graceful restart mid-send: the round ends and is recorded, the message sent once ----
# The old generation's processes exit while the call waits for FCM (1.5 s, within the 2 s
# timeout); httpd's mod_watchdog stops the sender from the exiting process's main thread. Its
# round must still record the answer: else the message goes out again after the lease (9 s).
my ($t8, $ref8) = call_under_way($again, 1.5, 'graceful restart');
my $mark8 = $again->error_log_mark;
is(system($again->{httpd}, '-f', $again->{conf}, '-k', 'graceful'), 0, 'graceful restart');
ok(sent_within(5, $ref8),
    'graceful restart mid-send: recorded sent by the round that sent it, well within the lease')
  or diag(explain([outbox_rows($ref8)]));
sleep 1;
is(scalar(fake_calls($fake, $t8)), 1, 'graceful restart mid-send: sent once');
is((outbox_rows($ref8))[0]{attempts}, 1, 'one attempt counted');
unlike($again->error_log_since($mark8), qr/exit signal|BANK18(?:05|06|07|15)/,
    'no process died and every outcome was recorded');
is($again->request(GET => '/health')->code, 200, 'the server answers after the restart');

# --- nothing secret in the logs -----------------------------------------------------------
my $logs = $srv->error_log_since(0) . $again->error_log_since(0) . error_log_since(0);
my $key  = slurp(Apache::Test::vars('top_dir') . "/t/fake/push_test_key.pem");
my ($key_line) = $key =~ /\n(.{40})/;
unlike($logs, qr/\Q$key_line\E/, 'the private key is never logged');
unlike($logs, qr/ya29\./, 'no bearer is logged');
unlike($logs, qr/fcm-token-/, 'no device token is logged');

$again->stop;
fake_stop($fake);
# --- bankctl push prune, as docs/push.md's cron line runs it -------------------------------
# This file's rows are minutes old and stay; made 100 days old, those done go, the pending
# stay. (Under DB=pgsql the database also holds the C tests' rows, done in 2000: they go.)
my ($cron) = grep { /push prune/ } split /\n/, Bank::Docs::doc_block('docs/push.md', 'push-prune');
my ($line) = $cron =~ /^(?:\S+\s+){6}(.*)$/;
my $prune = Bank::Docs::substitute($line, 'the cron line',
    'bankctl --db sqlite:/var/lib/mod_bank/bank.db' => $ENV{BANK_CTL});
my $hour = POSIX::strftime('%Y-%m-%dT%H:%M:%S.000Z', gmtime(time - 3600));
my $mine = "created_at > '$hour'";
my $recent = db_value("SELECT count(*) FROM push_outbox WHERE $mine AND state <> 'pending'") + 0;
cmp_ok($recent, '>', 3, "this file's rows done minutes ago ($recent)");
like(`$prune 2>&1`, qr/^\d+ push messages done before \S+ removed \(sent, unregistered or failed\)$/,
    'push prune says how many went');
is(db_value("SELECT count(*) FROM push_outbox WHERE $mine AND state <> 'pending'") + 0, $recent,
    'push prune: rows done minutes ago stay');
my $old = POSIX::strftime('%Y-%m-%dT%H:%M:%S.000Z', gmtime(time - 100 * 86400));
db_exec("UPDATE push_outbox SET done_at = '$old' WHERE $mine AND state <> 'pending'");
db_exec("UPDATE push_outbox SET created_at = '$old' WHERE $mine");
my $cut = POSIX::strftime('%Y-%m-%dT%H:%M:%S.000Z', gmtime(time - 90 * 86400));
my $aged = "state <> 'pending' AND done_at < '$cut'";
my ($done, $pending) = map { db_value("SELECT count(*) FROM push_outbox WHERE $_") + 0 }
  ($aged, "state = 'pending'");
is($done, $recent, 'the rows done more than 90 days ago: this file\'s, made so');
like(`$prune 2>&1`, qr/^$done push messages done before \S+ removed/, 'push prune removes them all');
is(db_value("SELECT count(*) FROM push_outbox WHERE $aged") + 0, 0, 'none is left');
is(db_value("SELECT count(*) FROM push_outbox WHERE state = 'pending'") + 0, $pending,
    "the pending rows stay ($pending)");
($rc, $out, $err) = bankctl('push', 'prune', '--older-than', '0');
is($rc, 2, 'push prune --older-than 0: exit 2');
like($err, qr/older-than/, 'naming the option');

done_testing();
