# Every directive is validated when httpd reads its configuration: `apache2 -t` fails on a
# bad value with a message naming the directive (docs/configuration.md).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::ConfigCheck qw(config_check);

my $dir   = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');

sub check_config { return config_check($dir, @_) }

# BankBvnProviderCredentials FILE: owner only.
sub creds_file {
    my ($name, $mode, $text) = @_;
    open my $fh, '>', "$dir/$name" or die $!;
    print $fh $text;
    close $fh;
    chmod $mode, "$dir/$name";
    return "$dir/$name";
}
creds_file('creds-ok', 0600, "app-id-123 prod_sk_secret\n");
my $open_creds = creds_file('creds-open', 0644, "app-id-123 prod_sk_secret\n");
my $one_word   = creds_file('creds-one', 0600, "prod_sk_secret\n");

{
    my ($rc_off, $out_off) = check_config("BankPasswordVerifyServerConcurrency off\n");
    is($rc_off, 0, 'BankPasswordVerifyServerConcurrency off is accepted') or diag($out_off);
    my ($rc_ci, $out_ci) = check_config("BankPasswordVerifyServerConcurrency OFF\n");
    is($rc_ci, 0, 'BankPasswordVerifyServerConcurrency OFF (any case) is accepted') or diag($out_ci);
}

my ($rc, $out) = check_config(<<"OK");
BankClientKey key-one-123 key-two-456
BankTokenLifetime 60
BankSignInThrottle 5 60
BankSignInAddressThrottle 1000000 2592000
BankSignInAccountThrottle 1 1
BankMaxDevices 10
BankBvnThrottle 1 1
BankMaxBody 65536
BankBanksMaxAge 0
BankAccountBank "Example Bank Plc"
BankAccountBankCode 50211
BankWebhookSecret secret-abcdef
BankWebhookSignature X-Partner-Signature sha256 hmac-key-123
BankWebhookPartner paystack
BankPasswordVerifyConcurrency 4
BankPasswordVerifyServerConcurrency 3
BankPasswordDummyRefresh 86400
BankPasswordVerifyMaxWait 60000
BankTokenCacheSeconds 0
BankBvnCacheSeconds 0
<Location /api/auth/sign_in>
    BankPasswordVerifyConcurrency 2 0
    BankTokenCacheSeconds 60
    BankBvnCacheSeconds 60
    SetHandler bank-sign-in
    BankMaxBody 1024
    BankTokenLifetime 120
    BankSignInAddressThrottle 50 300
    BankSignInAccountThrottle 1000000 2592000
    BankMaxDevices 3
</Location>
<Location /api/onboarding/bvn>
    SetHandler bank-bvn
    BankBvnThrottle 5 86400
    BankBvnProvider dojah
    BankBvnProviderCredentials app-id-123 prod_sk_secret
    BankBvnProviderTimeout 300
    BankBvnProviderProxy http://proxy.internal:3128
</Location>
<Location /v2/onboarding/bvn>
    SetHandler bank-bvn
    BankBvnProvider Prembly https://api.prembly.com/identitypass/
    BankBvnProviderCredentials $dir/creds-ok
</Location>
<Location /v3/onboarding/bvn>
    SetHandler bank-bvn
    BankBvnProvider prembly
    BankBvnProviderCredentials file:$dir/creds-ok
</Location>
<Location /test/onboarding/bvn>
    SetHandler bank-bvn
    BankBvnProvider dojah http://127.0.0.1:8080/fake
    BankBvnProviderTimeout 1
</Location>
<Location /t/onboarding/bvn>
    SetHandler bank-bvn
    BankBvnProvider table
    BankBvnProviderProxy none
</Location>
OK
is($rc, 0, 'a valid configuration passes apache2 -t') or diag($out);

# Every limit at its edge is accepted: docs/configuration.md gives these ranges.
my $bank100 = "\x{c3}\x{89}" x 100;    # 100 characters (200 bytes of UTF-8)
open my $kf, '>', "$dir/partner.key" or die $!;
print $kf "k3y from the partner's file\n" =~ s/ /-/gr;
close $kf;
chmod 0600, "$dir/partner.key";
open $kf, '>', "$dir/open.key" or die $!;
print $kf "readable-by-all-123\n";
close $kf;
chmod 0644, "$dir/open.key";
open $kf, '>', "$dir/spaced.key" or die $!;
print $kf "has a space 12345\n";
close $kf;
chmod 0600, "$dir/spaced.key";

my @good = (
    ['BankTokenLifetime 31536000',              'the longest token lifetime'],
    ['BankMaxDevices 1',                        'one device per customer'],
    ['BankMaxDevices 1000',                     'the most devices per customer'],
    ['BankMaxBody 2',                           'the smallest body cap'],
    ['BankMaxBody 16777216',                    'the largest body cap'],
    ['BankBanksMaxAge 31536000',                'the longest bank-list max-age'],
    ['BankSignInThrottle 1 1',                  'the smallest throttle'],
    ['BankSignInThrottle 1000000 2592000',      'the largest throttle'],
    ["BankAccountBank \"$bank100\"",            'a bank name of 100 characters'],
    ['BankAccountBankCode 000',                 'a 3-digit code'],
    ['BankAccountBankCode 123456',              'a 6-digit code'],
    ['BankWebhookPartner ' . ('p' x 64),        'a partner name of 64 characters'],
    ['BankClientKey 12345678',                  'a client key of 8 characters'],
    ['BankWebhookSignature X-Sig sha256 "k3y!#%&*()[]{};:\\"\',.<>/?|`~^-"',
        'an HMAC key of any printable characters, quoted'],
    ['BankWebhookSignature X-Sig sha512 12345678', 'an HMAC key of 8 characters'],
    ["BankWebhookSignature !#\$%&'*+-.^_`|~Sig sha256 key-12345678",
        'a header name of every token character'],
    ['BankWebhookSignature ' . ('H' x 64) . ' sha256 key-12345678', 'a header name of 64 characters'],
    ["BankWebhookSignature X-Sig sha512 file:$dir/partner.key", 'an HMAC key read from a file'],
    # the commit turn of payment notices is httpd's mutex type bank-webhook (docs/api.md)
    ["Mutex file:$dir bank-webhook",            'the Mutex directive for bank-webhook'],
    ['Mutex default bank-webhook',              'the default mechanism for bank-webhook'],
);
for my $g (@good) {
    my ($line, $why) = @$g;
    my ($rc2, $out2) = check_config($line);
    is($rc2, 0, "accepted: $why") or diag("$line\n$out2");
}

my @bad = (
    ['BankTokenLifetime 31536001',         'BankTokenLifetime', 'above the maximum'],
    ['BankMaxDevices 0',                   'BankMaxDevices',    'no device at all'],
    ['BankMaxDevices 1001',                'BankMaxDevices',    'above the maximum'],
    ['BankMaxDevices ten',                 'BankMaxDevices',    'not a number'],
    ['BankMaxBody 1',                      'BankMaxBody',       'below the minimum'],
    ['BankMaxBody 16777217',               'BankMaxBody',       'above the maximum'],
    ['BankBanksMaxAge 31536001',           'BankBanksMaxAge',   'above the maximum'],
    ['BankBanksMaxAge -1',                 'BankBanksMaxAge',   'negative'],
    ['BankSignInThrottle 1000001 60',      'BankSignInThrottle', 'too many attempts'],
    ['BankSignInThrottle 5 2592001',       'BankSignInThrottle', 'window over 30 days'],
    ['BankSignInThrottle 5 60 7',          'BankSignInThrottle', 'three arguments'],
    ["BankAccountBank \"${bank100}x\"",    'BankAccountBank',   'a name of 101 characters'],
    ["BankAccountBank \"tab\tname\"",      'BankAccountBank',   'a control character'],
    ['BankAccountBankCode 1234',           'BankAccountBankCode', 'four digits'],
    ['BankWebhookPartner ' . ('p' x 65),   'BankWebhookPartner', 'a name of 65 characters'],
    ['BankWebhookPartner pay.stack',       'BankWebhookPartner', 'a dot'],
    ['BankWebhookSignature X-Sig sha256 1234567',     'BankWebhookSignature', 'a key of 7 characters'],
    ['BankWebhookSignature X-Sig sha256 "key with space"', 'BankWebhookSignature', 'a space in the key'],
    ["BankWebhookSignature X-Sig sha256 \"key-\x{c3}\x{89}-123\"", 'BankWebhookSignature',
        'a non-ASCII key'],
    ['BankWebhookSignature X:Sig sha256 key-12345678', 'BankWebhookSignature', 'a colon in the header'],
    ['BankWebhookSignature X@Sig sha256 key-12345678', 'BankWebhookSignature', 'an @ in the header'],
    ['BankWebhookSignature ' . ('H' x 65) . ' sha256 key-12345678', 'BankWebhookSignature',
        'a header name of 65 characters'],
    ["BankWebhookSignature X-Sig sha256 file:$dir/missing.key", 'BankWebhookSignature',
        'a missing key file'],
    ["BankWebhookSignature X-Sig sha256 file:$dir/open.key", 'BankWebhookSignature',
        'a key file others can read'],
    ["BankWebhookSignature X-Sig sha256 file:$dir/spaced.key", 'BankWebhookSignature',
        'a space in the key file'],
    ["BankWebhookSignature X-Sig sha256 file:$dir", 'BankWebhookSignature',
        'a directory as the key file'],

    ['BankTokenLifetime 59',               'BankTokenLifetime', 'below the minimum'],
    ['BankTokenLifetime 1h',               'BankTokenLifetime', 'not a number'],
    ['BankTokenLifetime -5',               'BankTokenLifetime', 'negative'],
    ['BankMaxBody 0',                      'BankMaxBody',       'zero'],
    ['BankMaxBody 99999999999999999999',   'BankMaxBody',       'overflow'],
    ['BankBanksMaxAge x',                  'BankBanksMaxAge',   'not a number'],
    ['BankSignInThrottle 0 60',            'BankSignInThrottle', 'zero attempts'],
    ['BankSignInThrottle 5 0',             'BankSignInThrottle', 'zero window'],
    ['BankSignInThrottle 5',               'BankSignInThrottle', 'one argument'],
    ['BankSignInAddressThrottle 0 300',    'BankSignInAddressThrottle', 'zero attempts'],
    ['BankSignInAddressThrottle 50 0',     'BankSignInAddressThrottle', 'zero window'],
    ['BankSignInAddressThrottle 1000001 300', 'BankSignInAddressThrottle', 'over 1000000 attempts'],
    ['BankSignInAddressThrottle 50 2592001', 'BankSignInAddressThrottle', 'window over 30 days'],
    ['BankSignInAccountThrottle 0 3600',   'BankSignInAccountThrottle', 'zero attempts'],
    ['BankSignInAccountThrottle 50 0',     'BankSignInAccountThrottle', 'zero window'],
    ['BankSignInAccountThrottle 1000001 3600', 'BankSignInAccountThrottle', 'over 1000000 attempts'],
    ['BankSignInAccountThrottle 50 2592001', 'BankSignInAccountThrottle', 'window over 30 days'],
    ['BankSignInAccountThrottle 50',       'BankSignInAccountThrottle', 'one argument'],
    ['BankSignInAddressThrottle 50',       'BankSignInAddressThrottle', 'one argument'],
    ['BankSignInAddressThrottle x 300',    'BankSignInAddressThrottle', 'not a number'],
    ['BankBvnThrottle 0 86400',            'BankBvnThrottle',   'zero attempts'],
    ['BankBvnThrottle 5 0',                'BankBvnThrottle',   'zero window'],
    ['BankBvnThrottle 5 -1',               'BankBvnThrottle',   'negative window'],
    ['BankBvnThrottle 1000001 86400',      'BankBvnThrottle',   'over 1000000 attempts'],
    ['BankBvnThrottle 5 2592001',          'BankBvnThrottle',   'window over 30 days'],
    ['BankBvnThrottle 5',                  'BankBvnThrottle',   'one argument'],
    ['BankBvnThrottle 5 1d',               'BankBvnThrottle',   'unit suffix'],
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
    ['BankBvnProvider nibss',              'BankBvnProvider',   'unknown provider'],
    ['BankBvnProvider dojah http://api.dojah.io', 'BankBvnProvider', 'plain http off loopback'],
    ['BankBvnProvider dojah api.dojah.io', 'BankBvnProvider',   'not an absolute URL'],
    ['BankBvnProvider dojah https://u:p@api.dojah.io', 'BankBvnProvider', 'user info in the URL'],
    ['BankBvnProvider table https://api.dojah.io', 'BankBvnProvider', 'a URL for the table'],
    ['BankBvnProvider',                    'BankBvnProvider',   'no argument'],
    ['BankBvnProviderCredentials "app id" secret-1', 'BankBvnProviderCredentials', 'space in app id'],
    ["BankBvnProviderCredentials $open_creds", 'BankBvnProviderCredentials', 'file others may read'],
    ["BankBvnProviderCredentials $one_word", 'BankBvnProviderCredentials', 'file with one word'],
    ["BankBvnProviderCredentials $dir/missing", 'BankBvnProviderCredentials', 'no such file'],
    ['BankBvnProviderTimeout 0',           'BankBvnProviderTimeout', 'zero'],
    ['BankBvnProviderTimeout 301',         'BankBvnProviderTimeout', 'over 300'],
    ['BankBvnProviderTimeout 5s',          'BankBvnProviderTimeout', 'unit suffix'],
    ['BankBvnProviderProxy proxy:3128',   'BankBvnProviderProxy', 'proxy without a scheme'],
    ['BankBvnProviderProxy ftp://proxy:21', 'BankBvnProviderProxy', 'proxy of an unknown scheme'],
    ['BankBvnProviderProxy http://proxy:3128/x?y', 'BankBvnProviderProxy', 'proxy with a path'],
    ['BankBvnProviderProxy',               'BankBvnProviderProxy', 'proxy: no argument'],
    ['BankTokenCacheSeconds 61',           'BankTokenCacheSeconds', 'over 60'],
    ['BankTokenCacheSeconds -1',           'BankTokenCacheSeconds', 'negative'],
    ['BankTokenCacheSeconds 5s',           'BankTokenCacheSeconds', 'not a number'],
    ['BankBvnCacheSeconds 61',             'BankBvnCacheSeconds', 'over 60'],
    ['BankBvnCacheSeconds -1',             'BankBvnCacheSeconds', 'negative'],
    ['BankBvnCacheSeconds 5s',             'BankBvnCacheSeconds', 'not a number'],
    ['BankBvnCacheSeconds',                'BankBvnCacheSeconds', 'no argument'],
    ['BankPasswordVerifyConcurrency 0',    'BankPasswordVerifyConcurrency', 'zero verifications'],
    ['BankPasswordVerifyConcurrency 257',  'BankPasswordVerifyConcurrency', 'over 256'],
    ['BankPasswordVerifyConcurrency two',  'BankPasswordVerifyConcurrency', 'not a number'],
    ['BankPasswordVerifyConcurrency 2 -1', 'BankPasswordVerifyConcurrency', 'negative waiting'],
    ['BankPasswordVerifyConcurrency 2 100001', 'BankPasswordVerifyConcurrency', 'too many waiting'],
    ['BankPasswordVerifyConcurrency 2 4 8', 'BankPasswordVerifyConcurrency', 'three arguments'],
    ['BankPasswordVerifyServerConcurrency 0', 'BankPasswordVerifyServerConcurrency', 'zero (off is the word)'],
    ['BankPasswordVerifyMaxWait 0',       'BankPasswordVerifyMaxWait', 'no wait at all'],
    ['BankPasswordVerifyMaxWait 60001',   'BankPasswordVerifyMaxWait', 'over a minute'],
    ['BankPasswordVerifyMaxWait 1s',      'BankPasswordVerifyMaxWait', 'unit suffix on the wait'],
    ['BankPasswordVerifyServerConcurrency 257', 'BankPasswordVerifyServerConcurrency', 'over 256'],
    ['BankPasswordVerifyServerConcurrency 2x', 'BankPasswordVerifyServerConcurrency', 'not a number'],
    ['BankPasswordVerifyServerConcurrency -1', 'BankPasswordVerifyServerConcurrency', 'negative'],
    ["<Location /x>\nBankPasswordVerifyServerConcurrency 2\n</Location>",
        'BankPasswordVerifyServerConcurrency', 'inside a Location (server-wide only)'],
    ["<VirtualHost 127.0.0.1:1>\nBankPasswordVerifyServerConcurrency 2\n</VirtualHost>",
        'BankPasswordVerifyServerConcurrency', 'inside a virtual host (server-wide only)'],
    ['BankPasswordDummyRefresh 0', 'BankPasswordDummyRefresh', 'zero'],
    ['BankPasswordDummyRefresh 86401', 'BankPasswordDummyRefresh', 'over a day'],
    ['BankPasswordDummyRefresh 5m', 'BankPasswordDummyRefresh', 'not a number'],
    ['BankPasswordDummyRefresh', 'BankPasswordDummyRefresh', 'no argument'],
    ["<Location /x>\nBankPasswordDummyRefresh 60\n</Location>",
        'BankPasswordDummyRefresh', 'inside a Location (server-wide only)'],
    ["<VirtualHost 127.0.0.1:1>\nBankPasswordDummyRefresh 60\n</VirtualHost>",
        'BankPasswordDummyRefresh', 'inside a virtual host (server-wide only)'],
);
for my $b (@bad) {
    my ($line, $name, $why) = @$b;
    my ($rc2, $out2) = check_config($line);
    isnt($rc2, 0, "$name rejected: $why");
    like($out2, qr/\Q$name\E/, "$name: the message names the directive ($why)");
    unlike($out2, qr/prod_sk_secret/, "$name: the message never shows a secret ($why)");
}

done_testing();
