# One version, in include/bank_version.h: bankctl --version, the Debian changelog's first
# entry, CHANGELOG.md's newest section (with upgrade steps), the OpenAPI document; written in
# no other source file. httpd's Server header carries no mod_bank component. The man page
# names every option bankctl --help lists.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Test qw(slurp);

my ($version) = slurp('include/bank_version.h') =~ /^#define BANK_VERSION "(\d+\.\d+\.\d+)"$/m;
ok($version, "BANK_VERSION in include/bank_version.h ($version)");

# The newest schema this build knows is the newest migration of each driver.
my ($schema) = slurp('include/bank_version.h') =~ /^#define BANK_SCHEMA_VERSION (\d+)$/m;
ok($schema, "BANK_SCHEMA_VERSION in include/bank_version.h ($schema)");
for my $driver (qw(postgresql sqlite)) {
    my ($newest) = sort { $b <=> $a } map { m{/(\d+)_[^/]*\.sql$} ? $1 + 0 : () } glob("sql/$driver/*.sql");
    is($newest, $schema, "sql/$driver: its newest migration is BANK_SCHEMA_VERSION");
}

my $ctl = "$ENV{BANK_TEST_ROOT}/bin/bankctl";
is(`$ctl --version`, "bankctl (mod_bank) $version\n", 'bankctl --version');
is($?, 0, 'bankctl --version: exit 0');

my ($deb) = slurp('packaging/deb/changelog') =~ /\A\S+ \(([^)]+)\)/;
is($deb, $version, 'packaging/deb/changelog starts with this version');
my $changes = slurp('CHANGELOG.md');
my ($first) = $changes =~ /^## (\S+)$/m;
is($first, $version, 'CHANGELOG.md: the newest section is this version');
my ($section) = $changes =~ /^## \Q$version\E\n(.*?)(?=^## |\z)/ms;
like($section // '', qr/^### Upgrading from /m, 'CHANGELOG.md: upgrade steps for this version');
like(slurp('docs/openapi.yaml'), qr/^  version: \Q$version\E$/m, 'openapi.yaml: info.version');

my @copies = grep { slurp($_) =~ /"\Q$version\E"/ }
  grep { $_ ne 'include/bank_version.h' } (glob('mod_bank/*.[ch]'), glob('mod_bank/bankctl/*.[ch]'),
    glob('include/*.h'));
is(join(' ', @copies), '', 'the version is written in no other source file');

my $res = json_request(GET => '/health');
unlike($res->header('Server') // '', qr/bank/i, 'the Server header has no mod_bank component');
like($res->header('Server') // '', qr/^Apache/, 'the Server header is httpd\'s own');

my $man = slurp('packaging/deb/bankctl.1') =~ s/\\-/-/gr =~ s/\\f[BIRP]//gr;
my %opts = map { $_ => 1 } `$ctl --help` =~ /(?<![\w-])(--[a-z][a-z-]*)/g;
for my $o (sort keys %opts) {
    like($man, qr/(?<![\w-])\Q$o\E(?![\w-])/, "bankctl.1 names $o");
}
like($man, qr/^\.B bankctl check$/m, 'bankctl.1: check');

done_testing();
