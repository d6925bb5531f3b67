# The SQLite file made read-only under a running httpd, then writable again (issue 9): while
# SQLite cannot write, writes (webhook deliveries, BVN onboarding, sign-in) answer 503
# E_UNAVAILABLE with Retry-After, never 200 for something not stored and never 500, and reads
# keep working; once it is writable again writes succeed with no httpd restart, and nothing
# is half-written: every 200 is in its table, and nothing is there without its 200.
#
# SQLite opens a file it cannot write read-only, and such a connection stays read-only; one
# opened before keeps writing through its open file. So can one opened after, in a process
# that closed a connection to the file while others stayed open: SQLite keeps the closed
# one's descriptor (closing it would drop the process's locks) and gives it to the next
# connection to the file, which then writes whatever the file's mode. A virtual host of the
# test server shares its processes with the main server's pool, which closes connections
# (DBDExptime), so the read-only server is an httpd of its own, started before the file is
# read-only and sent nothing until then: none of its processes holds a descriptor opened
# before, every connection it opens then is a read-only one, and stays in its pool
# afterwards (DBDExptime 300). The main server's pool holds connections opened before, and
# opens more under load: its writes may be stored (200) or refused (503), never anything else.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use File::Basename qw(dirname);
use Bank::Test;
use Bank::Webhook;
use Bank::BvnTest;
use Bank::Servers qw(require_sqlite main_server start_server concurrent);

require_sqlite('makes the database file read-only under httpd');

my $db   = $ENV{BANK_DBPARAMS};
my $dir  = dirname($db);
my $main = main_server();
# DBDKeep and DBDExptime: the connections opened read-only are still pooled when the file is
# writable again, however long the load takes.
my $ro   = start_server(extra => "DBDKeep 4\nDBDExptime 300\n");
my @as   = $> == 0 ? ('runuser', '-u', 'nobody', '--') : ();
my $start = error_log_mark();
my $ro_start = $ro->error_log_mark;

# ---- what the load is made of ---------------------------------------------------------------
# Each job: [kind, key, request...]. A kind's key says what its 200 stores: a notice's
# reference, a customer's id. Sign-ins use customers that only sign in; BVN onboarding
# customers that only onboard, so each table's rows belong to one kind of request.
my (%signer, %onboarder, %sent);
sub webhook_job {
    my $n = notice();
    my $ref = $n->{data}{transactionReference};
    $sent{$ref} = 1;
    return ['webhook', $ref, delivery($n)];
}
sub sign_in_job {
    my $c = new_customer();
    $signer{ $c->{id} } = $c;
    return ['sign-in', $c->{id}, 'POST', '/auth/sign_in',
        headers => { Authorization => 'Bearer test-client-key-1' },
        body => { email => $c->{email}, password => $c->{password}, deviceToken => "d-$c->{id}" }];
}
sub bvn_job {
    my $v = verifiable();
    $onboarder{ $v->{c}{id} } = $v;
    return ['bvn', $v->{c}{id}, bvn_req($v)];
}
my $reader = verifiable(abilities => 'banks:read');
sub read_job {
    return ['read', '', 'GET', '/misc/payment_banks',
        headers => { Authorization => "Bearer $reader->{token}" }];
}
sub mixed { my ($n) = @_; return map { (webhook_job(), sign_in_job(), bvn_job(), read_job()) } 1 .. $n }

# Runs the jobs at once against a server: [kind, key, response] each.
sub run_jobs {
    my ($server, @jobs) = @_;
    my @res = concurrent(map { my @j = @$_; [$server, @j[2 .. $#j]] } @jobs);
    return map { [$jobs[$_][0], $jobs[$_][1], $res[$_]] } 0 .. $#jobs;
}

# { "kind code" => count }
sub tally { my %t; $t{"$_->[0] " . $_->[2]->code}++ for @_; return \%t }

# ---- what the tables say ----------------------------------------------------------------------
my %ok;    # key => number of 200 answers
sub record { $ok{ $_->[1] }++ for grep { $_->[0] ne 'read' && $_->[2]->code == 200 } @_ }

sub in_list { return join ',', map { "'$_'" } @_ }

# Every 200 is stored, and nothing is stored without its 200.
sub consistent {
    my ($when) = @_;
    my @refs = sort keys %sent;
    my %stored = map { $_ => 1 } split /\n/, db_value('SELECT transaction_reference FROM'
          . ' payment_notices WHERE transaction_reference IN (' . in_list(@refs) . ')');
    is_deeply([grep { !!$ok{$_} != !!$stored{$_} } @refs], [],
        "$when: each notice stored exactly when it was answered 200");
    is(db_value('SELECT count(*) FROM payment_notices WHERE transaction_reference IN ('
              . in_list(@refs) . ')'), scalar(grep { $ok{$_} } @refs),
        "$when: no notice stored twice");

    my @signers = sort keys %signer;
    my %tokens = map { split /\|/ } split /\n/, db_value("SELECT tokenable_id || '|' || count(*)"
          . ' FROM auth_access_tokens WHERE tokenable_id IN (' . in_list(@signers) . ')'
          . ' GROUP BY tokenable_id');
    my %devices = map { split /\|/ } split /\n/, db_value("SELECT customer_id || '|' || count(*)"
          . ' FROM devices WHERE customer_id IN (' . in_list(@signers) . ') GROUP BY customer_id');
    is_deeply([grep { ($tokens{$_} // 0) != ($ok{$_} // 0) } @signers], [],
        "$when: one token per sign-in answered 200, none for any other");
    is_deeply([grep { ($devices{$_} // 0) != ($ok{$_} ? 1 : 0) } @signers], [],
        "$when: a device row exactly for the customers signed in");

    my @onb = sort keys %onboarder;
    my @half = grep {
        my $row = customer_row($_);
        my $accounts = account_count($_);
        $ok{$_} ? ($accounts != 1 || $row !~ /^\d{11}\|[A-Z2-9]{8}$/) : ($accounts != 0 || $row ne '|')
    } @onb;
    is_deeply(\@half, [], "$when: BVN, referral code and one account exactly for each 200, "
          . 'nothing for the others');
}

sub writes_refused {
    my ($name, $answers) = @_;
    my @w = grep { $_->[0] ne 'read' } @$answers;
    my @bad = grep {
        my $r = $_->[2];
        my $d = decode_body($r) || {};
        $r->code != 503 || ($d->{code} // '') ne 'E_UNAVAILABLE'
          || ($r->header('Retry-After') // '') !~ /^\d+$/
    } @w;
    is_deeply([map { "$_->[0] " . $_->[2]->code } @bad], [],
        "$name: every write answered 503 E_UNAVAILABLE with Retry-After");
}

sub reads_work {
    my ($name, $answers) = @_;
    my @r = grep { $_->[0] eq 'read' } @$answers;
    is_deeply([grep { $_ != 200 } map { $_->[2]->code } @r], [], "$name: every read 200");
    my $banks = @r ? decode_body($r[0][2]) : undef;
    ok($banks && ref $banks->{body}{banks} eq 'ARRAY' && @{ $banks->{body}{banks} } >= 30,
        "$name: reads answer the bank list");
}

# Everything the load needs is made now: nothing can be added while the file is read-only.
my @one      = (webhook_job(), bvn_job(), sign_in_job());
my @ro_jobs  = mixed(6);
my @main_jobs = mixed(6);
my @again    = (webhook_job(), bvn_job(), sign_in_job());
my @ro_after_jobs   = mixed(6);
my @main_after_jobs = mixed(6);

# ---- before: the main server pools connections that can write ---------------------------------
my @before = run_jobs($main, mixed(4));
record(@before);
is_deeply(tally(grep { $_->[2]->code != 200 } @before), {}, 'before: every request 200');

# ---- read-only ----------------------------------------------------------------------------------
# The file and its directory: SQLite opens the file read-only and cannot create a journal.
# (Its -wal and -shm files stay as they are: see docs/operations.md for a read-only -shm.)
my %mode = map { $_ => (stat $_)[2] & 07777 } $db, $dir;
chmod 0444, $db;
chmod 0555, $dir;
my $mark = $ro->error_log_mark;
like(scalar `@as sqlite3 '$db' "UPDATE banks SET name = name WHERE 0 = 1; INSERT INTO account_serials (created_at) VALUES ('x')" 2>&1`,
    qr/readonly|read-only/i, 'read-only: SQLite itself cannot write the file now');

# One of each, answers checked in full.
my ($one, $bvn, $sign) = @one;
my $res = $ro->request(@$one[2 .. $#$one]);
assert_error($res, 503, 'E_UNAVAILABLE', 'read-only: webhook');
like($res->header('Retry-After') // '', qr/^\d+$/, 'read-only: webhook: Retry-After');
unlike($res->content, qr/sqlite|readonly|\Q$dir\E/i, 'read-only: webhook: no internals');
record([@$one[0, 1], $res]);
$res = $ro->request(@$bvn[2 .. $#$bvn]);
assert_error($res, 503, 'E_UNAVAILABLE', 'read-only: BVN onboarding');
like($res->header('Retry-After') // '', qr/^\d+$/, 'read-only: BVN onboarding: Retry-After');
record([@$bvn[0, 1], $res]);
$res = $ro->request(@$sign[2 .. $#$sign]);
assert_error($res, 503, 'E_UNAVAILABLE', 'read-only: sign-in');
like($res->header('Retry-After') // '', qr/^\d+$/, 'read-only: sign-in: Retry-After');
record([@$sign[0, 1], $res]);
my $read = read_job();
is($ro->request(@$read[2 .. $#$read])->code, 200, 'read-only: the bank list 200');

# Under load: the read-only pool refuses every write and reads; the main server stores or
# refuses, never anything else.
my @ro_load = run_jobs($ro, @ro_jobs);
record(@ro_load);
writes_refused('read-only, under load', \@ro_load);
reads_work('read-only, under load', \@ro_load);
my @main_load = run_jobs($main, @main_jobs);
record(@main_load);
is_deeply([map { "$_->[0] " . $_->[2]->code }
          grep { my $c = $_->[2]->code; $c != 200 && $c != 503 } @main_load], [],
    'read-only, main server under load: each answer 200 or 503, none 500');
reads_work('read-only, main server under load', \@main_load);
diag('read-only, main server: ' . join ', ', map { "$_ x" . tally(@main_load)->{$_} }
      sort keys %{ tally(@main_load) });
like($ro->error_log_since($mark), qr/BANK0203: [^\n]*readonly database/,
    'read-only: the refused write is logged with the reason');

# ---- writable again, no restart -------------------------------------------------------------------
chmod $mode{$dir}, $dir;
chmod $mode{$db}, $db;
$mark = $ro->error_log_mark;
# The read-only pool still holds the connections it opened read-only: their writes succeed.
for my $j (@again) {
    my $r = $ro->request(@$j[2 .. $#$j]);
    is($r->code, 200, "writable again: $j->[0] on a connection opened read-only: 200")
      or diag($r->content);
    record([@$j[0, 1], $r]);
}
like($ro->error_log_since($mark), qr/BANK0808: SQLite connection opened while the database was read-only replaced/,
    'writable again: read-only connections were replaced');
my @ro_after = run_jobs($ro, @ro_after_jobs);
record(@ro_after);
is_deeply(tally(grep { $_->[2]->code != 200 } @ro_after), {},
    'writable again, under load: every request 200');
my @main_after = run_jobs($main, @main_after_jobs);
record(@main_after);
is_deeply(tally(grep { $_->[2]->code != 200 } @main_after), {},
    'writable again, main server under load: every request 200');

# The writes refused while read-only, sent again: stored now, once.
for my $v (grep { !$ok{ $_->{c}{id} } } values %onboarder) {
    my $r = bvn_post($v);
    is($r->code, 200, 'writable again: a BVN refused while read-only succeeds')
      or diag($r->content);
    $ok{ $v->{c}{id} }++ if $r->code == 200;
    last;    # one is enough to show it; the rest stay refused, and must stay empty
}
consistent('after');
unlike(error_log_since($start) . $ro->error_log_since($ro_start),
    qr/BANK0203: [^\n]*(?:constraint|malformed|corrupt)/i,
    'no constraint failure or corruption logged');
$ro->stop;
done_testing();
