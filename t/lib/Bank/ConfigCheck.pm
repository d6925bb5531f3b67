package Bank::ConfigCheck;
# `apache2 -t` on a minimal configuration that loads mod_bank (and mod_dbd), with the given
# directives after it: (exit code, output). For the directive tests (t/config/*.t) and the
# documents' configuration blocks (t/api/operations/docs_*.t).
#
#   my ($rc, $out) = config_check($dir, "BankMaxBody 1\n");
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use Bank::Test qw(httpd_binary modules_dir);

our @EXPORT_OK = qw(config_check);

sub config_check {
    my ($dir, $body) = @_;
    my $httpd   = httpd_binary();
    my $modules = modules_dir();
    my $conf  = "$dir/httpd.conf";
    open my $fh, '>', $conf or die "$conf: $!";
    print $fh <<"CONF";
ServerRoot $dir
ServerName localhost
Listen 127.0.0.1:1
PidFile $dir/httpd.pid
ErrorLog $dir/error_log
LoadModule mpm_event_module $modules/mod_mpm_event.so
LoadModule authz_core_module $modules/mod_authz_core.so
LoadModule dbd_module $modules/mod_dbd.so
LoadModule bank_module $ENV{BANK_MODULE}
$body
CONF
    close $fh or die "$conf: $!";
    my $out = `$httpd -t -f $conf 2>&1`;
    return ($? >> 8, $out);
}

1;
