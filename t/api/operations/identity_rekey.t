# bankctl rekey (docs/operations.md) while the server serves: rows written before identity
# data was encrypted are read as they are and sealed in batches, each batch one transaction
# (a failed batch leaves its rows as they were; running it again goes on); rows sealed with
# an older key (BankIdentityOldKey) are read, and moved to the current key under load
# without one answer changing.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Basename qw(dirname);
use Time::HiRes ();
use JSON::PP ();
use Bank::Test qw(:DEFAULT spew slurp);
use Bank::BvnTest;

my $root = $ENV{BANK_TEST_ROOT};
my $kdir = dirname($ENV{BANK_TEST_KEYS});

# bankctl with t1 as the current key (t2 older): the keys of a server before a rotation.
my $t1conf = "$root/keys-t1-current.conf";
spew($t1conf, "BankIdentityKey t1 $kdir/t1.key\nBankIdentityOldKey t2 $kdir/t2.key\n"
      . "BankIdentityHashKey $kdir/hash.key\n");
chmod 0644, $t1conf;

sub plain_count {
    return db_value("SELECT (SELECT count(*) FROM customers WHERE bvn IS NOT NULL"
          . " AND crypt_key IS NULL) + (SELECT count(*) FROM bvn_records WHERE crypt_key IS NULL)");
}

# Rows that are neither wholly plain nor wholly sealed (a half-done batch would leave them).
sub torn_rows {
    return db_value("SELECT (SELECT count(*) FROM customers WHERE bvn IS NOT NULL AND NOT ("
          . "(crypt_key IS NULL AND bvn_hash IS NULL AND length(bvn) = 11) OR (crypt_key IS NOT"
          . " NULL AND length(bvn_hash) = 64 AND bvn LIKE crypt_key || ':%'))) + (SELECT count(*)"
          . " FROM bvn_records WHERE COALESCE(bvn_hash, '') <> 'not-a-hash' AND NOT ("
          . "(crypt_key IS NULL AND bvn_hash IS NULL AND length(bvn) = 11 AND date_of_birth LIKE"
          . " '____-__-__') OR (crypt_key IS NOT NULL AND length(bvn_hash) = 64 AND bvn LIKE"
          . " crypt_key || ':%' AND date_of_birth LIKE crypt_key || ':%')))");
}

# The answer of a verified customer's repeat, without what a repeat may change.
sub repeat_answer {
    my ($v) = @_;
    my $res = bvn_post($v);
    return "$res->{_rc} " . $res->content;
}

my $now = '2026-01-01T00:00:00.000Z';

# ---- rows written before encryption --------------------------------------------------------
# Three customers verified (their rows then turned back into the plain form older versions
# wrote), three with plain records only.
my (@old, @fresh, %before);
for my $i (1 .. 3) {
    my $v = verifiable(dob => "1970-01-0$i");
    is(bvn_post($v)->code, 200, "customer $i verified");
    $before{$v->{bvn}} = repeat_answer($v);
    my $id = $v->{c}{id};
    db_exec("DELETE FROM bvn_records WHERE bvn_hash = (SELECT bvn_hash FROM customers"
          . " WHERE id = '$id')");
    db_exec("UPDATE customers SET bvn = '$v->{bvn}', bvn_hash = NULL, crypt_key = NULL"
          . " WHERE id = '$id'");
    db_exec("INSERT INTO bvn_records (bvn, first_name, last_name, date_of_birth, phone,"
          . " created_at) VALUES ('$v->{bvn}', 'Ada', 'Obi', '$v->{dob}', '+2348012345678',"
          . " '$now')");
    push @old, $v;
}
for my $i (1 .. 3) {
    my $v = verifiable(no_record => 1, dob => "1971-02-0$i");
    db_exec("INSERT INTO bvn_records (bvn, first_name, last_name, date_of_birth, created_at)"
          . " VALUES ('$v->{bvn}', 'Ada', 'Obi', '$v->{dob}', '$now')");
    push @fresh, $v;
}
my $plain = plain_count();
cmp_ok($plain, '>=', 9, "$plain plain rows");
is(torn_rows(), 0, 'no torn row');

# Served as they are.
for my $v (@old) {
    is(repeat_answer($v), $before{$v->{bvn}}, 'plain customer row: the same answer as sealed');
}
my $f0 = shift @fresh;
is(bvn_post($f0)->code, 200, 'a customer verifies against a plain record');
like(db_value("SELECT bvn FROM customers WHERE id = '$f0->{c}{id}'"), qr/\At2:/,
    'and is stored sealed');
my $thief = verifiable(no_record => 1);
assert_error(bvn_post($thief, bvn => $old[0]{bvn}, dob => $old[0]{dob}), 409, 'E_BVN_IN_USE',
    'the BVN of a plain customer row is in use');

# One batch, then a batch that fails (a row sealed with a key that is not configured): each
# batch commits whole or not at all.
my ($rc, $out, $err) = bankctl('rekey', '--batch', '2', '--batches', '1');
is($rc, 0, 'rekey --batches 1') or diag($err);
my ($n) = $out =~ /^(\d+) rows sealed with key t2; stopped after --batches/;
ok($n && $n >= 1 && $n <= 4, "one batch sealed $out");
is(plain_count(), $plain - $n, 'exactly those rows are sealed now');
is(torn_rows(), 0, 'no torn row');
# (A row under the older key t1 that does not decrypt: it sorts after every plain row.)
db_exec("INSERT INTO bvn_records (bvn, first_name, last_name, date_of_birth, created_at,"
      . " bvn_hash, crypt_key) VALUES ('t1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'x',"
      . " 'x', 'x', '$now', 'not-a-hash', 't1')");
($rc, $out, $err) = bankctl('rekey', '--batch', '2');
is($rc, 1, 'a batch with a row that does not decrypt fails');
like($err, qr/bvn_records\.bvn of row not-a-hash \(key t1\): does not open/,
    'naming the row and why');
like($err, qr/rolled back/, 'and says the batch was rolled back');
is(torn_rows(), 0, 'no torn row after the failed batch');
my $left = plain_count();
cmp_ok($left, '<', $plain - $n, "the batches before it committed ($left plain rows left)");
db_exec("DELETE FROM bvn_records WHERE bvn_hash = 'not-a-hash'");

# Served in the middle of the migration too.
for my $v (@old) {
    is(repeat_answer($v), $before{$v->{bvn}}, 'half-migrated: the same answer');
}
($rc, $out, $err) = bankctl('rekey', '--batch', '2');
is($rc, 0, 'rekey run again') or diag($err);
like($out, qr/ rows sealed with key t2; none left to move; 0 rows still plain$/, $out);
is(plain_count(), 0, 'no plain row left');
is(torn_rows(), 0, 'no torn row');
for my $v (@old) {
    is(repeat_answer($v), $before{$v->{bvn}}, 'migrated: the same answer as before');
}
for my $v (@fresh) {
    is(bvn_post($v)->code, 200, 'a customer verifies against a migrated record');
}
is(db_value("SELECT count(*) FROM customers WHERE bvn IS NOT NULL AND (bvn_hash IS NULL"
          . " OR crypt_key IS NULL)"), 0, 'every customer BVN sealed and hashed');

# ---- rotation: rows sealed with t1, the older key, moved to t2 while requests run --------------
{
    local $ENV{BANK_CTL} = $ENV{BANK_CTL} =~ s/\Q$ENV{BANK_TEST_KEYS}\E/$t1conf/r;
    ($rc, $out, $err) = bankctl('rekey');
}
is($rc, 0, 'rows moved to t1 (a server before the rotation)') or diag($err);
is(db_value("SELECT count(*) FROM bvn_records WHERE crypt_key <> 't1'"), 0, 'all records on t1');
for my $v (@old) {
    is(repeat_answer($v), $before{$v->{bvn}}, 'rows sealed with the older key: the same answer');
}

my $stop = "$root/rekey-stop.$$";
my $log  = "$root/rekey-answers.$$";
unlink $stop, $log;
my $pid = fork // die "fork: $!";
if (!$pid) {
    open my $fh, '>', $log or die $!;
    $fh->autoflush(1);
    until (-e $stop) {
        for my $v (@old) {
            my $a = repeat_answer($v);
            print $fh ($a eq $before{$v->{bvn}} ? "same\n" : "changed $a\n");
        }
    }
    POSIX::_exit(0);
}
Time::HiRes::sleep(0.3);
($rc, $out, $err) = bankctl('rekey', '--batch', '1');
my $extra = verifiable(dob => '1999-09-09');
is(bvn_post($extra)->code, 200, 'a new verification during the rotation');
Time::HiRes::sleep(0.3);
spew($stop, '');
waitpid $pid, 0;
is($rc, 0, 'rekey to t2 while requests run') or diag($err);
my @answers = split /\n/, slurp($log);
cmp_ok(scalar @answers, '>=', 3, scalar(@answers) . ' answers during the rotation');
is_deeply([grep { !/^same$/ } @answers], [], 'every one the same as before');
is(db_value("SELECT (SELECT count(*) FROM customers WHERE crypt_key = 't1')"
          . " + (SELECT count(*) FROM bvn_records WHERE crypt_key = 't1')"), 0,
    'no row left on the older key');
is(torn_rows(), 0, 'no torn row');
for my $v (@old, $extra) {
    like(bankctl('customer', 'show', '--id', $v->{c}{id}), qr/"bvn":"$v->{bvn}"/,
        'bankctl reads the customer after the rotation');
}
unlink $stop, $log, $t1conf;

done_testing();
