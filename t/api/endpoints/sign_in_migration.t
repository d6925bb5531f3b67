# docs/migration.md, recipe 2a, run as written: users and tokens exported from an AdonisJS
# (Lucid) database as CSV are imported into the test database; the customers sign in with
# their old passwords and the tokens the old service issued keep working.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Compress::Zlib qw(crc32);
use Digest::SHA qw(sha256_hex);
use File::Temp qw(tempdir);
use MIME::Base64 qw(encode_base64url);
use Bank::Test;

plan skip_all => 'recipe 2a is for SQLite' unless $ENV{BANK_DBDRIVER} eq 'sqlite3';

my $doc = do { local (@ARGV, $/) = 'docs/migration.md'; <> };
my ($sql) = $doc =~ /<!-- migration-test: sqlite -->\n```sql\n(.*?)```/s;
ok($sql, 'docs/migration.md has recipe 2a') or BAIL_OUT('no recipe');

my $dir = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT});
chmod 0777, $dir;    # sqlite3 runs as the database's owner and writes lucid-import.db here

sub csv { return join(',', map { !defined $_ ? '' : /[",\n]/ ? do { (my $q = $_) =~ s/"/""/g; qq("$q") } : $_ } @_) . "\n" }

# An AdonisJS v6 access token: oat_ + base64url(id) . base64url(40 characters + CRC-32).
sub adonis_token {
    my ($id) = @_;
    my @alpha = ('A' .. 'Z', 'a' .. 'z', '0' .. '9', '-', '_');
    my $seed = join '', map { $alpha[rand @alpha] } 1 .. 40;
    my $secret = $seed . crc32($seed);
    return ('oat_' . encode_base64url($id) . '.' . encode_base64url($secret), sha256_hex($secret));
}

my $u = unique();
my $uuid = sprintf '%08x-aaaa-4bbb-8ccc-%012d', $$, substr($u, -12);
chomp(my $ht = `htpasswd -nbB -C 5 user htpasswd-pw`);
$ht =~ s/^user://;
$ht =~ s/\s+\z//;
my @users = (
    # id, first, last, full_name, email, password, phone, email_verified_at, created, updated
    [101, 'Ada', 'Obi', undef, "Ada.$u\@Example.com",
        '$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$IDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit8aQeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA',
        '+2348011111111', '2024-03-01 09:00:00.000', '2024-02-01 09:30:15.500', '2024-03-01 10:00:00.000'],
    [102, undef, undef, 'Bola Ade Johnson', "bola.$u\@example.com",
        '$bcrypt$v=98$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ', undef, undef,
        '2024-02-02 11:00:00.250', undef],
    [$uuid, 'Chi', 'Eze', undef, "chi.$u\@example.com", $ht, '+2348033333333', 'true',
        '2024-02-03 12:00:00.000', '2024-02-03 12:00:00.000'],
);
my @pw = ('password', 'password', 'htpasswd-pw');
my $base = 900000 + ($$ % 1000) * 10;
my ($tok1, $hash1) = adonis_token($base + 1);
my ($tok2, $hash2) = adonis_token($base + 2);
my ($tok3, $hash3) = adonis_token($base + 3);
my @tokens = (
    [$base + 1, 101, 'auth_token', undef, $hash1, '["*"]', '2024-03-01 10:00:00.000',
        '2024-03-01 10:00:00.000', undef, '2099-01-01 00:00:00.000'],
    [$base + 2, $uuid, 'auth_token', 'phone', $hash2, '["banks:read"]', '2024-03-01 10:00:00.000',
        '2024-03-01 10:00:00.000', '2024-03-02 08:00:00.000', undef],
    [$base + 3, 102, 'auth_token', undef, $hash3, '["*"]', '2024-01-01 10:00:00.000',
        '2024-01-01 10:00:00.000', undef, '2024-01-02 10:00:00.000'],    # expired
);
open my $fh, '>', "$dir/users.csv" or die $!;
print $fh csv(qw(id first_name last_name full_name email password phone email_verified_at created_at updated_at));
print $fh csv(@$_) for @users;
close $fh;
open $fh, '>', "$dir/auth_access_tokens.csv" or die $!;
print $fh csv(qw(id tokenable_id type name hash abilities created_at updated_at last_used_at expires_at));
print $fh csv(@$_) for @tokens;
close $fh;
open $fh, '>', "$dir/import-lucid.sql" or die $!;
print $fh $sql;
close $fh;
chmod 0644, map { "$dir/$_" } qw(users.csv auth_access_tokens.csv import-lucid.sql);

my $runas = $> == 0 ? 'runuser -u nobody -- ' : '';
my $out = `cd $dir && ${runas}sqlite3 -cmd '.timeout 10000' $ENV{BANK_DBPARAMS} < import-lucid.sql 2>&1`;
is($?, 0, 'recipe 2a runs') or diag($out);

# --- customers ------------------------------------------------------------------------------
my %id;
for my $i (0 .. $#users) {
    my $email = $users[$i][4];
    my $r = json_request('POST', '/auth/sign_in',
        headers => { Authorization => 'Bearer test-client-key-1' },
        body    => { email => lc $email, password => $pw[$i], deviceToken => 'moved' });
    is($r->code, 200, "moved customer $i signs in with the old password") or diag($r->content);
    my $c = (decode_body($r) || {})->{body}{customer} || {};
    $id{$i} = $c->{customerId};
    is($c->{email}, $email, "moved customer $i: e-mail as stored");
}
like($id{0}, qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    'an integer id becomes a UUID v4');
isnt($id{0}, $id{1}, 'each user a UUID of its own');
is($id{2}, $uuid, 'a UUID id is kept');
my $row = sub { db_value("SELECT first_name || '|' || last_name || '|' || phone || '|' || email_verified"
      . " || '|' || created_at || '|' || updated_at FROM customers WHERE id = '$_[0]'") };
is($row->($id{0}), 'Ada|Obi|+2348011111111|1|2024-02-01T09:30:15.500Z|2024-03-01T10:00:00.000Z',
    'columns mapped, email_verified_at set -> verified, timestamps as the module writes them');
is($row->($id{1}), 'Bola|Ade Johnson||0|2024-02-02T11:00:00.250Z|2024-02-02T11:00:00.250Z',
    'full_name split at the first space, no phone, unverified, updated_at from created_at');
is($row->($id{2}), 'Chi|Eze|+2348033333333|1|2024-02-03T12:00:00.000Z|2024-02-03T12:00:00.000Z',
    'a boolean "true" in email_verified_at -> verified');

# --- tokens ---------------------------------------------------------------------------------
is(db_value("SELECT tokenable_id || '|' || name || '|' || abilities || '|' || last_used_at"
      . " FROM auth_access_tokens WHERE id = " . ($base + 2)),
    "$uuid|phone|[\"banks:read\"]|2024-03-02T08:00:00.000Z", 'token columns kept');
is(db_value("SELECT count(*) FROM auth_access_tokens WHERE hash = '$hash3'"), 0,
    'expired tokens are left behind');
my $banks = sub { Apache::TestRequest::GET('/misc/payment_banks', Authorization => "Bearer $_[0]")->code };
is($banks->($tok1), 200, 'a token the old service issued works');
is($banks->($tok2), 200, 'a token with its own abilities works');
is($banks->($tok3), 401, 'so the expired token stays refused');
my $next = decode_body(json_request('POST', '/auth/sign_in',
    headers => { Authorization => 'Bearer test-client-key-1' },
    body => { email => $users[0][4], password => 'password', deviceToken => 'moved' }))->{body}{token}{token};
my ($nid) = $next =~ /^oat_([^.]+)\./;
cmp_ok(MIME::Base64::decode_base64url($nid), '>', $base + 2, 'new tokens continue after the moved ids');

done_testing();
