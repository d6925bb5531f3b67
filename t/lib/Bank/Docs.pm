package Bank::Docs;
# Helpers for testing the documentation as written (t/api/operations/docs_*.t): the configuration
# blocks of README.md and docs/deployment.md, found by their marker comment
# (<!-- docs-test: NAME --> right above the fence), placeholders replaced, started as a
# private httpd, every endpoint called and the error log read.
#
#   my $conf = doc_block('README.md', 'readme-debian-conf');
#   $conf = substitute($conf, 'README', '/var/lib/mod_bank/bank.db' => "$dir/bank.db", ...);
#   my $h = Bank::Docs::Httpd->new(args => ['-f', $file], port => $port, log => $errlog);
#   $h->check_syntax; $h->start; exercise($h->base, 'README', client_key => ...);
#   $h->graceful; $h->stop;
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use IO::Socket::INET ();
use LWP::UserAgent ();
use Apache::Test qw(-withtestmore);
use Bank::Test;
use Bank::Test qw(slurp spew free_port);
use Bank::BvnTest qw(next_bvn);
use Bank::Webhook qw(notice notice_json hmac);

our @EXPORT_OK = qw(doc_block substitute free_port run_user slurp spew exercise bad_log_lines
  private_conf debian_apache2 production_paths backup_files backup_twice tls_postgres
  signin_httpd restored_served);


# The fenced block right after <!-- docs-test: NAME --> in FILE (the suite's own copy).
sub doc_block {
    my ($file, $name) = @_;
    my ($block) = slurp($file) =~ /^<!-- docs-test: \Q$name\E -->\n```\w*\n(.*?)^```/ms;
    ok(defined $block, "$file: the block marked docs-test: $name") or BAIL_OUT("no $name in $file");
    return $block;
}

# Replaces each placeholder (exact text, every occurrence). Each must be there: a document
# that no longer says it fails here instead of testing something else.
sub substitute {
    my ($text, $what, @pairs) = @_;
    while (my ($from, $to) = splice @pairs, 0, 2) {
        my $n = ($text =~ s/\Q$from\E/$to/g);
        ok($n, "$what: placeholder '$from' is there");
    }
    return $text;
}

# The placeholders of docs/deployment.md's production configuration and what a test puts in
# their place (for substitute): its port, directories of the test's own under $dir (etc =>
# another /etc/mod_bank), the module built here.
sub production_paths {
    my ($dir, $port, %o) = @_;
    return (
        'Listen 443'                           => "Listen 127.0.0.1:$port",
        '<VirtualHost *:443>'                  => "<VirtualHost *:$port>",
        '/run/apache2'                         => "$dir/run",
        '/var/log/apache2'                     => "$dir/log",
        '/etc/ssl/mod_bank'                    => "$dir/ssl",
        '/etc/mod_bank'                        => $o{etc} // "$dir/etc",
        '/usr/lib/apache2/modules/mod_bank.so' => $ENV{BANK_MODULE});
}


# A PostgreSQL server of a test's own for docs/deployment.md's TLS path (as root): a CA made
# in $dir/ca (ca.pem) signs its certificate (CN and SAN localhost); on 127.0.0.1 it accepts
# only TLS connections with a password (scram-sha-256) to the database bank, and postgres,
# trusted, on its socket in $dir/pg. Stopped when the test ends. Returns {port, bindir, psql:
# psql as postgres on the socket, stopping at the first error}.
my @pg_stop;
END { system("runuser -u postgres -- $_ >/dev/null 2>&1") for @pg_stop }

sub tls_postgres {
    my ($dir) = @_;
    mkdir "$dir/$_" for qw(ca pg);
    my $port   = free_port();
    my $bindir = `$ENV{BANK_PGCLUSTER} bindir $dir/pg`;
    chomp $bindir;
    my $ssl = sub { my $o = `openssl @_ 2>&1`; is($?, 0, "openssl $_[0]") or diag($o) };
    $ssl->("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-db-ca -keyout $dir/ca/ca.key -out $dir/ca/ca.pem");
    spew("$dir/ca/ext.cnf", "subjectAltName = DNS:localhost\nbasicConstraints = CA:FALSE\n");
    $ssl->("req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout $dir/pg/server.key -out $dir/ca/server.csr");
    $ssl->("x509 -req -days 2 -in $dir/ca/server.csr -CA $dir/ca/ca.pem -CAkey $dir/ca/ca.key -CAcreateserial -extfile $dir/ca/ext.cnf -out $dir/pg/server.crt");
    system('chown', '-R', 'postgres:postgres', "$dir/pg");
    chmod 0600, "$dir/pg/server.key";
    chmod 0700, "$dir/pg";
    my $pg = sub { my $o = `runuser -u postgres -- @_ 2>&1`; return ($?, $o) };
    my ($rc, $out) = $pg->("$bindir/initdb -D $dir/pg/data -A trust -U postgres --no-sync -E UTF8");
    is($rc, 0, 'initdb') or diag($out);
    spew("$dir/pg/data/pg_hba.conf", "local all postgres trust\n"
          . "hostssl bank all 127.0.0.1/32 scram-sha-256\nhostnossl all all 0.0.0.0/0 reject\n");
    ($rc, $out) = $pg->("$bindir/pg_ctl -D $dir/pg/data -l $dir/pg/log -w start -o "
          . "\"-c listen_addresses=127.0.0.1 -c port=$port -k $dir/pg -c ssl=on "
          . "-c ssl_cert_file=$dir/pg/server.crt -c ssl_key_file=$dir/pg/server.key "
          . "-c max_connections=350 -c fsync=off\"");
    is($rc, 0, 'PostgreSQL starts, TLS only')
      or diag($out, -e "$dir/pg/log" ? slurp("$dir/pg/log") : '');
    push @pg_stop, "$bindir/pg_ctl -D $dir/pg/data -m immediate stop";
    return { port => $port, bindir => $bindir,
        psql => "runuser -u postgres -- $bindir/psql -h $dir/pg -p $port -v ON_ERROR_STOP=1" };
}

# The server of the backup tests (docs_backup*.t): private_conf's httpd in $dir with
# sign-in only (client key backup-client-key), its children www-data as Debian's (the owner
# of an SQLite file or of a libpq password file), on DBDParams $params and the keys file of
# $etc. Returns a sub that starts it (a Bank::Docs::Httpd; the test stops it) and one that
# signs a customer (new_customer's hash) in and returns the answer.
sub signin_httpd {
    my ($dir, $etc, $params) = @_;
    my $port = free_port();
    my $conf = private_conf($dir, 'httpd', $port);
    $conf =~ s/^User nobody\nGroup nogroup$/User www-data\nGroup www-data/m or die 'no User';
    $conf =~ s/^DBDParams .*$/DBDParams "$params"/m or die 'no DBDParams';
    $conf =~ s/^Include "\Q$ENV{BANK_TEST_KEYS}\E"$/Include "$etc\/identity-keys.conf"/m
      or die 'no keys line';
    spew("$dir/httpd.conf", "$conf\nBankClientKey backup-client-key\n"
          . "<Location /auth/sign_in>\n    SetHandler bank-sign-in\n</Location>\n");
    my $start = sub {
        my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $port,
            log => "$dir/httpd.log", pidfile => "$dir/httpd.pid");
        $h->start($_[0]) or BAIL_OUT('httpd does not serve');
        return $h;
    };
    my $sign_in = sub {
        my ($c) = @_;
        return json_request(POST => "http://127.0.0.1:$port/auth/sign_in",
            headers => { Authorization => 'Bearer backup-client-key' },
            body => { email => $c->{email}, password => $c->{password},
                deviceToken => 'backup-' . unique() });
    };
    return ($start, $sign_in);
}

# Runs a backup block of docs/deployment.md's section 7 ($block, its directories already
# replaced by $dir/sbin, $dir/cron.d, $dir/backup and $dir/keys-backup) as written, which
# makes the script, its cron line and a first run; a customer is added, the script run
# again, another customer added; then backup_files. Returns the two customers: the one in
# the second backup only and the one in neither.
sub backup_twice {
    my ($dir, $block, $ext) = @_;
    spew("$dir/backup.sh", $block);
    my $out = `sh -e '$dir/backup.sh' 2>&1`;
    is($?, 0, 'the backup block runs as written (script, cron line, first run)') or diag($out);
    like(slurp("$dir/cron.d/bank-backup"), qr{^15 2 \* \* \* root \Q$dir\E/sbin/bank-backup$}m,
        'the cron line runs the script daily as root');
    my $second = new_customer();
    $out = `'$dir/sbin/bank-backup' 2>&1`;
    is($?, 0, 'a second run') or diag($out);
    my $third = new_customer();
    backup_files("$dir/backup/mod_bank", $ext, "$dir/keys-backup", "$dir/backup");
    return ($second, $third);
}

# After a restore of docs/deployment.md's section 7: the keys back in $etc (root's, 0600),
# httpd started again ($start from signin_httpd) serving the restored data: $second (in the
# newest backup) signs in, $third (added after it) does not, and the BVN record $bvn (date
# of birth 1984-02-29, sealed before the backups) reads back with the restored keys.
sub restored_served {
    my ($etc, $start, $sign_in, $second, $third, $bvn) = @_;
    is(join(' ', (stat "$etc/keys/k1.key")[4], sprintf '%04o', (stat _)[2] & 07777), '0 0600',
        'the keys are back, root\'s, 0600');
    my $h = $start->('after the restore');
    is($sign_in->($second)->code, 200, 'a customer made before the newest backup signs in');
    is($sign_in->($third)->code, 400, 'one made after it is not in the restored database');
    like(bankctl('bvn', 'show', '--bvn', $bvn), qr/"dateOfBirth":"1984-02-29"/,
        'a BVN record sealed before the backup reads back with the restored keys');
    $h->stop;
}

# What two runs of docs/deployment.md's backup script (section 7) leave: in $db_dir two
# database files (bank-RUN.$ext), in $keys_dir two keys archives (keys-RUN.tar), one of each
# per run (the same RUN, its date, time and random part, in both names), every file root's
# and 0600, every directory (those two and @dirs) root's and 0700. Returns the database
# files.
sub backup_files {
    my ($db_dir, $ext, $keys_dir, @dirs) = @_;
    for my $d ($db_dir, $keys_dir, @dirs) {
        is(join(' ', (stat $d)[4], sprintf '%04o', (stat _)[2] & 07777), '0 0700',
            "backup: $d is root's, 0700");
    }
    my @db   = sort glob("$db_dir/bank-*.$ext");
    my @keys = sort glob("$keys_dir/keys-*.tar");
    is(scalar @db, 2, "backup: two runs, two database files in $db_dir")
      or diag(`ls -la $db_dir`);
    is(scalar @keys, 2, "backup: two runs, two keys archives in $keys_dir")
      or diag(`ls -la $keys_dir`);
    my $run = sub { ($_[0] =~ m{/(?:bank|keys)-(\d{8}-\d{6}-\w{6})\.\w+$})[0] // 'none' };
    is_deeply([sort map { $run->($_) } @keys], [sort map { $run->($_) } @db],
        'backup: each run\'s keys archive has its database file\'s name (time, random part)');
    is_deeply([grep { -s $_ == 0 } @db, @keys], [], 'backup: no file is empty');
    my @other = grep { !/\.(?:\Q$ext\E|tar)$/ } glob("$db_dir/*"), glob("$keys_dir/*");
    is_deeply(\@other, [], 'backup: nothing else left beside them');
    for my $f (@db, @keys) {
        is(join(' ', (stat $f)[4], sprintf '%04o', (stat _)[2] & 07777), '0 0600',
            "backup: $f is root's, 0600");
    }
    like(`tar -tf '$keys[-1]' 2>&1`,
        qr{^identity-keys\.conf\n(?:\./)?keys/\n(?:.*\n)*keys/k1\.key$}m,
        'backup: the keys archive holds the keys file and the key files');
    return @db;
}

# A copy of Debian's /etc/apache2 at $dest holding only what the apache2 package owns: the
# files of other packages (libapache2-mod-bank, mod_perl, ...) and every enabled link to them
# are left out, so a test sees Debian's configuration whatever the host has installed or
# enabled. Returns $dest.
sub debian_apache2 {
    my ($dest) = @_;
    my %owned = map { chomp; ($_ => 1) } grep { m{^/etc/apache2/} } `dpkg-query -L apache2`;
    die "dpkg-query -L apache2 lists no /etc/apache2 files\n" unless %owned;
    system('cp', '-a', '/etc/apache2', $dest) == 0 or die "cp /etc/apache2 failed\n";
    for my $kind (qw(mods conf sites)) {
        for my $path (glob("$dest/$kind-enabled/*"), glob("$dest/$kind-available/*")) {
            my $name = substr($path, length $dest);
            my $target = -l $path ? readlink($path) =~ s{^\.\./}{/}r : $name;
            unlink $path unless $owned{"/etc/apache2$target"};
        }
    }
    unlink grep { !$owned{ '/etc/apache2' . substr($_, length $dest) } } glob("$dest/*.conf");
    return $dest;
}

# The user httpd's children run as: the documents' www-data when the suite runs as root;
# otherwise httpd cannot switch users and keeps the one running the suite.
sub run_user { return $> == 0 ? 'www-data' : scalar getpwuid($>) }

# The head of a small httpd.conf of a test's own on the suite's database: ServerRoot $dir,
# files named $name there, listening on @ports, children as the test server's (nobody when
# run as root), the modules mod_bank needs, and the database and identity keys of
# scripts/run-tests.
sub private_conf {
    my ($dir, $name, @ports) = @_;
    my $user = $> == 0 ? "User nobody\nGroup nogroup\n" : '';
    my $modules = Bank::Test::modules_dir();
    return "ServerRoot $dir\nServerName localhost\n"
      . join('', map { "Listen 127.0.0.1:$_\n" } @ports) . <<"CONF";
PidFile $dir/$name.pid
ErrorLog $dir/$name.log
DefaultRuntimeDir $dir
LogLevel warn
$user
LoadModule mpm_event_module $modules/mod_mpm_event.so
LoadModule authz_core_module $modules/mod_authz_core.so
LoadModule dbd_module $modules/mod_dbd.so
LoadModule bank_module $ENV{BANK_MODULE}
DBDriver $ENV{BANK_DBDRIVER}
DBDParams "$ENV{BANK_DBPARAMS}"
DBDInitSQL "$ENV{BANK_DBINIT}"
Include "$ENV{BANK_TEST_KEYS}"
CONF
}

# Lines of an error log at warn level or worse. One is the host's, not the configuration's:
# mod_ssl built against a newer OpenSSL than the libssl3 installed (AH01882; an up-to-date
# Debian 12 does not log it: apt-get install --only-upgrade libssl3). It is reported, not
# counted.
sub bad_log_lines {
    my ($text) = @_;
    my @bad = grep { /\[[\w:]*(warn|error|crit|alert|emerg)\]/ } split /\n/, $text;
    my @skew = grep { /AH01882: / } @bad;
    diag("the host's libssl3 is older than mod_ssl's: $skew[0]") if @skew;
    return grep { !/AH01882: / } @bad;
}

# Calls every endpoint at $base (sign-out and the health check included) and checks the
# answers, through every path that writes: a refused password (the attempt and throttle
# rows), a sign-in with a device (token, device), a BVN of another date then the right one
# (a failure counted, then cleared; the account and its serial), a notice for that account
# (the notice and the push message of the customer's device), sign-out (the revocation
# feed). Options: client_key, webhook_secret, hmac_key and hmac_header (when the
# configuration requires a signature), webhook_path, before_sign_out (called with the device
# token before the sign-out: signing out removes the session's device and marks its unsent
# push messages unregistered, so a test that wants the message sent waits for it there).
# Returns {device, reference}: the device token signed in with and the notice's reference,
# for a test to look at the push message.
sub exercise {
    my ($base, $what, %o) = @_;
    my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => 30,
        ssl_opts => { verify_hostname => 0, SSL_verify_mode => 0 });
    my $req = sub { my ($m, $p, %r) = @_; return json_request($m, "$base$p", %r, ua => $ua) };

    my $c   = new_customer();
    my $bvn = next_bvn();
    bankctl('bvn', 'add', '--bvn', $bvn, '--dob', '1990-04-12', '--first', $c->{first},
        '--last', $c->{last}, '--phone', $c->{phone});
    my $device = 'docs-device-' . unique();
    my %creds = (email => $c->{email}, password => $c->{password}, deviceToken => $device);

    assert_error($req->(POST => '/auth/sign_in', body => { %creds, password => "$c->{password}x" },
            headers => { Authorization => "Bearer $o{client_key}" }),
        400, 'E_INVALID_CREDENTIALS', "$what: sign-in with a wrong password");
    my $res = $req->(POST => '/auth/sign_in', body => \%creds,
        headers => { Authorization => "Bearer $o{client_key}" });
    is($res->code, 200, "$what: sign-in answers 200") or diag($res->as_string);
    my $token = ((decode_body($res) || {})->{body} || {})->{token}{token} // '';
    like($token, qr/^oat_/, "$what: sign-in issues a token");
    assert_error($req->(POST => '/auth/sign_in', body => \%creds,
            headers => { Authorization => 'Bearer not-the-client-key' }),
        401, 'E_UNAUTHORIZED_ACCESS', "$what: sign-in with another client key");

    $res = $req->(GET => '/misc/payment_banks', headers => { Authorization => "Bearer $token" });
    is($res->code, 200, "$what: banks answers 200") or diag($res->as_string);
    my $banks = ((decode_body($res) || {})->{body} || {})->{banks} || [];
    cmp_ok(scalar @$banks, '>=', 30, "$what: banks lists the seeded banks");
    assert_error($req->(GET => '/misc/payment_banks'), 401, 'E_UNAUTHORIZED_ACCESS',
        "$what: banks without a token");

    assert_error($req->(POST => '/onboarding/bvn', headers => { Authorization => "Bearer $token" },
            body => { bvn_number => $bvn, date_of_birth => '1990-04-13' }),
        422, 'E_VALIDATION_ERROR', "$what: BVN with another date of birth");
    $res = $req->(POST => '/onboarding/bvn', headers => { Authorization => "Bearer $token" },
        body => { bvn_number => $bvn, date_of_birth => '1990-04-12' });
    is($res->code, 200, "$what: BVN answers 200") or diag($res->as_string);
    my $d = decode_body($res) || {};
    is($d->{message}, 'BVN verified successfully', "$what: BVN verified");
    my $details = ((($d->{body} || {})->{customer} || {})->{account} || {})->{details} || {};
    like($details->{accountNumber} // '', qr/^\d{10}$/, "$what: BVN opens an account with a NUBAN");

    # For the account just opened: its customer signed in with a device, so the notice also
    # writes a push message (docs/push.md), in the same statement.
    my $n    = notice(walletId => $details->{accountId} // 'none');
    my $text = notice_json($n);
    my %h    = (Authorization => "Bearer $o{webhook_secret}");
    $h{ $o{hmac_header} } = hmac($text, $o{hmac_key}, 'sha512') if $o{hmac_key};
    my $path = $o{webhook_path} // '/webhook/partner';
    $res = $req->(POST => $path, headers => \%h, body => $text);
    is($res->code, 200, "$what: webhook answers 200") or diag($res->as_string);
    is_deeply((decode_body($res) || {})->{body},
        { received => JSON::PP::true(), duplicate => JSON::PP::false(),
          transactionReference => $n->{data}{transactionReference} },
        "$what: webhook stores the notice");
    if ($o{hmac_key}) {
        $h{ $o{hmac_header} } = hmac($text, 'not-the-partner-key', 'sha512');
        assert_error($req->(POST => $path, headers => \%h, body => $text), 401,
            'E_INVALID_SIGNATURE', "$what: webhook signed with another key");
    }

    $res = $req->(GET => '/health');
    is($res->code, 200, "$what: GET /health from this host answers 200") or diag($res->as_string);
    is(((decode_body($res) || {})->{body} || {})->{database}, 'ok', "$what: health: database ok");
    $o{before_sign_out}->($device) if $o{before_sign_out};
    $res = $req->(POST => '/auth/sign_out', headers => { Authorization => "Bearer $token" });
    is($res->code, 200, "$what: sign-out answers 200") or diag($res->as_string);
    is(((decode_body($res) || {})->{body} || {})->{revoked}, JSON::PP::true(),
        "$what: sign-out revokes the token");
    return { device => $device, reference => $n->{data}{transactionReference} };
}

# A private httpd started from a documented configuration.
package Bank::Docs::Httpd;
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);

# args: apache2's arguments naming the configuration (-d, -f); port; log: its error log;
# scheme (http or https). Only the process that made it stops the server: a forked child
# (a request loop) that exits must not stop it under the others.
sub new {
    my ($class, %o) = @_;
    my $self = bless { httpd => Bank::Test::httpd_binary(), scheme => 'http', owner => $$,
        %o }, $class;
    return $self;
}

sub base { my ($self) = @_; return "$self->{scheme}://127.0.0.1:$self->{port}" }

sub _run {
    my ($self, @args) = @_;
    my $cmd = join ' ', map { "'$_'" } $self->{httpd}, @{ $self->{args} }, @args;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

sub log_mark { my ($self) = @_; return -s $self->{log} || 0 }

sub log_since {
    my ($self, $mark) = @_;
    open my $fh, '<', $self->{log} or return '';
    seek $fh, $mark, 0;
    local $/;
    return <$fh> // '';
}

sub check_syntax {
    my ($self, $what) = @_;
    my ($rc, $out) = $self->_run('-t');
    is($rc, 0, "$what: apache2 -t accepts it") or diag($out);
    is($out, "Syntax OK\n", "$what: apache2 -t says only Syntax OK");
}

sub answers {
    my ($self) = @_;
    for (1 .. 150) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->{port},
            Proto => 'tcp');
        return 1 if $s;
        select undef, undef, undef, 0.1;
    }
    return 0;
}

# Starts it; 1 when it answers.
sub start {
    my ($self, $what) = @_;
    my ($rc, $out) = $self->_run('-k', 'start');
    is($rc, 0, "$what: httpd starts") or diag($out);
    is($out, '', "$what: the start prints nothing");
    $self->{started} = 1;
    return ok($self->answers, "$what: httpd answers") || diag($self->log_since(0));
}

sub _generations { my ($self) = @_; return () = $self->log_since(0) =~ /resuming normal operations/g }

# A graceful restart; returns once the new generation logged that it runs.
sub graceful {
    my ($self, $what) = @_;
    my $before = $self->_generations;
    my ($rc, $out) = $self->_run('-k', 'graceful');
    is($rc, 0, "$what: graceful restart") or diag($out);
    for (1 .. 150) {
        last if $self->_generations > $before;
        select undef, undef, undef, 0.1;
    }
    ok($self->_generations > $before && $self->answers, "$what: httpd answers after the restart");
}

sub stop {
    my ($self) = @_;
    return unless $self->{started} && $$ == $self->{owner} && !$self->{stopped}++;
    $self->_run('-k', 'stop');
    my $pidfile = $self->{pidfile};
    for (1 .. 100) {
        last unless $pidfile && -e $pidfile;
        select undef, undef, undef, 0.1;
    }
}

sub DESTROY { $_[0]->stop }

1;
