# The push directives are checked when httpd reads its configuration: `apache2 -t` fails on a
# bad value, a bad or readable-by-others service-account file, BankPush without
# BankPushCredentials, or a push directive outside the server config, with a message naming
# the directive and never the key (docs/configuration.md, "Push notifications").
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::ConfigCheck qw(config_check);
use JSON::PP ();

my $dir   = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
my $top   = Apache::Test::vars('top_dir');

sub check_config { return config_check($dir, @_) }

my $pem = do { local (@ARGV, $/) = "$top/t/fake/push_test_key.pem"; <> };
my ($pem_line) = $pem =~ /\n(.{40})/;

sub sa_file {
    my ($name, $mode, $obj) = @_;
    open my $fh, '>', "$dir/$name" or die $!;
    print $fh ref $obj ? JSON::PP->new->encode($obj) : $obj;
    close $fh;
    chmod $mode, "$dir/$name";
    return "$dir/$name";
}
my %sa = (type => 'service_account', client_email => 'push@p.iam.gserviceaccount.com',
    private_key => $pem, token_uri => 'https://oauth2.googleapis.com/token');
my $ok_file = sa_file('sa-ok.json', 0600, \%sa);

my @good = (
    ["BankPush fcm my-bank-app\nBankPushCredentials $ok_file", 'project and credentials'],
    ["BankPush FCM my-bank-app https://fcm.googleapis.com/\nBankPushCredentials $ok_file",
        'a base URL (https), any case of fcm'],
    ["BankPush fcm p http://127.0.0.1:9\nBankPushCredentials $ok_file", 'http:// to loopback'],
    ["BankPush fcm p\nBankPushCredentials sa-ok.json", 'a path relative to ServerRoot'],
    ["BankPush fcm p\nBankPushCredentials $ok_file\nBankPushAttempts 1\nBankPushTimeout 1",
        'the smallest attempts and timeout'],
    ["BankPush fcm p\nBankPushCredentials $ok_file\nBankPushAttempts 100\nBankPushTimeout 300",
        'the largest attempts and timeout'],
    ["BankPushCredentials " . sa_file('sa-local.json', 0600,
        { %sa, token_uri => 'http://127.0.0.1:9/token' }), 'a token_uri on loopback'],
    ['BankPushAttempts 5', 'BankPushAttempts alone (push off)'],
    ["BankPush fcm p\nBankPushCredentials $ok_file\nBankPushSpareCPU 0", 'BankPushSpareCPU 0 (never held back)'],
    ["BankPush fcm p\nBankPushCredentials $ok_file\nBankPushSpareCPU 100", 'BankPushSpareCPU 100'],
);
for my $g (@good) {
    my ($conf, $why) = @$g;
    my ($rc, $out) = check_config($conf);
    is($rc, 0, "accepted: $why") or diag("$conf\n$out");
}

my @bad = (
    ['BankPush fcm my-bank-app', 'BankPushCredentials', 'BankPush without credentials'],
    ["BankPush apns p\nBankPushCredentials $ok_file", 'BankPush', 'another service'],
    ["BankPush fcm My_App\nBankPushCredentials $ok_file", 'BankPush', 'a bad project id'],
    ["BankPush fcm p http://fcm.example.com\nBankPushCredentials $ok_file", 'BankPush',
        'http:// to another host'],
    ["BankPush fcm p ftp://x\nBankPushCredentials $ok_file", 'BankPush', 'another scheme'],
    ['BankPush fcm', 'BankPush', 'no project'],
    ["BankPushCredentials $dir/missing.json", 'BankPushCredentials', 'a missing file'],
    ['BankPushCredentials ' . sa_file('sa-open.json', 0644, \%sa), 'BankPushCredentials',
        'a file others can read'],
    ['BankPushCredentials ' . sa_file('sa-text.json', 0600, "not json\n"), 'BankPushCredentials',
        'not JSON'],
    ['BankPushCredentials ' . sa_file('sa-nokey.json', 0600, { %sa, private_key => undef }),
        'BankPushCredentials', 'no private_key'],
    ['BankPushCredentials ' . sa_file('sa-badkey.json', 0600, { %sa, private_key => "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" }),
        'BankPushCredentials', 'a key that is no RSA key'],
    ['BankPushCredentials ' . sa_file('sa-httpuri.json', 0600,
        { %sa, token_uri => 'http://oauth2.example.com/token' }), 'BankPushCredentials',
        'a token_uri over plain http to another host'],
    ["BankPushCredentials $dir", 'BankPushCredentials', 'a directory'],
    ['BankPushAttempts 0',   'BankPushAttempts', 'zero attempts'],
    ['BankPushAttempts 101', 'BankPushAttempts', 'over 100 attempts'],
    ['BankPushAttempts x',   'BankPushAttempts', 'not a number'],
    ['BankPushTimeout 0',    'BankPushTimeout',  'a zero timeout'],
    ['BankPushTimeout 301',  'BankPushTimeout',  'over 300 seconds'],
    ['BankPushSpareCPU -1',  'BankPushSpareCPU', 'a negative share'],
    ['BankPushSpareCPU 101', 'BankPushSpareCPU', 'over 100 percent'],
    ['BankPushSpareCPU 10%', 'BankPushSpareCPU', 'a percent sign'],
    ["<Location /x>\nBankPushSpareCPU 5\n</Location>", 'BankPushSpareCPU', 'BankPushSpareCPU inside <Location>'],
    ["<Location /x>\nBankPushAttempts 3\n</Location>", 'BankPushAttempts', 'inside <Location>'],
    ["<VirtualHost 127.0.0.1:1>\nBankPush fcm p\n</VirtualHost>", 'BankPush',
        'inside <VirtualHost>'],
);
for my $b (@bad) {
    my ($conf, $name, $why) = @$b;
    my ($rc, $out) = check_config($conf);
    isnt($rc, 0, "refused: $why") or diag($conf);
    like($out, qr/\Q$name\E/, "refused: $why: the message names $name") or diag($out);
    unlike($out, qr/\Q$pem_line\E|PRIVATE KEY/, "refused: $why: no key in the message");
}

done_testing();
