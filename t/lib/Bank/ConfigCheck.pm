package Bank::ConfigCheck;
# `apache2 -t` on a minimal configuration that loads mod_bank (and mod_dbd), with the given
# directives after it: (exit code, output). For the directive tests (t/config/*.t) and the
# documents' configuration blocks (t/api/docs_*.t).
#
#   my ($rc, $out) = config_check($dir, "BankMaxBody 1\n");
use strict;
use warnings FATAL => 'all';
use Exporter 'import';

our @EXPORT_OK = qw(config_check);

sub config_check {
    my ($dir, $body) = @_;
    my $httpd = $ENV{APACHE_TEST_HTTPD} || '/usr/sbin/apache2';
    my $conf  = "$dir/httpd.conf";
    open my $fh, '>', $conf or die "$conf: $!";
    print $fh <<"CONF";
ServerRoot $dir
ServerName localhost
Listen 127.0.0.1:1
PidFile $dir/httpd.pid
ErrorLog $dir/error_log
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule dbd_module /usr/lib/apache2/modules/mod_dbd.so
LoadModule bank_module $ENV{BANK_MODULE}
$body
CONF
    close $fh or die "$conf: $!";
    my $out = `$httpd -t -f $conf 2>&1`;
    return ($? >> 8, $out);
}

1;
