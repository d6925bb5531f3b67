# Identity data encrypted at rest (docs/security.md): after onboarding through the records
# table and through an identity provider, the database file, its WAL and shared memory
# (SQLite) or pg_dump's output and the cluster's table files and WAL (PostgreSQL) hold none of
# the BVNs, dates of birth, the record's phone or the names a provider answered with, in any
# encoding tried; a value copied into another row or column does not
# decrypt: the answer is 500 E_INTERNAL with the reason logged, never the other row's data.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Basename qw(dirname);
use MIME::Base64 qw(encode_base64);
use POSIX ();
use JSON::PP ();
use Bank::Test;
use Bank::BvnTest;

my $root = $ENV{BANK_TEST_ROOT};

# Every encoding of an ASCII text a dump or a file could hold it in: as is, hex (both cases),
# UTF-16 (both orders) and base64 (standard and url-safe) at each of the three alignments,
# only the characters that depend on the text alone.
sub encodings {
    my ($s) = @_;
    my @e = ($s, unpack('H*', $s), uc(unpack('H*', $s)), join('', map { "$_\0" } split //, $s),
        join('', map { "\0$_" } split //, $s));
    for my $k (0 .. 2) {
        my $b = encode_base64(("\0" x $k) . $s, '');
        $b = substr($b, $k ? 4 : 0);
        $b = substr($b, 0, length($b) - 4);
        next if length $b < 8;
        push @e, $b, $b =~ tr{+/}{-_}r;
    }
    return @e;
}

# A date of birth in every form tried: ISO, compact, day first and month first with /, - and
# ., year first with /, and as Unix seconds of that midnight.
sub date_forms {
    my ($d) = @_;
    my ($y, $m, $dd) = split /-/, $d;
    my $epoch = POSIX::mktime(0, 0, 0, $dd, $m - 1, $y - 1900);
    return ($d, "$y$m$dd", "$dd/$m/$y", "$m/$dd/$y", "$dd-$m-$y", "$dd.$m.$y", "$y/$m/$dd",
        "$dd$m$y", defined $epoch ? $epoch - POSIX::mktime(0, 0, 0, 1, 0, 70) : ());
}

# What the database holds, as bytes: the SQLite files, or a full pg_dump.
sub database_bytes {
    if ($ENV{BANK_DBDRIVER} eq 'sqlite3') {
        my %files;
        for my $f (map { "$ENV{BANK_DBPARAMS}$_" } '', '-wal', '-shm') {
            next unless -e $f;
            open my $fh, '<:raw', $f or die "$f: $!";
            local $/;
            $files{$f} = <$fh>;
        }
        return \%files;
    }
    my $dump = dirname($ENV{BANK_PSQL}) . '/pg_dump';
    my $out  = `'$dump' --no-owner '$ENV{BANK_PSQL_URL}'`;
    die "pg_dump failed" if $? || !$out;
    return { pg_dump => $out };
}

# Customers verified through the records table, with a record phone of their own.
my (@v, @secrets);
for my $dob ('1937-08-29', '1962-12-03') {
    my $v = verifiable(dob => $dob);
    my $phone = sprintf '+23480%08d', ($$ * 7 + scalar @v) % 100000000;
    bankctl('bvn', 'add', '--bvn', $v->{bvn}, '--dob', $dob, '--first', 'Ada', '--last', 'Obi',
        '--phone', $phone);
    my $res = bvn_post($v);
    is($res->code, 200, "onboarding with the record of $dob") or diag($res->content);
    is(decode_body($res)->{body}{customer}{bvn}, $v->{bvn}, 'the answer has the BVN in clear');
    push @v, $v;
    push @secrets, [bvn => $v->{bvn}], [phone => $phone], map { [dob => $_] } date_forms($dob);
}

# A customer verified through the identity provider: the names and date it confirmed are
# kept, encrypted.
my $pv = verifiable(no_record => 1, dob => '1948-02-17');
open my $f, '>', "$root/fake-ids/$pv->{bvn}" or die "fake-ids: $!";
print $f "Ada||Obi|1948-02-17\n";
close $f;
my $res = bvn_post($pv, path => '/dojah/onboarding/bvn');
is($res->code, 200, 'onboarding through the identity provider') or diag($res->content);
like(bankctl('bvn', 'show', '--bvn', $pv->{bvn}), qr/"dateOfBirth":"1948-02-17".*"source":"dojah"/,
    'the provider\'s match is kept (bankctl bvn show decrypts it)');
push @secrets, [bvn => $pv->{bvn}], map { [dob => $_] } date_forms('1948-02-17');

# One through a provider that answers with the names it holds (Prembly), in a spelling of its
# own: the names kept are the provider's, so they are searched for as it wrote them (the
# customer's own spelling is in the customer row, in clear, as registered).
my $nv = verifiable(no_record => 1, dob => '1953-06-21', first => 'Zebulon', last => 'Quaxworth');
open $f, '>', "$root/fake-ids/$nv->{bvn}" or die "fake-ids: $!";
print $f "zEBULON||qUAXWORTH|1953-06-21\n";
close $f;
$res = bvn_post($nv, path => '/prembly/onboarding/bvn');
is($res->code, 200, 'onboarding through a provider that answers with its names') or diag($res->content);
like(bankctl('bvn', 'show', '--bvn', $nv->{bvn}), qr/"firstName":"zEBULON".*"lastName":"qUAXWORTH"/,
    'the provider\'s names are kept as it wrote them (bankctl bvn show decrypts them)');
push @secrets, [bvn => $nv->{bvn}], [first_name => 'zEBULON'], [last_name => 'qUAXWORTH'],
  map { [dob => $_] } date_forms('1953-06-21');

my $bytes = database_bytes();
ok(scalar keys %$bytes, 'database files read: ' . join(', ', sort keys %$bytes));

# PostgreSQL: the cluster's own files too (table files and the WAL, which holds every write
# since the last checkpoint), for every value in every encoding, in one pass per file.
if ($ENV{BANK_DBDRIVER} eq 'pgsql') {
    my @files;
    my @dirs = ("$ENV{BANK_PG_DIR}/data/base", "$ENV{BANK_PG_DIR}/data/pg_wal");
    while (my $d = shift @dirs) {
        opendir my $dh, $d or next;
        for my $e (grep { !/^\.\.?$/ } readdir $dh) {
            -d "$d/$e" ? push(@dirs, "$d/$e") : push(@files, "$d/$e");
        }
    }
    my %of;
    for my $s (@secrets) {
        $of{$_} //= "$s->[0] $s->[1]" for encodings($s->[1]);
    }
    my $any = join '|', map { quotemeta } sort { length $b <=> length $a } keys %of;
    my (@found, $wal);
    for my $f (@files) {
        open my $fh, '<:raw', $f or next;
        my $data = do { local $/; <$fh> };
        $wal++ if $f =~ m{/pg_wal/[0-9A-F]{24}$};
        while ($data =~ /($any)/g) {
            push @found, "$of{$1} (as $1) in $f";
        }
    }
    ok(@files > 10, scalar(@files) . ' files of the cluster read (table files, WAL)');
    ok($wal, "WAL segments among them ($wal)");
    is_deeply(\@found, [], 'no BVN, date of birth, phone or provider\'s name in them, in any'
          . ' encoding (' . keys(%of) . ' strings)');
    # The same search finds what is there: a customer's e-mail, stored in clear.
    my $control = 0;
    for my $f (@files) {
        open my $fh, '<:raw', $f or next;
        my $data = do { local $/; <$fh> };
        $control++ if index($data, $v[0]{c}{email}) >= 0;
    }
    ok($control, "control: a customer's e-mail is found in the cluster's files ($control)");
}
for my $s (@secrets) {
    my ($what, $text) = @$s;
    my @found;
    for my $enc (encodings($text)) {
        push @found, grep { index($bytes->{$_}, $enc) >= 0 } sort keys %$bytes;
    }
    ok(!@found, "$what $text: in no encoding in the database")
      or diag("found in @found");
}

# The same search finds what is there: the e-mail of a customer, stored in clear.
my $email = $v[0]{c}{email};
ok((grep { index($bytes->{$_}, $email) >= 0 } keys %$bytes),
    'control: a customer\'s e-mail is found by the same search');

# ---- a value copied into another row or column does not decrypt ----
my ($a, $b) = @v;
my $hash_of = sub {
    db_value("SELECT bvn_hash FROM customers WHERE id = '$_[0]'");
};
my ($ha, $hb) = ($hash_of->($a->{c}{id}), $hash_of->($b->{c}{id}));
like($ha, qr/\A[0-9a-f]{64}\z/, 'the customer row holds a keyed hash of the BVN');
like(db_value("SELECT bvn FROM customers WHERE id = '$a->{c}{id}'"), qr/\At2:[A-Za-z0-9+\/]+\z/,
    'the BVN column holds a value sealed with the current key');

# A's sealed date of birth copied into B's record: B's own date no longer matches anything,
# A's date is not accepted in its place.
my $dob_b = db_value("SELECT date_of_birth FROM bvn_records WHERE bvn_hash = '$hb'");
db_exec("UPDATE bvn_records SET date_of_birth = (SELECT date_of_birth FROM bvn_records"
      . " WHERE bvn_hash = '$ha') WHERE bvn_hash = '$hb'");
my $mark = error_log_mark();
for my $dob ($a->{dob}, $b->{dob}) {
    $res = bvn_post($b, dob => $dob);
    assert_error($res, 500, 'E_INTERNAL', "copied date of birth, B sends $dob");
    unlike($res->content, qr/\Q$a->{bvn}\E|\Q$a->{dob}\E/, 'nothing of A in the answer');
}
select undef, undef, undef, 0.2;
my @log = split /^/, error_log_since($mark);
ok((grep { /BANK0203: .*bvn_records\.date_of_birth of row \Q$hb\E .*does not open/ } @log),
    'the log says which value of which row did not decrypt')
  or diag(join '', @log);
ok(!(grep { /\Q$a->{bvn}\E|\Q$b->{bvn}\E/ } @log), 'no BVN in the log');
db_exec("UPDATE bvn_records SET date_of_birth = '$dob_b' WHERE bvn_hash = '$hb'");
is(bvn_post($b)->code, 200, 'its own value back: B answers 200 again');

# A's sealed BVN moved into B's customer row (the column is unique: A's row gets another).
my $bvn_a = db_value("SELECT bvn FROM customers WHERE id = '$a->{c}{id}'");
my $bvn_b = db_value("SELECT bvn FROM customers WHERE id = '$b->{c}{id}'");
db_exec("UPDATE customers SET bvn = 'moved' WHERE id = '$a->{c}{id}'");
db_exec("UPDATE customers SET bvn = '$bvn_a' WHERE id = '$b->{c}{id}'");
$res = bvn_post($b);
assert_error($res, 500, 'E_INTERNAL', "A's BVN in B's row");
unlike($res->content, qr/\Q$a->{bvn}\E/, "A's BVN is not in the answer");
my ($rc, $out, $err) = bankctl('customer', 'show', '--id', $b->{c}{id});
isnt($rc, 0, "bankctl customer show refuses B's row");
like($err, qr/customers\.bvn of row \Q$b->{c}{id}\E .*does not open/, 'and says why');
unlike("$out$err", qr/\Q$a->{bvn}\E/, 'without showing A\'s BVN');
db_exec("UPDATE customers SET bvn = '$bvn_b' WHERE id = '$b->{c}{id}'");
db_exec("UPDATE customers SET bvn = '$bvn_a' WHERE id = '$a->{c}{id}'");
is(bvn_post($a)->code, 200, 'values back in place: A answers 200');
is(bvn_post($b)->code, 200, 'and B');

# The column is part of the sealed value too: B's sealed first name as its last name.
db_exec("UPDATE bvn_records SET last_name = first_name WHERE bvn_hash = '$hb'");
assert_error(bvn_post($b), 500, 'E_INTERNAL', 'a value moved to another column');
bankctl('bvn', 'add', '--bvn', $b->{bvn}, '--dob', $b->{dob}, '--first', 'Ada', '--last', 'Obi');
is(bvn_post($b)->code, 200, 'the record written again: 200');

# A record withdrawn by its BVN, which only bankctl can find (by the keyed hash).
is(bankctl('bvn', 'delete', '--bvn', $pv->{bvn}), '1', 'bankctl bvn delete: one record');
my ($drc, undef, $derr) = bankctl('bvn', 'show', '--bvn', $pv->{bvn});
like($derr, qr/no record of that BVN/, 'gone');
is(bankctl('bvn', 'delete', '--bvn', $pv->{bvn}), '0', 'deleting it again: none');

done_testing();
