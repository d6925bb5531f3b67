package Bank::Flood;
# A sign-in flood from one process: N connections opened at once, each sending one sign-in
# (HTTP/1.1, Connection: close), read with poll(2) (no select() limit on descriptors), with
# the time from each connection's start to its whole answer. One more sign-in, the
# legitimate customer's, is started once the flood's requests are all sent.
#
#   my $r = flood($port, $n, sub { my $i = shift; ($email, $password) }, [$email, $password],
#       path => '/auth/sign_in', timeout => 30);
#   $r->{flood}  : [{status, retry_after, secs}, ...]  (status 0: no answer)
#   $r->{legit}  : {status, retry_after, secs}
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use IO::Socket::INET ();
use IO::Poll qw(POLLIN POLLOUT POLLERR POLLHUP);
use Time::HiRes ();
use JSON::PP ();

our @EXPORT_OK = qw(flood);
my $KEY = 'test-client-key-1';

sub _request {
    my ($path, $email, $password) = @_;
    my $body = JSON::PP->new->canonical->encode(
        { email => $email, password => $password, deviceToken => 'flood-device' });
    return "POST $path HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
      . "Authorization: Bearer $KEY\r\nContent-Type: application/json\r\n"
      . 'Content-Length: ' . length($body) . "\r\n\r\n$body";
}

sub _open {
    my ($port, $req) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp',
        Blocking => 0) or die "connect: $!";
    return { sock => $s, out => $req, in => '', t0 => Time::HiRes::time() };
}

sub _result {
    my ($c) = @_;
    my ($status) = $c->{in} =~ m{^HTTP/1\.\d (\d{3})};
    my ($retry)  = $c->{in} =~ m{\r\nRetry-After: *(\d+)}i;
    return { status => $status // 0, retry_after => $retry,
        secs => ($c->{t1} // Time::HiRes::time()) - $c->{t0} };
}

sub flood {
    my ($port, $n, $creds, $legit_creds, %o) = @_;
    my $timeout = $o{timeout} // 30;
    my $path    = $o{path}    // '/auth/sign_in';
    my @conns   = map { _open($port, _request($path, $creds->($_))) } 1 .. $n;
    my $legit;
    my $poll  = IO::Poll->new;
    $poll->mask($_->{sock} => POLLOUT) for @conns;
    my %by = map { ($_->{sock}->fileno => $_) } @conns;
    my $end = Time::HiRes::time() + $timeout;
    while ($poll->handles && Time::HiRes::time() < $end) {
        if (!$legit && !grep { length $_->{out} } @conns) {
            $legit = _open($port, _request($path, @$legit_creds));
            $by{ $legit->{sock}->fileno } = $legit;
            $poll->mask($legit->{sock} => POLLOUT);
        }
        $poll->poll(0.5);
        for my $s ($poll->handles) {
            my $ev = $poll->events($s) or next;
            my $c  = $by{ $s->fileno };
            if (length $c->{out} && ($ev & POLLOUT)) {
                my $w = syswrite($s, $c->{out});
                if (defined $w) {
                    substr($c->{out}, 0, $w) = '';
                    $poll->mask($s => POLLIN) unless length $c->{out};
                } elsif (!$!{EAGAIN} && !$!{EINPROGRESS}) {
                    $c->{t1} = Time::HiRes::time();
                    $poll->remove($s);
                    close $s;
                }
                next;
            }
            if ($ev & (POLLIN | POLLERR | POLLHUP)) {
                my $r = sysread($s, my $buf, 65536);
                next if !defined $r && $!{EAGAIN};
                if ($r) { $c->{in} .= $buf; next }
                $c->{t1} = Time::HiRes::time();
                $poll->remove($s);
                close $s;
            }
        }
    }
    for my $c (@conns, $legit ? $legit : ()) {
        close $c->{sock} if $c->{sock}->opened;
    }
    return { flood => [map { _result($_) } @conns], legit => $legit ? _result($legit) : undef };
}

1;
