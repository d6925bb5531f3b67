package Bank::Upgrade;
# An upgrade under traffic (t/package/deb_upgrade.t, t/api/operations/upgrade_pg.t): a
# customer set up under the old module (a device, a verified BVN, an account), two clients
# sending requests without pause while the steps run, and what they saw checked.
#
#   my $u = Bank::Upgrade->new(base => 'http://127.0.0.1', host => 'bank.example.org',
#       client_key => $k, webhook_secret => $s, dir => $dir);
#   $u->customer('0.2.0');             # sign-in, BVN, a notice: checked, under the old module
#   $u->start;                         # two clients, a fresh connection each request
#   $u->step('migrate'); ...           # when each step began
#   $u->stop;
#   $u->check(old => '0.2.0', new => '0.2.1', stored => sub { [refs in the database] });
#
# Each client writes one line per answer: when the request was sent, what, the status, the
# notice's reference (webhook), the account (BVN) or the version (health), a 503's
# Retry-After ("retry" on the line of the request sent again after it), and when the answer
# came; a connection that fails is a status of 0 (LWP's own 500 with Client-Warning).
use strict;
use warnings FATAL => 'all';
use HTTP::Request ();
use JSON::PP ();
use LWP::UserAgent ();
use POSIX ();
use Test::More;
use Time::HiRes ();
use Bank::Test qw(slurp spew);
use Bank::Docs ();
use File::Temp ();
use Bank::Webhook qw(notice notice_json);

my $json = JSON::PP->new;

# 0.2.0 as released: the last commit before migration 010 (CHANGELOG.md, 0.2.1).
our $PREVIOUS = 'ac7a61252fa4cc58cc6655c0b05fe32c95ad3209';
# 0.1.0 as released: the last commit before migration 006 (CHANGELOG.md, 0.2.0).
our $FIRST = 'd29797c';

# Skips the test where the checkout has no history to build the previous release from.
sub previous_or_skip {
    my ($commit) = @_;
    $commit //= $PREVIOUS;
    plan skip_all => 'needs the repository\'s history (the previous release is built from it)'
      unless `git cat-file -t $commit 2>/dev/null` eq "commit\n";
}

# The previous release's tree (or $commit's) in $dir, built by `make -s $target` there
# (without the suite's checkout in the environment); returns make's output.
sub build_previous {
    my ($dir, $target, $commit) = @_;
    $commit //= $PREVIOUS;
    mkdir $dir or die "mkdir $dir: $!";
    my $out = `git archive $commit | tar -x -C $dir && cd $dir && env -u BANK_CHECKOUT -u BANK_SQL_DIR make -s $target 2>&1`;
    is($?, 0, "the previous release's $target, built from its commit") or BAIL_OUT($out);
    return $out;
}

# --- a server of an upgrade test's own (t/api/operations/upgrade_*.t) -------------------------------
# Its configuration (private_conf: the suite's identity keys) on $port, with the four
# endpoints and /health, $module loaded and its database at $params, written to
# $dir/httpd.conf; the keys and the secrets its clients use (client => new(...)).
my $LOCATIONS = <<'CONF';
BankClientKey upgrade-client-key
BankAccountBank "Example Bank"
BankAccountBankCode 999
<Location /auth/sign_in>
    SetHandler bank-sign-in
</Location>
<Location /onboarding/bvn>
    SetHandler bank-bvn
</Location>
<Location /misc/payment_banks>
    SetHandler bank-banks
</Location>
<Location /webhook/partner>
    SetHandler bank-webhook
    BankWebhookSecret upgrade-webhook-secret
</Location>
<Location /health>
    SetHandler bank-health
</Location>
CONF
sub write_conf {
    my ($dir, $port, $module, $params) = @_;
    local $ENV{BANK_MODULE} = $module;
    local $ENV{BANK_DBPARAMS} = $params;
    spew("$dir/httpd.conf", Bank::Docs::private_conf($dir, 'httpd', $port)
          . "LogLevel warn bank:notice\n" . $LOCATIONS);
}

# That server started with $module as release $v, and clients for it: (httpd, Bank::Upgrade).
sub own_server {
    my ($class, $dir, $port, $module, $params, $v) = @_;
    write_conf($dir, $port, $module, $params);
    my $h = Bank::Docs::Httpd->new(args => ['-f', "$dir/httpd.conf"], port => $port,
        log => "$dir/httpd.log", pidfile => "$dir/httpd.pid");
    $h->start($v);
    my $u = $class->new(base => "http://127.0.0.1:$port", host => 'localhost',
        client_key => 'upgrade-client-key', webhook_secret => 'upgrade-webhook-secret',
        dir => $dir);
    Test::More::is($u->version, $v, "$v serves");
    return ($h, $u);
}

# The own server's configuration switched to this build's module, then, after bankctl check
# and the configuration test pass (what the package's reload and `systemctl reload` need),
# a graceful restart onto it between the steps 'reload' and 'reloaded'; $what: when.
# Returns what bankctl check said.
sub reload_own {
    my ($self, $h, $ctl, $port, $params, $nv, $what) = @_;
    write_conf($self->{dir}, $port, $ENV{BANK_MODULE}, $params);
    my $checked = `$ctl check -f '$self->{dir}/httpd.conf' 2>&1`;
    like($checked, qr/^bankctl check: all ok$/m, "bankctl check $what: all ok") or diag($checked);
    my $out = `'$h->{httpd}' -t -f '$self->{dir}/httpd.conf' 2>&1`;
    is($?, 0, "the configuration test passes with $nv $what") or diag($out);
    $self->step('reload');
    $h->graceful("$nv loaded by a graceful restart");
    my $until = time + 60;
    select undef, undef, undef, 0.1 until $self->version eq $nv || time > $until;
    $self->step('reloaded');
    is($self->version, $nv, "$nv serves $what");
    return $checked;
}

# The previous release's module and bankctl built in a new directory (removed at the end
# unless BANK_KEEP_TEST_DIR): (the directory, the previous version, this one).
sub built_previous {
    my $dir = File::Temp::tempdir(CLEANUP => !$ENV{BANK_KEEP_TEST_DIR},
        DIR => $ENV{BANK_TEST_ROOT} || '/tmp');
    chmod 0755, $dir;
    build_previous("$dir/prev", 'build');
    my ($pv) = slurp("$dir/prev/include/bank_version.h") =~ /^#define BANK_VERSION "([^"]+)"/m;
    my ($nv) = slurp('include/bank_version.h') =~ /^#define BANK_VERSION "([^"]+)"/m;
    isnt($pv, $nv, "two releases: $pv and $nv");
    return ($dir, $pv, $nv);
}

# This checkout's package and the one of $commit (default the previous release), built under
# $work: (new .deb, old .deb, new version, old version).
sub packages {
    my ($work, $commit) = @_;
    my $out = `make -s deb 2>&1`;
    is($?, 0, 'make deb') or BAIL_OUT($out);
    my ($new) = $out =~ m{^built (build/\S+\.deb)$}m;
    $out = build_previous("$work/prev", 'deb', $commit);
    my ($old) = $out =~ m{^built (build/\S+\.deb)$}m;
    my ($nv, $ov) = map { /_(\d+\.\d+\.\d+)_/ } $new, $old;
    isnt($ov, $nv, "two releases: $ov and $nv");
    return ($new, "$work/prev/$old", $nv, $ov);
}

sub new {
    my ($class, %o) = @_;
    my $self = bless { health => 1, %o, steps => [], pids => [] }, $class;
    $self->{ua} = LWP::UserAgent->new(timeout => 30, keep_alive => 0);
    $self->{sign_in} = '{"email":"ada@example.com","password":"Ada-password-1",'
      . '"deviceToken":"fcm-device-1"}';
    $self->{bvn} = '{"bvn_number":"22233344455","date_of_birth":"1977-07-07"}';
    return $self;
}

# What bankctl adds for the customer (the old release's bankctl takes the same arguments).
sub bankctl_args {
    return ('customer add --email ada@example.com --password Ada-password-1 --first Ada '
          . '--last Obi --phone +2348000000001',
        'bvn add --bvn 22233344455 --dob 1977-07-07 --first Ada --last Obi');
}

sub call {
    my ($self, $method, $path, $bearer, $body) = @_;
    my $req = HTTP::Request->new($method => "$self->{base}$path",
        [Host => $self->{host}, Authorization => "Bearer $bearer",
            ($body ? ('Content-Type' => 'application/json') : ())], $body);
    return $self->{ua}->request($req);
}

sub version {
    my ($self) = @_;
    my $r = $self->call(GET => '/health', '');
    return $r->code == 200 ? eval { $json->decode($r->content)->{body}{version} } // '' : '';
}

# Signs the customer in (a device), verifies the BVN (an account), sends a notice for it.
sub customer {
    my ($self, $v) = @_;
    my $res = $self->call(POST => '/auth/sign_in', $self->{client_key}, $self->{sign_in});
    is($res->code, 200, "$v: sign-in (a device)") or diag($res->as_string);
    $self->{token} = eval { $json->decode($res->content)->{body}{token}{token} } // '';
    $res = $self->call(POST => '/onboarding/bvn', $self->{token}, $self->{bvn});
    is($res->code, 200, "$v: BVN verified (an account)") or diag($res->as_string);
    my $a = eval { $json->decode($res->content)->{body}{customer}{account}{details} } || {};
    ($self->{account}, $self->{wallet}) = ($a->{accountNumber} // '', $a->{accountId} // '');
    like($self->{account}, qr/^\d{10}$/, "$v: the account number");
    # A notice names the account by its id (walletId): stored with the customer, whose
    # device gets a push (an outbox row).
    $res = $self->call(POST => '/webhook/partner', $self->{webhook_secret},
        notice_json(notice(walletId => $self->{wallet})));
    is($res->code, 200, "$v: a notice for the account") or diag($res->as_string);
}

sub client {
    my ($self, $n) = @_;
    my $parent = $$;
    my $pid = fork // die "fork: $!";
    return $pid if $pid;
    open my $log, '>', "$self->{dir}/client$n.log" or POSIX::_exit(1);
    $log->autoflush(1);
    my $i = 0;
    until (-e "$self->{dir}/stop" || getppid() != $parent) {    # stopped, or the test ended
        my $n1 = notice(walletId => $self->{wallet});
        my @ask = (
            [banks   => GET  => '/misc/payment_banks', $self->{token}],
            [webhook => POST => '/webhook/partner', $self->{webhook_secret}, notice_json($n1)],
            [bvn     => POST => '/onboarding/bvn', $self->{token}, $self->{bvn}],
            ($self->{health} ? ([health => GET => '/health', '']) : ()),
            ($i++ % 10 == 0 ? ([sign_in => POST => '/auth/sign_in', $self->{client_key},
                        $self->{sign_in}]) : ()),
        );
        for my $a (@ask) {
            my ($what, @req) = @$a;
            for my $try (1, 2) {
                my $sent = Time::HiRes::time();
                my $r = $self->call(@req);
                my $code = $r->header('Client-Warning') ? 0 : $r->code;
                my $d = eval { $json->decode($r->content) } || {};
                my $extra = $what eq 'webhook' ? $n1->{data}{transactionReference}
                  : $what eq 'bvn' ? ($d->{body}{customer}{account}{details}{accountNumber} // '-')
                  : $what eq 'health' ? ($d->{body}{version} // '-') : '-';
                my $wait = $code == 503 ? $r->header('Retry-After') : undef;
                printf $log "%.3f %s %d %s %s %.3f\n", $sent, $what, $code, $extra,
                  $try == 1 ? ($wait // '-') : 'retry', Time::HiRes::time();
                select undef, undef, undef, 0.05 if $code == 0;    # refused: a stop
                last unless defined $wait && $try == 1;
                sleep($wait > 2 ? 2 : $wait);    # as a client does, at most 2 s here
            }
        }
    }
    POSIX::_exit(0);
}

sub start {
    my ($self) = @_;
    unlink "$self->{dir}/stop";
    $self->{pids} = [map { $self->client($_) } 1 .. 2];
    sleep 2;
}

sub stop {
    my ($self) = @_;
    spew("$self->{dir}/stop", '');
    waitpid $_, 0 for @{ $self->{pids} };
    $self->{pids} = [];
}

sub step { push @{ $_[0]{steps} }, [$_[1], Time::HiRes::time()] }

# What the clients saw: every answer 2xx and no connection failed (o{down}: [step, step], a
# documented stop, between which a connection may fail but nothing else); nothing but 2xx to
# a request sent once the new module serves (from the step o{serving}, else 'reloaded'); both releases answered (o{health} 0: the old
# release has no /health, nothing says who answered); every BVN repeat with the account;
# every notice acknowledged stored (o{stored}: the references in the database); the old
# token valid at the end.
sub check {
    my ($self, %o) = @_;
    my ($old, $new) = @o{qw(old new)};
    my @lines = map { [split] } map { split /\n/, slurp("$self->{dir}/client$_.log") } 1 .. 2;
    my %at = map { @$_ } @{ $self->{steps} };
    my $steps = join ' ', map { sprintf '%s=%.3f', @$_ } @{ $self->{steps} };
    my %by;
    $by{ $_->[1] }++ for @lines;
    ok($by{$_}, "the clients sent $_ (" . ($by{$_} // 0) . ')')
      for (qw(banks webhook bvn sign_in), $self->{health} ? ('health') : ());
    my @at = @{ $self->{steps} };
    for my $i (1 .. $#at) {    # throughout: requests sent between each step and the next
        my ($from, $to) = ($at[ $i - 1 ][1], $at[$i][1]);
        next if $to - $from < 1;    # too short to ask
        ok(scalar(grep { $_->[0] >= $from && $_->[0] < $to } @lines),
            "requests sent between $at[$i - 1][0] and $at[$i][0]");
    }
    my ($down_from, $down_to) = $o{down} ? map { $at{$_} } @{ $o{down} } : (0, 0);
    my @refused = grep { $_->[2] == 0 && $_->[0] >= $down_from && $_->[0] <= $down_to } @lines;
    my %down = map { $_ => 1 } @refused;
    my @non2xx = grep { ($_->[2] < 200 || $_->[2] > 299) && !$down{$_} } @lines;
    is(scalar @non2xx, 0, 'every answer 2xx, no connection failed (' . scalar(@lines)
        . ' answers' . ($o{down} ? '; ' . scalar(@refused) . " connections refused between "
        . "$o{down}[0] and $o{down}[1]" : '') . ')')
      or diag("steps at: $steps\n" . join "\n", map { "@$_" } @non2xx[0 .. ($#non2xx < 19 ? $#non2xx : 19)]);
    is(scalar(grep { $_->[0] > $at{ $o{serving} // 'reloaded' } } @non2xx), 0,
        "once $new serves, every answer 2xx");
    if ($self->{health}) {
        my %seen = map { $_->[3] => 1 } grep { $_->[1] eq 'health' } @lines;
        ok($seen{$old} && $seen{$new}, "both releases answered the clients ($old and $new)");
    }
    is(scalar(grep { $_->[1] eq 'bvn' && $_->[2] == 200 && $_->[3] ne $self->{account} } @lines),
        0, 'every BVN repeat answered with the account opened before');
    my @acked = grep { $_->[1] eq 'webhook' && $_->[2] == 200 } @lines;
    my %stored = map { $_ => 1 } @{ $o{stored}->() };
    my @lost = grep { !$stored{ $_->[3] } } @acked;
    is(scalar @lost, 0, 'every notice acknowledged is stored (' . scalar(@acked) . ')')
      or diag("steps at: $steps\nlost: "
          . join("\n", map { "@$_" } @lost[0 .. ($#lost < 19 ? $#lost : 19)]));
    my $last = (grep { $_->[1] eq 'banks' } @lines)[-1];
    is($last->[2], 200, "$new accepts the token issued by $old");
    return scalar @acked;
}

1;
