# bankctl token prune (docs/operations.md, "A year of operation"), as its cron line runs it:
# tokens expired more than 30 days ago are deleted, those expired since, those still valid
# and those that never expire stay; the deletions add nothing to the revocation feed (014:
# an expired token is refused everywhere by itself), while a revoked live token still does;
# a pruned token is refused and a kept one still answers.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use POSIX ();
use Bank::Test qw(:DEFAULT token_id);
use Bank::Docs qw(doc_block substitute);

sub iso { return POSIX::strftime('%Y-%m-%dT%H:%M:%S.000Z', gmtime($_[0])) }
sub feed { return db_value('SELECT count(*) FROM auth_token_revocations') + 0 }
sub tokens_of { return db_value("SELECT count(*) FROM auth_access_tokens WHERE tokenable_id = '$_[0]'") + 0 }
sub banks { return json_request('GET', '/misc/payment_banks', headers => { Authorization => "Bearer $_[0]" }) }

my $c = new_customer();
my %tok = map { $_ => scalar issue_token($c->{email}) } qw(old1 old2 old3 recent live forever);
my %id  = map { $_ => token_id($tok{$_}) } keys %tok;
is(banks($tok{old1})->code, 200, 'a token answers before it is made old');
my $long_ago = iso(time - 40 * 86400);
my $lately   = iso(time - 2 * 86400);
db_exec("UPDATE auth_access_tokens SET expires_at = '$long_ago' WHERE id IN ($id{old1}, $id{old2}, $id{old3})");
db_exec("UPDATE auth_access_tokens SET expires_at = '$lately' WHERE id = $id{recent}");
db_exec("UPDATE auth_access_tokens SET expires_at = NULL WHERE id = $id{forever}");
is(tokens_of($c->{id}), 6, 'six tokens');

# the cron line, as written
my ($cron) = grep { /token prune/ } split /\n/,
  doc_block('docs/operations.md', 'operations-token-prune');
like($cron, qr/^47 3 \* \* \* root /, 'the cron line: daily, as root');
my ($line) = $cron =~ /^(?:\S+\s+){6}(.*)$/;
$line = substitute($line, 'the cron line',
    'bankctl --db sqlite:/var/lib/mod_bank/bank.db' => $ENV{BANK_CTL});
# Under DB=pgsql the database also holds the C tests' tokens: count what is due first.
my $cut = iso(time - 30 * 86400);
my $due = db_value("SELECT count(*) FROM auth_access_tokens WHERE expires_at < '$cut'") + 0;
cmp_ok($due, '>=', 3, "tokens expired more than 30 days ago: this file's three and any other ($due)");
my $feed = feed();
my $out = `$line 2>&1`;
is($? >> 8, 0, 'token prune: exit 0') or diag $out;
like($out, qr/^$due tokens expired before \S+ removed$/, 'says how many');
is(feed(), $feed, 'nothing added to the revocation feed');
is(db_value("SELECT count(*) FROM auth_access_tokens WHERE expires_at < '$cut'") + 0, 0,
    'none expired before the cut is left');
is(tokens_of($c->{id}), 3, 'the recent, live and never-expiring ones stay');
is(db_value("SELECT count(*) FROM auth_access_tokens WHERE id IN ($id{recent}, $id{live}, $id{forever})") + 0,
    3, 'those three');
is(banks($tok{old1})->code, 401, 'a pruned token is refused');
is(banks($tok{live})->code, 200, 'a live one answers');
is(banks($tok{forever})->code, 200, 'one that never expires answers');

# a live token deleted is still announced
my $res = json_request('POST', '/auth/sign_out', headers => { Authorization => "Bearer $tok{live}" });
ok($res->code == 200 || $res->code == 204, 'sign-out of the live token');
cmp_ok(feed(), '>', $feed, 'a live token deleted is announced on the feed');

# in batches: three more, a batch of two
my %more = map { $_ => token_id(scalar issue_token($c->{email})) } 1 .. 3;
db_exec("UPDATE auth_access_tokens SET expires_at = '$long_ago' WHERE id IN (" . join(',', values %more) . ')');
my ($rc, $o, $err) = bankctl('token', 'prune', '--batch', '2');
is($rc, 0, 'token prune --batch 2');
is($o =~ /^(\d+) tokens expired/ ? $1 : -1, 3, 'removes all three, two statements');
($rc, $o, $err) = bankctl('token', 'prune', '--expired-for', '0');
is($rc, 2, '--expired-for 0: exit 2');
like($err, qr/expired-for/, 'naming the option');

done_testing();
