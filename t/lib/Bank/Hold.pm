package Bank::Hold;
# The attacks of docs/deployment.md's "Holding connections", each run by build/flood against
# a server while a legitimate client opens a fresh connection each second for the bank list
# (with a token), a signed webhook and /health (t/flood/flood.c):
#
#   my @probes = probe_files($dir, token => $t, webhook_secret => $s, hmac_key => $k,
#       hmac_header => 'X-Partner-Signature', host => 'api.bank.example');
#   my $r = hold(attack => 'idle', connect => "127.0.0.1:$port", conns => 3000,
#       seconds => 15, probes => \@probes, tls => 1, sni => 'api.bank.example');
#   $r->{probes}{banks} : {sent, ok2s, slowest, failed}
#   $r->{attack}        : {wanted, opened, peak, open_avg, closed_by_server}
#   $r->{log}           : [[start, name, status, seconds, unique], ...]
#
# Attacks: idle (keep-alive, a cheap request every 4 s), slowbody (1 byte every 2 s),
# slowheader (a header line every 4 s), silent (opened, never written to), spread (idle from
# the 100 addresses 127.0.0.2-127.0.0.101).
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use Cwd ();
use File::Temp ();
use Bank::Test qw(spew);

our @EXPORT_OK = qw(probe_files hold attacks probe_table webhook_uniques check_hold rss_mib
  flood_size);

our @ATTACKS = qw(idle slowbody slowheader silent spread);
sub attacks { return @ATTACKS }

my $NOTICE = '{"service":"payments","type":"fund_transfer","data":{"amount":5000,'
  . '"charges":10.75,"currency":"NGN","narration":"Probe","receiverAccountName":"ADA OBI",'
  . '"receiverAccountNumber":"0000000019","receiverBankCode":"999","sessionId":"S@U@",'
  . '"statusCode":"T100","statusMessage":"Transaction successful",'
  . '"transactionReference":"TRF-probe-@U@","walletId":"probe-wallet"}}';

# The probe requests as build/flood reads them; returns the --probe arguments.
sub probe_files {
    my ($dir, %o) = @_;
    spew("$dir/banks.req", "GET /misc/payment_banks\nAuthorization: Bearer $o{token}\n");
    spew("$dir/webhook.req", "POST " . ($o{webhook_path} || '/webhook/partner')
        . "\nAuthorization: Bearer $o{webhook_secret}\nContent-Type: application/json\n\n$NOTICE");
    spew("$dir/health.req", "GET /health\n");
    my @hmac = $o{hmac_key} ? ('--hmac-key', $o{hmac_key}, '--hmac-header', $o{hmac_header}) : ();
    return (map({ ('--probe', "$_=$dir/$_.req") } qw(banks webhook health)), @hmac);
}

# Two processes of build/flood, started together: the attack, and the legitimate client's
# probes (so that the attacker's own work, thousands of TLS handshakes say, never delays a
# probe inside the same event loop). The attack lasts 2 s past the last probe's start.
sub hold {
    my (%o) = @_;
    my $flood = $o{flood} || Cwd::getcwd() . '/build/flood';
    die "$flood is not built (make build/flood)" unless -x $flood;
    my $log    = File::Temp->new;
    my $warmup = $o{warmup} // 3;
    my $attack = $o{attack} eq 'spread' ? 'idle' : $o{attack};
    my @common = ($flood, '--connect', $o{connect},
        ($o{tls} ? ('--tls') : ()), ($o{sni} ? ('--sni', $o{sni}) : ()));
    open my $aout, '-|', @common, '--attack', $attack, '--conns', $o{conns},
        '--seconds', $o{seconds} + 2, '--warmup', $warmup,
        ($o{attack} eq 'spread' ? ('--sources', '2-101') : ())
      or die "flood: $!";
    open my $pout, '-|', @common, '--attack', 'none', '--seconds', $o{seconds},
        '--warmup', $warmup, '--log', "$log", @{ $o{probes} || [] }
      or die "flood: $!";
    my %r = (probes => {}, attack => {}, log => []);
    if ($o{rss}) {    # the server's memory half-way through the attack
        select undef, undef, undef, $warmup + $o{seconds} / 2;
        $r{rss} = $o{rss}->();
    }
    for my $out ($pout, $aout) {
        while (my $line = <$out>) {
            if (my ($name, $rest) = $line =~ /^probe (\S+) (.*)$/) {
                $r{probes}{$name} = { $rest =~ /(\w+)=(\S+)/g };
            } elsif (my ($counts) = $line =~ /^attack (?!none)\S+ (.*)$/) {
                $r{attack} = { $counts =~ /(\w+)=(\S+)/g };
            }
        }
        close $out;
        die "flood failed: exit $?" if $?;
    }
    open my $fh, '<', "$log" or die "$log: $!";
    $r{log} = [ map { [split] } <$fh> ];
    return \%r;
}

# The uniques of the webhook probes answered 200: each is a notice the server acknowledged.
sub webhook_uniques {
    my ($r) = @_;
    return map { $_->[4] } grep { $_->[1] eq 'webhook' && $_->[2] == 200 } @{ $r->{log} };
}

# httpd's resident memory in MiB: the parent of $pidfile and its children.
sub rss_mib {
    my ($pidfile) = @_;
    open my $fh, '<', $pidfile or return 0;
    my $ppid = <$fh> // '';
    $ppid =~ s/\s+//g;
    my $kb = 0;
    for my $pid ($ppid, split ' ', `ps -o pid= --ppid $ppid`) {
        open my $st, '<', "/proc/$pid/status" or next;
        local $/;
        my ($rss) = <$st> =~ /^VmRSS:\s+(\d+)/m;
        $kb += $rss // 0;
    }
    return int($kb / 1024);
}

# The suite's bounded attack, or the full one of scripts/bench flood: (connections, seconds)
# from BANK_FLOOD_CONNS and BANK_FLOOD_SECONDS, else 3,000 for 15 s.
sub flood_size {
    return ($ENV{BANK_FLOOD_CONNS} || 3000, $ENV{BANK_FLOOD_SECONDS} || 15);
}

# Every attack against one server, with Test::More's checks: the attack held its
# connections, every probe was answered 200, at least 99% of them within 2 s. Returns the
# results by attack and the uniques of the notices acknowledged. %o: label, connect, tls,
# sni, probes, pidfile (for the memory), and conns and seconds (flood_size's by default).
sub check_hold {
    my (%o) = @_;
    my ($conns, $secs) = flood_size();
    $conns = $o{conns} if $o{conns};
    $secs  = $o{seconds} if $o{seconds};
    my (%results, @uniques);
    my ($sent, $fast) = (0, 0);
    for my $attack (attacks()) {
        my $r = hold(%o, attack => $attack, conns => $conns, seconds => $secs,
            $o{pidfile} ? (rss => sub { rss_mib($o{pidfile}) }) : ());
        $results{$attack} = $r;
        Test::More::cmp_ok($r->{attack}{peak}, '>=', $conns * 0.9,
            "$o{label} $attack: the attack held its connections");
        for my $p (qw(banks webhook health)) {
            my $x = $r->{probes}{$p};
            Test::More::cmp_ok($x->{sent}, '>=', $secs - 1, "$o{label} $attack: $p probed every second");
            Test::More::is($x->{ok2s} + $x->{failed}, $x->{sent}, "$o{label} $attack: every $p probe counted once");
            my @bad = grep { $_->[1] eq $p && $_->[2] != 200 } @{ $r->{log} };
            Test::More::is(scalar @bad, 0, "$o{label} $attack: every $p probe answered 200")
              or Test::More::diag(join "\n", map { "@$_" } @bad);
            $sent += $x->{sent};
            $fast += $x->{ok2s};
        }
        push @uniques, webhook_uniques($r);
    }
    Test::More::diag("$o{label}, $conns connections for $secs s:");
    Test::More::diag($_) for probe_table(%results);
    Test::More::cmp_ok($fast, '>=', 0.99 * $sent,
        "$o{label}: at least 99% of the probes answered within 2 s ($fast of $sent)");
    return (\%results, \@uniques);
}

# "attack | probe | within 2 s | slowest" lines for a set of results {attack => result}.
sub probe_table {
    my (%results) = @_;
    my @rows;
    for my $a (grep { $results{$_} } @ATTACKS) {
        my $r = $results{$a};
        for my $p (sort keys %{ $r->{probes} }) {
            my $x = $r->{probes}{$p};
            push @rows, sprintf('%-10s %-8s %3d/%-3d within 2 s, slowest %6.3f s, attack peak %s%s',
                $a, $p, $x->{ok2s}, $x->{sent}, $x->{slowest}, $r->{attack}{peak},
                defined $r->{rss} ? ", httpd $r->{rss} MiB" : '');
        }
    }
    return @rows;
}

1;
