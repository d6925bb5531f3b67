# Every directive is validated when httpd reads its configuration: `apache2 -t` fails on a
# bad value with a message naming the directive (docs/configuration.md).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);

my $httpd = $ENV{APACHE_TEST_HTTPD} || '/usr/sbin/apache2';
my $dir   = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');

sub check_config {
    my ($body) = @_;
    my $conf = "$dir/httpd.conf";
    open my $fh, '>', $conf or die $!;
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
    close $fh;
    my $out = `$httpd -t -f $conf 2>&1`;
    return ($? >> 8, $out);
}

my ($rc, $out) = check_config(<<'OK');
BankClientKey key-one-123 key-two-456
BankTokenLifetime 60
BankSignInThrottle 5 60
BankMaxBody 65536
BankBanksMaxAge 0
BankAccountBank "Example Bank Plc"
BankAccountBankCode 50211
BankWebhookSecret secret-abcdef
BankWebhookSignature X-Partner-Signature sha256 hmac-key-123
BankWebhookPartner paystack
BankPasswordVerifyConcurrency 4
BankTokenCacheSeconds 0
<Location /api/auth/sign_in>
    BankPasswordVerifyConcurrency 2 0
    BankTokenCacheSeconds 60
    SetHandler bank-sign-in
    BankMaxBody 1024
    BankTokenLifetime 120
</Location>
OK
is($rc, 0, 'a valid configuration passes apache2 -t') or diag($out);

my @bad = (
    ['BankTokenLifetime 59',               'BankTokenLifetime', 'below the minimum'],
    ['BankTokenLifetime 1h',               'BankTokenLifetime', 'not a number'],
    ['BankTokenLifetime -5',               'BankTokenLifetime', 'negative'],
    ['BankMaxBody 0',                      'BankMaxBody',       'zero'],
    ['BankMaxBody 99999999999999999999',   'BankMaxBody',       'overflow'],
    ['BankBanksMaxAge x',                  'BankBanksMaxAge',   'not a number'],
    ['BankSignInThrottle 0 60',            'BankSignInThrottle', 'zero attempts'],
    ['BankSignInThrottle 5 0',             'BankSignInThrottle', 'zero window'],
    ['BankSignInThrottle 5',               'BankSignInThrottle', 'one argument'],
    ['BankAccountBankCode 12',             'BankAccountBankCode', 'two digits'],
    ['BankAccountBankCode 0A1',            'BankAccountBankCode', 'letters'],
    ['BankAccountBank ""',                 'BankAccountBank',   'empty name'],
    ['BankClientKey short',                'BankClientKey',     'too short'],
    ['BankClientKey "has space 12345"',    'BankClientKey',     'space in key'],
    ['BankWebhookSecret "bad\\"quote123"', 'BankWebhookSecret', 'quote in secret'],
    ['BankWebhookSignature X-Sig md5 key-12345678', 'BankWebhookSignature', 'unknown algorithm'],
    ['BankWebhookSignature "X Sig" sha256 key-12345678', 'BankWebhookSignature', 'bad header'],
    ['BankWebhookSignature X-Sig sha256',  'BankWebhookSignature', 'missing key'],
    ['BankWebhookPartner "pay stack"',     'BankWebhookPartner', 'space in partner'],
    ['BankTokenCacheSeconds 61',           'BankTokenCacheSeconds', 'over 60'],
    ['BankTokenCacheSeconds -1',           'BankTokenCacheSeconds', 'negative'],
    ['BankTokenCacheSeconds 5s',           'BankTokenCacheSeconds', 'not a number'],
    ['BankPasswordVerifyConcurrency 0',    'BankPasswordVerifyConcurrency', 'zero verifications'],
    ['BankPasswordVerifyConcurrency 257',  'BankPasswordVerifyConcurrency', 'over 256'],
    ['BankPasswordVerifyConcurrency two',  'BankPasswordVerifyConcurrency', 'not a number'],
    ['BankPasswordVerifyConcurrency 2 -1', 'BankPasswordVerifyConcurrency', 'negative waiting'],
    ['BankPasswordVerifyConcurrency 2 100001', 'BankPasswordVerifyConcurrency', 'too many waiting'],
    ['BankPasswordVerifyConcurrency 2 4 8', 'BankPasswordVerifyConcurrency', 'three arguments'],
);
for my $b (@bad) {
    my ($line, $name, $why) = @$b;
    my ($rc2, $out2) = check_config($line);
    isnt($rc2, 0, "$name rejected: $why");
    like($out2, qr/\Q$name\E/, "$name: the message names the directive ($why)");
}

done_testing();
