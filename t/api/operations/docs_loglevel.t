# The configurations we ship keep httpd's own LogLevel at warn, with mod_bank's level set
# apart (`bank:LEVEL`): at trace1 to trace8 httpd's core logs whole request headers, the
# Authorization header with client keys, webhook secrets and tokens included
# (docs/security.md). Every LogLevel line of conf/, packaging/ and of the configuration
# blocks of README.md and docs/ is read.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Bank::Test qw(slurp);

my @files = (glob('conf/*.conf conf/*.conf.in packaging/deb/*.conf'));
my @docs  = ('README.md', glob('docs/*.md'));
my @lines;    # [where, line]
for my $f (@files) {
    my $n = 0;
    for (split /\n/, slurp($f)) {
        $n++;
        push @lines, ["$f:$n", $_] if /^\s*LogLevel\b/i;
    }
}
for my $f (@docs) {
    my ($in, $n) = (0, 0);
    for (split /\n/, slurp($f)) {
        $n++;
        if (/^```/) { $in = !$in; next }
        push @lines, ["$f:$n", $_] if $in && /^\s*LogLevel\b/i;
    }
}
cmp_ok(scalar(grep { $_->[0] =~ /^conf\/dev-httpd/ } @lines), '>=', 1,
    'the dev server\'s configuration sets LogLevel');
cmp_ok(scalar(grep { $_->[0] =~ /^packaging/ } @lines), '>=', 1,
    'the packaged site sets LogLevel');
cmp_ok(scalar(grep { $_->[0] =~ /^docs\/deployment/ } @lines), '>=', 1,
    'the production configuration of docs/deployment.md sets LogLevel');
for (@lines) {
    my ($where, $line) = @$_;
    my (undef, $global, @modules) = split ' ', $line;
    is($global, 'warn', "$where: httpd's own level is warn ($line)");
    is(scalar(grep { !/^bank:(?:emerg|alert|crit|error|warn|notice|info|debug|trace[1-8])$/ } @modules),
        0, "$where: any other level is mod_bank's own (bank:LEVEL)");
}

my $security = slurp('docs/security.md');
like($security, qr/httpd's own trace levels[^\n]*\n?[^\n]*request headers/i,
    'docs/security.md says httpd\'s own trace levels log request headers');
like($security, qr/Authorization/, 'docs/security.md names the Authorization header');

done_testing();
