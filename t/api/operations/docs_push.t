# docs/push.md's and docs/configuration.md's push configuration, as written (the blocks marked
# docs-test: push-conf and configuration-push), with only the service-account file's path
# replaced by a file of the test key: `apache2 -t` passes, and with the file readable by
# others it fails naming the directive, as the documents say.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Bank::ConfigCheck qw(config_check);
use JSON::PP ();
use Bank::Docs qw(doc_block substitute spew slurp);

my $dir   = tempdir(CLEANUP => 1, DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
my $sa    = "$dir/fcm-service-account.json";
my $old   = umask 077;
spew($sa, JSON::PP->new->encode({ type => 'service_account',
    client_email => 'push@my-bank-app.iam.gserviceaccount.com',
    private_key  => slurp(Apache::Test::vars('top_dir') . '/t/fake/push_test_key.pem'),
    token_uri    => 'https://oauth2.googleapis.com/token' }));
umask $old;

sub check { return config_check($dir, @_) }

for my $doc (['docs/push.md', 'push-conf'], ['docs/configuration.md', 'configuration-push']) {
    my ($file, $name) = @$doc;
    my $conf = substitute(doc_block($file, $name), $name,
        '/etc/mod_bank/fcm-service-account.json' => $sa);
    my ($rc, $out) = check($conf);
    is($rc, 0, "$file: the configuration passes apache2 -t") or diag($out);
    chmod 0644, $sa;
    ($rc, $out) = check($conf);
    isnt($rc, 0, "$file: with the key file readable by others it fails");
    like($out, qr/BankPushCredentials: the file .*readable by its owner only/,
        "$file: naming the directive and why");
    chmod 0600, $sa;
}

done_testing();
