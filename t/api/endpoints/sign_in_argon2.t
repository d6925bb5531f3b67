# argon2 (docs/migration.md): customers whose stored hash is argon2id, argon2i or argon2d as
# AdonisJS's argon2 driver writes it sign in with their passwords, and only with them. And
# the hash an unknown e-mail is verified against follows the stored hashes: on a database
# where most hashes are bcrypt of cost 12, an unknown e-mail takes as long as a wrong
# password (BankPasswordDummyRefresh 1 in the test configuration: sampled every second).
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time sleep);
use Bank::Test;
use Bank::SignIn qw(hash_majority);

my $KEY = 'Bearer test-client-key-1';

sub sign_in {
    my ($email, $password) = @_;
    return json_request('POST', '/auth/sign_in', headers => { Authorization => $KEY },
        body => { email => $email, password => $password, deviceToken => 'argon2-test' });
}

# Made by node's argon2 package (the one AdonisJS's driver uses) for "secret-Pa55", with the
# driver's defaults (m=65536, t=3, p=4) and in its layout; the same as t/unit/test_password.c.
my %hashes = (
    argon2id => '$argon2id$v=19$m=65536,t=3,p=4$69FjE/fPLzZfE7lBLrrTTA$YAuYW3A3BFB3pCPTyxhRv/qrn4/wOad/SX/rjCS3xbQ',
    argon2i  => '$argon2i$v=19$m=65536,t=3,p=4$73LO17EUE3Dft8NyH2rAlw$v6XaCEP8XD5pL/2w4Me0+Dc8XQRsgJhz20c2c8FBsqM',
    argon2d  => '$argon2d$v=19$m=65536,t=3,p=4$6xdig7ahkSgrQ3EdbKlADw$mw30uHHk/sttc/VYh/1qIq2HGJEH6wXYZ228/tUpA8Q',
);
for my $type (sort keys %hashes) {
    my $c = new_customer();
    db_exec("UPDATE customers SET password = '$hashes{$type}' WHERE id = '$c->{id}'");
    my $res = sign_in($c->{email}, 'secret-Pa55');
    is($res->code, 200, "$type: signs in with its password") or diag($res->as_string);
    is(decode_body($res)->{body}{customer}{customerId}, $c->{id}, "$type: as that customer");
    assert_error(sign_in($c->{email}, 'secret-Pa56'), 400, 'E_INVALID_CREDENTIALS',
        "$type: a wrong password");
}

# --- the dummy follows the stored hashes ---------------------------------------------------
# Compared by the CPU time the test server's processes spend (utime + stime of httpd and its
# children, from /proc), which the machine's other load disturbs far less than wall-clock
# time; the wall-clock medians are shown too.
my $vars = Apache::Test::vars();
my $tick = 100;    # USER_HZ on Linux

# CPU ticks of httpd and each of its children: { pid => utime + stime }
sub server_cpu {
    my $ppid = do { local (@ARGV, $/) = "$vars->{t_logs}/httpd.pid"; my $p = <>; chomp $p; $p };
    my %cpu;
    for my $stat (glob '/proc/[0-9]*/stat') {
        open my $fh, '<', $stat or next;
        my $line = <$fh> // next;
        my ($pid) = $stat =~ m{/proc/(\d+)/};
        my @f = split ' ', substr($line, rindex($line, ')') + 2);    # from field 3 on
        $cpu{$pid} = $f[11] + $f[12] if $pid == $ppid || $f[1] == $ppid;    # utime, stime
    }
    return \%cpu;
}

sub median { my @s = sort { $a <=> $b } @_; return $s[$#s / 2] }

sub timed {
    my ($email, $password) = @_;
    my $t0  = time;
    my $res = sign_in($email, $password);
    my $t   = time - $t0;
    is($res->code, 400, "refused ($email)");
    return $t;
}

sub unknown_times {
    return map { timed('nobody-' . unique() . '@example.com', 'guess') } 1 .. $_[0];
}

# (CPU seconds of the server, wall-clock median) of running $code $n times. A child that
# exits meanwhile (httpd stops spare processes) takes its CPU time with it: then the run is
# measured again.
sub cost {
    my ($n, $code) = @_;
    for my $try (1 .. 4) {
        my $before = server_cpu();
        my @t      = map { $code->($_) } 1 .. $n;
        my $after  = server_cpu();
        my @gone   = grep { !exists $after->{$_} } keys %$before;
        if (@gone && $try < 4) {
            diag("server process(es) @gone ended during the measurement: measured again");
            next;
        }
        my $ticks = 0;
        $ticks += $after->{$_} - ($before->{$_} // 0) for keys %$after;
        return ($ticks / $tick, median(@t));
    }
}

chomp(my $bcrypt = `htpasswd -nbB -C 12 user bcrypt-pw`);
$bcrypt =~ s/^user://;
$bcrypt =~ s/\s+\z//;
like($bcrypt, qr/^\$2y\$12\$/, 'a bcrypt hash of cost 12');

my $N = 8;
# AdonisJS's scrypt default (t/unit/test_password.c's fixture, of "password")
my $scrypt = '$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$IDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit8aQeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA';
my $mostly = hash_majority($scrypt);
sleep 1.2;
unknown_times(3);    # each process samples the hashes again (not measured)
my ($cb, $mb) = cost($N, sub { unknown_times(1) });
db_exec("DELETE FROM customers WHERE email LIKE '$mostly.%'");

$mostly = hash_majority($bcrypt);
my $mark = error_log_mark();
sleep 1.2;
unknown_times(3);
my ($ca, $ma) = cost($N, sub { unknown_times(1) });
my ($cw, $mw) = cost($N, sub { timed("$mostly.$_[0]\@example.com", 'not-it') });
like(error_log_since($mark),
    qr/BANK2001: unknown e-mails are now verified against a \$2b\$12 hash, the most common of \d+ stored hashes sampled/,
    'the dummy follows: bcrypt cost 12, logged');
diag(sprintf "server CPU for $N sign-ins: unknown e-mail %.2f s (scrypt majority), %.2f s "
      . '(bcrypt-12 majority); wrong bcrypt password %.2f s. Wall-clock medians: %.0f, %.0f, '
      . '%.0f ms', $cb, $ca, $cw, 1000 * $mb, 1000 * $ma, 1000 * $mw);
cmp_ok($ca, '>', 0.7 * $cw, 'an unknown e-mail costs what a wrong password costs (not less)');
cmp_ok($ca, '<', 1.4 * $cw, 'nor more');
cmp_ok($ca, '>', 2 * $cb, 'and more than with a scrypt majority');

# The rows go; within a second the dummy follows what is left (for the tests after this one).
db_exec("DELETE FROM customers WHERE email LIKE '$mostly.%'");
$mark = error_log_mark();
sleep 1.2;
unknown_times(4);
like(error_log_since($mark), qr/BANK2001: unknown e-mails are now verified against a (?!\$2b\$12 )\S+ hash/,
    'once the bcrypt rows are gone, it follows the others again');

done_testing();
