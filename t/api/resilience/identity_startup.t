# The identity keys at start-up (docs/configuration.md): without BankIdentityKey or
# BankIdentityHashKey, or with a key the database does not know as the one it was written
# with, httpd refuses to start and says why, naming the directive; a key file others can read,
# a missing one or one of the wrong size stops it at configuration time (apachectl -t too).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Basename qw(dirname);
use File::Temp qw(tempdir);
use Bank::Test qw(:DEFAULT spew slurp);
use Bank::Docs qw(free_port private_conf);

my $httpd = Apache::Test::vars('httpd');
my $dir   = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
chmod 0755, $dir;
my $kdir = dirname($ENV{BANK_TEST_KEYS});

sub key_file {
    my ($name, $content, $mode) = @_;
    spew("$dir/$name", $content);
    chmod $mode // 0600, "$dir/$name";
    return "$dir/$name";
}
my $random = sub { join '', map { sprintf '%02x', int rand 256 } 1 .. 32 };

# Runs httpd in the foreground with these key lines; (exit code, what it printed and logged).
# One that starts is stopped at once (and fails the test that expected a refusal).
sub run_httpd {
    my ($name, $keys, @opts) = @_;
    my $port = free_port();
    my $conf = private_conf($dir, $name, $port);
    $conf =~ s/^Include "\Q$ENV{BANK_TEST_KEYS}\E"\n//m or die 'no keys line to replace';
    spew("$dir/$name.conf",
        "$conf$keys\n<Location /onboarding/bvn>\n    SetHandler bank-bvn\n</Location>\n");
    unlink "$dir/$name.log";
    my $out = `timeout 20 '$httpd' @opts -f '$dir/$name.conf' -DFOREGROUND 2>&1`;
    my $rc  = $? >> 8;
    my $log = -e "$dir/$name.log" ? slurp("$dir/$name.log") : '';
    return ($rc, "$out$log");
}

my $hash = "BankIdentityHashKey $kdir/hash.key";
my $cur  = "BankIdentityKey t2 $kdir/t2.key";
my $old  = "BankIdentityOldKey t1 $kdir/t1.key";

# The same configuration with the suite's keys starts (the control for every refusal below).
{
    my $port = free_port();
    my $conf = private_conf($dir, 'good', $port);
    spew("$dir/good.conf", $conf);
    is(system($httpd, '-f', "$dir/good.conf", '-k', 'start'), 0, 'the suite\'s keys: started');
    my $log = '';
    for (1 .. 200) {
        $log = -e "$dir/good.log" ? slurp("$dir/good.log") : '';
        last if $log =~ /AH00489/;
        select undef, undef, undef, 0.05;
    }
    like($log, qr/AH00489/, 'resuming normal operations');
    unlike($log, qr/BANK170[1-5]/, 'no key complaint');
    system($httpd, '-f', "$dir/good.conf", '-k', 'stop');
    sleep 1;
}

my ($rc, $out) = run_httpd('nokey', '');
isnt($rc, 0, 'no BankIdentityKey: refuses to start');
like($out, qr/BANK1701: BankIdentityKey is not set/, 'naming the directive') or diag($out);

($rc, $out) = run_httpd('nohash', "$cur\n$old");
isnt($rc, 0, 'no BankIdentityHashKey: refuses to start');
like($out, qr/BANK1702: BankIdentityHashKey is not set/, 'naming the directive') or diag($out);

my $wrong = key_file('wrong.key', $random->() . "\n");
($rc, $out) = run_httpd('wrongkey', "BankIdentityKey t2 $wrong\n$old\n$hash");
isnt($rc, 0, 'a wrong key under a known id: refuses to start');
like($out, qr/BANK1705: BankIdentityKey: the key t2 is not the one this database knows/,
    'saying which key') or diag($out);

($rc, $out) = run_httpd('wrongold', "$cur\nBankIdentityOldKey t1 $wrong\n$hash");
isnt($rc, 0, 'a wrong older key: refuses to start');
like($out, qr/the key t1 is not the one this database knows/, 'saying which') or diag($out);

($rc, $out) = run_httpd('wronghash', "$cur\n$old\nBankIdentityHashKey $wrong");
isnt($rc, 0, 'a wrong hash key: refuses to start');
like($out, qr/BANK1705: .*the hash key is not the one this database's BVNs were hashed with/,
    'saying so') or diag($out);

# A row sealed with a key id that is not configured.
my $id = uuid4();
db_exec("INSERT INTO customers (id, email, password, first_name, last_name, phone, created_at,"
      . " updated_at, bvn, bvn_hash, crypt_key) VALUES ('$id', 'k9-$id\@example.com', 'x', 'A',"
      . " 'B', '1', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', 't8:AAAA', 'h-$id', 't8')");
($rc, $out) = run_httpd('unknownid', "$cur\n$old\n$hash");
isnt($rc, 0, 'rows sealed with a key that is not configured: refuses to start');
like($out, qr/BANK1705: .*rows are sealed with the key t8, which is not configured/,
    'naming the key id') or diag($out);
db_exec("DELETE FROM customers WHERE id = '$id'");

# Key files: read when httpd reads its configuration, so apachectl -t tells.
my $open = key_file('open.key', $random->(), 0644);
# a key owned by another account than root's (the user httpd starts as): as root, nobody's
my $theirs = key_file('theirs.key', $random->(), 0600);
chown scalar(getpwnam('nobody')), -1, $theirs if $> == 0;
for my $case (
    ($> == 0 ? [theirs => "BankIdentityKey t2 $theirs\n$hash",
        qr/must belong to root or to the user reading it .*chown root:root/] : ()),
    [open    => "BankIdentityKey t2 $open\n$hash",                  qr/only its owner can read/],
    [missing => "BankIdentityKey t2 $dir/none.key\n$hash",          qr/cannot read the key file/],
    [short   => 'BankIdentityKey t2 ' . key_file('short.key', 'abcd') . "\n$hash",
        qr/64 hexadecimal digits/],
    [badid   => "BankIdentityKey 'a b' $kdir/t2.key\n$hash",        qr/a key id is 1 to 32 of/],
    [twice   => "$cur\nBankIdentityKey t3 $kdir/t1.key\n$hash",     qr/given twice: one current key/],
    [hash2   => "$cur\n$hash\n$hash",                               qr/given twice/],
    [openhash => "$cur\nBankIdentityHashKey $open",                 qr/only its owner can read/],
  )
{
    my ($name, $lines, $want) = @$case;
    ($rc, $out) = run_httpd("t-$name", $lines, '-t');
    isnt($rc, 0, "$name: apachectl -t fails");
    like($out, qr/(BankIdentityKey|BankIdentityHashKey): .*$want/, "$name: the message")
      or diag($out);
    unlike($out, qr/[0-9a-f]{64}/, "$name: no key material in the message");
}
SKIP: {
    skip 'a key file of another account: only root can make one (chown)', 1 if $> != 0;
}

done_testing();
