# docs/operations.md's "Identity keys": the lines that make the keys (the block marked
# docs-test: operations-identity-keys) run as written, with /etc/mod_bank in a directory of
# this test's own; the directory root's and enterable by www-data (0750), the keys and the
# keys file root's and owner-only; and bankctl, run as root as the document says, encrypts
# and reads a BVN record with them on an SQLite database that belongs to www-data, working
# on it as www-data (the files SQLite makes beside it stay www-data's).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::Test qw(:DEFAULT slurp spew);
use Bank::Docs qw(doc_block substitute);

my $work = $ENV{BANK_TEST_ROOT};
my $dir  = tempdir(CLEANUP => 1, DIR => $work);
my $root = $> == 0;
chmod 0755, $dir;
mkdir "$dir/etc";
chmod 0755, "$dir/etc";
my $sh = substitute(doc_block('docs/operations.md', 'operations-identity-keys'),
    'operations.md', '/etc/mod_bank' => "$dir/etc/mod_bank");
# Not as root, nothing can be given to www-data: those parts are dropped.
$sh =~ s/ -o (?:root|www-data) -g (?:root|www-data)//g unless $root;
spew("$dir/keys.sh", $sh);
my $out = `sh -e '$dir/keys.sh' 2>&1`;
is($?, 0, 'the lines run') or diag($out);

my $etc = "$dir/etc/mod_bank";
is((stat "$etc")[2] & 07777, 0750, '/etc/mod_bank is 0750');
is((stat "$etc/keys")[2] & 07777, 0700, 'keys/ is 0700');
is((stat "$etc/identity-keys.conf")[2] & 07777, 0600, 'identity-keys.conf is 0600');
SKIP: {
    skip 'as root only: the owners', 4 unless $root;
    my ($wd, $wg) = (getpwnam 'www-data')[2, 3];
    is(join(':', (stat $etc)[4, 5]), "0:$wg", '/etc/mod_bank is root:www-data');
    is((stat "$etc/$_")[4], 0, "$_ is root's")
      for qw(keys keys/k1.key identity-keys.conf);
}
for my $k (qw(k1 hash)) {
    is((stat "$etc/keys/$k.key")[2] & 07777, 0600, "$k.key is 0600");
    is((stat "$etc/keys/$k.key")[4], 0, "$k.key is root's") if $root;
    like(slurp("$etc/keys/$k.key"), qr/\A[0-9a-f]{64}\n\z/, "$k.key: 64 hex digits");
}
like(slurp("$etc/identity-keys.conf"), qr/^BankIdentityKey k1 \Q$etc\E\/keys\/k1\.key$/m,
    'identity-keys.conf names the key');

# bankctl on an SQLite database that belongs to www-data (made by migrate as www-data, as
# docs/operations.md says), run as root as the document says.
mkdir "$dir/lib";
system('chown', 'www-data:www-data', "$dir/lib") if $root;
my $ctl = "env BANK_SQL_DIR='$work/sql' $work/bin/bankctl --db 'sqlite:$dir/lib/bank.db'"
  . " --keys '$etc/identity-keys.conf'";
$out = `@{[ $root ? 'runuser -u www-data -- ' : '' ]}$ctl migrate 2>&1`;
is($?, 0, 'migrate') or diag($out);
$out = `$ctl bvn add --bvn 22233344455 --dob 1977-07-07 --first Ada --last Obi 2>&1`;
is($?, 0, 'bvn add with these keys') or diag($out);
like(`$ctl bvn show --bvn 22233344455 2>&1`, qr/"dateOfBirth":"1977-07-07"/,
    'bvn show reads it back');
my $db = do { local $/; open my $fh, '<:raw', "$dir/lib/bank.db" or die $!; <$fh> };
unlike($db, qr/22233344455|1977-07-07/, 'the database file holds neither in clear');
SKIP: {
    skip 'as root only: the owners', 1 unless $root;
    my $wd = getpwnam('www-data');
    is_deeply([grep { -e $_ && (stat $_)[4] != $wd } map { "$dir/lib/bank.db$_" } '', '-wal', '-shm'],
        [], 'bankctl run as root worked as www-data: every database file is www-data\'s');
}

done_testing();
