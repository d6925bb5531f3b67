# bankctl bvn import (docs/identity.md, "Many records"): an identity provider's export loaded
# from a file or standard input, never through arguments. Each line checked as bvn add checks
# it; a bad line reported by its number, never its content, and skipped; the summary says how
# many were loaded, replaced and refused (exit 1 when any was refused). Batches are
# transactions: an import interrupted leaves whole batches only, and run again it replaces
# the same values. Imported records verify customers through the API like records added one
# by one, replace a record written before sealing, and show progress on a terminal only.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time sleep);
use POSIX ();
use JSON::PP ();
use Bank::Test qw(:DEFAULT spew slurp);
use Bank::BvnTest;
use Bank::Docs qw(doc_block substitute);

my $root = $ENV{BANK_TEST_ROOT};
my $ctl  = $ENV{BANK_CTL};

sub records { return db_value('SELECT count(*) FROM bvn_records') }

# bankctl bvn import with its arguments; (exit code, stdout, stderr)
sub import_run { return bankctl('bvn', 'import', @_) }

sub show { return JSON::PP::decode_json(scalar bankctl('bvn', 'show', '--bvn', $_[0])) }

# ---- good and bad lines ----
my $nb = sub { next_bvn() };
my %good = map { $_ => $nb->() } qw(a b c d);
my $bad1 = $nb->();
my @lines = (
    "bvn,date_of_birth,first_name,last_name,phone",              # 1 a header: skipped
    "$good{a},1990-04-12,Ada,Obi,+2348012345678",                # 2
    "$good{b},1985-12-31,Émeka,Okafor",                          # 3 no phone, UTF-8
    "",                                                          # 4 blank: skipped
    "$bad1,1990-02-30,Ada,Obi",                                  # 5 no such date
    "12345,1990-01-01,Ada,Obi",                                  # 6 not 11 digits
    "$good{c},1970-01-01,Ngozi,Eze,\r",                          # 7 CRLF, empty phone
    "$good{d},1999-09-09,\"Ada\",Obi",                           # 8 quoted
    "$good{d},2999-09-09,Ada,Obi",                               # 9 in the future
    "$good{d},1999-09-09,Ada,Obi,+234,extra",                    # 10 six fields
    "$good{d},1999-09-09,Ada",                                   # 11 three fields
    "$good{d},1999-09-09,Ada,Obi,0803-BAD",                      # 12 bad phone
    "$good{d},1999-09-09,\x01Ada,Obi",                           # 13 control character
    "$good{d},1999-09-09,Ada,\xff\xfe",                          # 14 not UTF-8
    "$good{d},1999-09-09,Ada," . ('O' x 101),                    # 15 name too long
    "$good{d}," . ('9' x 3000),                                  # 16 line too long
    "$good{d},1999-09-09,Ada,Obi",                               # 17
);
my $file = "$root/bvn-import.csv";
{
    open my $fh, '>:raw', $file or die "$file: $!";
    print $fh map { "$_\n" } @lines;
    close $fh;
}
my $before = records();
my ($rc, $out, $err) = import_run($file);
is($rc, 1, 'refused lines: exit 1');
is($out, '4 loaded, 0 replaced, 11 refused', 'summary: loaded, replaced, refused');
my %why = (5 => 'date_of_birth is not a real calendar date',
    6 => 'bvn must be exactly 11 digits', 8 => 'has a double quote',
    9 => 'date_of_birth is in the future', 10 => 'does not have 4 or 5 fields',
    11 => 'does not have 4 or 5 fields', 12 => 'phone must be 1 to',
    13 => 'first_name must not contain control characters',
    14 => 'last_name must be UTF-8 text', 15 => 'last_name must be 1 to 100 characters',
    16 => 'is longer than the limit');
for my $n (sort { $a <=> $b } keys %why) {
    like($err, qr/^bankctl: bvn import: line $n: \Q$why{$n}\E/m, "line $n refused: $why{$n}");
}
my @said = $err =~ /line (\d+):/g;
is("@said", join(' ', sort { $a <=> $b } keys %why), 'only the bad lines are reported');
for my $v (values(%good), $bad1, 'Obi', 'Okafor', 'Ngozi', '2999-09-09', '1990-02-30') {
    unlike($err . $out, qr/\Q$v\E/, "no value of the file in the output ($v)");
}
is(records() - $before, 4, 'four records stored');
is_deeply(show($good{a}), { bvn => $good{a}, firstName => 'Ada', lastName => 'Obi',
        dateOfBirth => '1990-04-12', phone => '+2348012345678', source => 'table',
        checked => JSON::PP::false }, 'a record as given');
is(show($good{b})->{firstName}, "\x{c9}meka", 'UTF-8 name kept');
is(show($good{b})->{phone}, undef, 'no phone column: none');
is(show($good{c})->{phone}, undef, 'an empty phone (CRLF line): none');
is(show($good{c})->{lastName}, 'Eze', 'a CRLF line read without its CR');

# ---- run again: the same values replaced, nothing added; standard input ----
{
    my $cmd = "$ctl bvn import - <" . _sq($file) . " 2>/dev/null";
    $out = `$cmd`;
    $rc  = $? >> 8;
    chomp $out;
}
is($rc, 1, 'again from standard input: exit 1 (the same bad lines)');
is($out, '0 loaded, 4 replaced, 11 refused', 'again: every good record replaced, none added');
is(records() - $before, 4, 'still four records');
is(show($good{a})->{dateOfBirth}, '1990-04-12', 'the same values');

# ---- a clean file: exit 0; a record written before sealing is replaced ----
my $plain = $nb->();
db_exec("INSERT INTO bvn_records (bvn, first_name, last_name, date_of_birth, created_at)"
      . " VALUES ('$plain', 'Old', 'Name', '1980-01-01', '2026-01-01T00:00:00.000Z')");
spew("$root/bvn-import-2.csv", "$plain,1980-01-02,New,Name\n$good{a},1990-04-12,Ada,Obi\n");
($rc, $out, $err) = import_run("$root/bvn-import-2.csv");
is($rc, 0, 'no bad line: exit 0') or diag($err);
is($out, '0 loaded, 2 replaced, 0 refused', 'the plain record and a sealed one replaced');
is(db_value("SELECT count(*) FROM bvn_records WHERE bvn = '$plain'"), 0, 'no plain row left');
is(show($plain)->{dateOfBirth}, '1980-01-02', 'the plain record replaced by the sealed one');
is(show($plain)->{firstName}, 'New', 'with its new name');
is(db_value('SELECT count(*) FROM bvn_records WHERE crypt_key IS NULL'), 0,
    'every record sealed');

# ---- an imported record verifies a customer through the API ----
{
    my $v = verifiable(no_record => 1, first => 'Chidi', last => 'Nwosu', dob => '1988-08-08');
    spew("$root/bvn-import-3.csv", "$v->{bvn},1988-08-08,Chidi,Nwosu,+2348012345678\n");
    ($rc, $out) = import_run("$root/bvn-import-3.csv");
    is($out, '1 loaded, 0 replaced, 0 refused', 'one record for a customer');
    my $res = bvn_post($v);
    is($res->code, 200, 'the customer verified with the imported record');
    my $d = decode_body($res) || {};
    is($d->{body}{customer}{account}{details}{accountName} // '', 'CHIDI NWOSU',
        'the account named after the record');
}

# ---- docs/identity.md's command, as written (its database and file this test's) ----
{
    my @d = map { next_bvn() } 1 .. 3;
    spew("$root/records.csv", join '', map { "$_,1991-01-01,Ada,Obi,+2348012345678\n" } @d);
    my $sh = substitute(doc_block('docs/identity.md', 'identity-bvn-import'), 'identity.md',
        'bankctl --db sqlite:/var/lib/mod_bank/bank.db' => $ctl,
        'records.csv' => _sq("$root/records.csv"));
    my $said = `$sh 2>&1`;
    is($? >> 8, 0, 'the documented command: exit 0') or diag($said);
    is($said, "3 loaded, 0 replaced, 0 refused\n", 'the documented command: its summary');
}

# ---- usage ----
($rc, $out, $err) = import_run();
is($rc, 2, 'no file: exit 2');
like($err, qr/a FILE is required/, 'no file: said');
($rc, $out, $err) = import_run("$root/no-such.csv");
is($rc, 1, 'a file that cannot be read: exit 1');
like($err, qr/cannot open/, 'a file that cannot be read: said');
($rc, $out, $err) = import_run($file, '--batch', '0');
is($rc, 2, '--batch 0: exit 2');

# ---- interrupted, then run again ----
# The records come through a pipe this test holds: three and a half batches are written,
# the import is interrupted once the three whole batches are in, while it waits for the
# rest of the fourth.
{
    my $n     = 2000;
    my $batch = 200;
    my $big   = "$root/bvn-import-big.csv";
    my @bvns  = map { sprintf '7%04d%06d', $$ % 10000, $_ } 1 .. $n;
    my @rows  = map { sprintf "%s,1990-01-%02d,First%d,Last%d\n", $bvns[$_], 1 + $_ % 28, $_, $_ }
      0 .. $n - 1;
    spew($big, join '', @rows);
    my $start = records();
    pipe(my $from, my $to) or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        close $to;
        open STDIN,  '<&', $from or die "stdin: $!";
        open STDOUT, '>', "$root/bvn-import-int.out" or die "stdout: $!";
        open STDERR, '>&', \*STDOUT or die "stderr: $!";
        exec "exec $ctl bvn import - --batch $batch" or POSIX::_exit(127);
    }
    close $from;
    syswrite $to, join '', @rows[0 .. 3 * $batch + $batch / 2 - 1];
    my $end = time + 60;
    sleep 0.05 while records() - $start < 3 * $batch && time < $end;
    sleep 0.3; # had it written more than the three batches, it would show now
    kill 'INT', $pid;
    waitpid $pid, 0;
    close $to;
    isnt($? & 127, 0, 'the import ended by the interrupt');
    is(records() - $start, 3 * $batch, 'interrupted: the three whole batches in, nothing of the fourth');
    ($rc, $out, $err) = import_run($big, '--batch', $batch);
    is($rc, 0, 'run again: exit 0') or diag($err);
    is($out, sprintf('%d loaded, %d replaced, 0 refused', $n - 3 * $batch, 3 * $batch),
        'run again: the rest loaded, the committed batches replaced');
    is(records() - $start, $n, "all $n records in");
    is(show($bvns[-1])->{lastName}, 'Last' . ($n - 1), 'the last record as given');
}

# ---- the shapes of an export: a byte order mark, a short header, CRLF, a NUL byte, the same
# BVN twice in one batch, no end of line after the last record; a directory ----
{
    my @v = map { next_bvn() } 1 .. 3;
    my $f = "$root/bvn-import-5.csv";
    open my $fh, '>:raw', $f or die "$f: $!";
    print $fh "\xEF\xBB\xBFbvn,date_of_birth,first_name,last_name\r\n",
      "$v[0],1990-01-01,Ada,Obi\r\n", "$v[0],1990-01-02,Ada,Obi\r\n",
      "$v[1],1990-01-01,A\0da,Obi\r\n", "$v[2],1990-01-03,Ada,Obi";
    close $fh;
    ($rc, $out, $err) = import_run($f);
    is($out, '2 loaded, 1 replaced, 1 refused', 'BOM and header skipped; a BVN twice: replaced');
    like($err, qr/^bankctl: bvn import: line 4: holds a NUL byte/m, 'a NUL byte: refused');
    is(show($v[0])->{dateOfBirth}, '1990-01-02', 'the later line of the same BVN wins');
    is(show($v[2])->{dateOfBirth}, '1990-01-03', 'the last line without an end of line read');
    ($rc, $out, $err) = import_run($root);
    is($rc, 1, 'a directory: exit 1');
    like($err, qr/is not a file to read/, 'a directory: said');
    is($out, '', 'a directory: no summary');
}

# ---- the database refuses a batch: the import stops, says what it had done, keeps it ----
{
    my $start = records();
    my $stop  = $start + 250; # refused once the table holds that many: in the third batch
    if ($ENV{BANK_DBDRIVER} eq 'sqlite3') {
        db_exec("CREATE TRIGGER test_import_stop BEFORE INSERT ON bvn_records"
              . " WHEN (SELECT count(*) FROM bvn_records) >= $stop"
              . " BEGIN SELECT RAISE(ABORT, 'test: no more records'); END");
    } else {
        db_exec("CREATE FUNCTION test_import_stop() RETURNS trigger LANGUAGE plpgsql AS \$\$"
              . " BEGIN IF (SELECT count(*) FROM bvn_records) >= $stop THEN"
              . " RAISE EXCEPTION 'test: no more records'; END IF; RETURN NEW; END \$\$;"
              . " CREATE TRIGGER test_import_stop BEFORE INSERT ON bvn_records"
              . " FOR EACH ROW EXECUTE FUNCTION test_import_stop()");
    }
    my @f = map { sprintf '9%04d%06d', $$ % 10000, $_ } 1 .. 500;
    spew("$root/bvn-import-6.csv", join '', map { "$_,1990-01-01,Ada,Obi\n" } @f);
    ($rc, $out, $err) = import_run("$root/bvn-import-6.csv", '--batch', 100);
    if ($ENV{BANK_DBDRIVER} eq 'sqlite3') {
        db_exec('DROP TRIGGER test_import_stop');
    } else {
        db_exec('DROP TRIGGER test_import_stop ON bvn_records; DROP FUNCTION test_import_stop()');
    }
    is($rc, 1, 'a batch refused: exit 1');
    is($out, '', 'a batch refused: no summary on standard output');
    like($err, qr/^bankctl: bvn import: 200 loaded, 0 replaced, 0 refused before the failure; the batch that failed \(up to line 300\) was rolled back$/m,
        'a batch refused: what was done before, and which batch failed');
    like($err, qr/no more records/, "a batch refused: the database's reason");
    is(records() - $start, 200, 'a batch refused: the two batches before it kept, nothing of it');
    my ($first, $failed) = @f[0, 250];
    unlike($err, qr/\Q$first\E|\Q$failed\E/, 'a batch refused: no BVN in the messages');
}

# ---- progress: on a terminal, not on a pipe ----
{
    my @p = map { sprintf '8%04d%06d', $$ % 10000, $_ } 1 .. 3000;
    spew("$root/bvn-import-4.csv", join '', map { "$_,1990-01-01,Ada,Obi\n" } @p);
    my $cmd = "$ctl bvn import " . _sq("$root/bvn-import-4.csv") . ' --batch 10';
    ($rc, $out, $err) = import_run("$root/bvn-import-4.csv", '--batch', 10);
    is($err, '', 'on a pipe: nothing on standard error');
  SKIP: {
        skip 'script(1) (util-linux) is not installed', 3 unless -x '/usr/bin/script';
        # script gives the command a terminal; its output is what the terminal showed
        my $tty = `script -qec ${\ _sq($cmd)} /dev/null`;
        like($tty, qr/bvn import: \d+ records, \d+\/s/, 'on a terminal: records and rate shown');
        like($tty, qr/\d+ s left/, 'on a terminal: the time left shown');
        like($tty, qr/0 loaded, 3000 replaced, 0 refused/, 'on a terminal: the summary');
    }
}

sub _sq { my $s = shift; $s =~ s/'/'\\''/g; return "'$s'" }

done_testing();
