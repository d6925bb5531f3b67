# make install and make uninstall (README): install puts the module, bankctl, the SQL files
# and the Locations under DESTDIR; uninstall removes every one of them again, and refuses
# while README's conf-available/mod_bank.conf is enabled (apache2 would no longer start).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Find ();
use File::Temp qw(tempdir);

my $dest = tempdir(CLEANUP => 1);
sub files {
    my @f;
    File::Find::find({ wanted => sub { push @f, $File::Find::name if -f $_ || -l $_ },
        no_chdir => 1 }, $dest);
    return sort map { substr $_, length $dest } @f;
}

my $out = `make -s install DESTDIR=$dest 2>&1`;
is($?, 0, 'make install DESTDIR=...') or diag($out);
my @installed = files();
my $libexec = `apxs -q LIBEXECDIR`;
chomp $libexec;
ok((grep { $_ eq "$libexec/mod_bank.so" } @installed), 'the module');
ok((grep { $_ eq '/usr/local/bin/bankctl' } @installed), 'bankctl');
ok((grep { $_ eq '/etc/apache2/mod_bank/bank.conf' } @installed), 'the Locations');
ok((grep { m{^/usr/local/share/mod_bank/sql/sqlite/001_schema\.sql$} } @installed), 'the SQL files');

mkdir "$dest/etc/apache2/conf-enabled";
symlink '../conf-available/mod_bank.conf', "$dest/etc/apache2/conf-enabled/mod_bank.conf";
$out = `make -s uninstall DESTDIR=$dest 2>&1`;
isnt($?, 0, 'make uninstall refuses while mod_bank.conf is enabled');
like($out, qr/a2disconf mod_bank/, 'and says what to do');
unlink "$dest/etc/apache2/conf-enabled/mod_bank.conf";

$out = `make -s uninstall DESTDIR=$dest 2>&1`;
is($?, 0, 'make uninstall') or diag($out);
is(join(' ', files()), '', 'nothing make install put there is left');

done_testing();
