package Bank::BvnTest;
# Helpers for the BVN onboarding tests (t/api/*/bvn*.t): customers with identity records,
# requests, and an independent NUBAN check digit to compare the module's against.
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use JSON::PP ();
use Bank::Test;

our @EXPORT = qw(next_bvn used_bvns verifiable bvn_req bvn_post nuban next_serial customer_row
  account_count);

my @used;
my $n = 0;

# An 11-digit BVN unique to this test process (test files run one after another).
sub next_bvn {
    my $b = sprintf '%06d%05d', $$ % 1000000, $n++;
    push @used, $b;
    return $b;
}

# Every BVN this process used, for the "never logged" checks.
sub used_bvns { return @used }

# A customer with an identity record and a token. Options: first, last (the customer's),
# rec_first, rec_last, dob (the record's), abilities (default onboarding:bvn), bvn.
sub verifiable {
    my (%o) = @_;
    my $c = new_customer(first => $o{first} // 'Ada', last => $o{last} // 'Obi');
    my %v = (
        c   => $c,
        bvn => $o{bvn} // next_bvn(),
        dob => $o{dob} // '1990-04-12',
    );
    bankctl('bvn', 'add', '--bvn', $v{bvn}, '--dob', $v{dob}, '--first',
        $o{rec_first} // $c->{first}, '--last', $o{rec_last} // $c->{last},
        '--phone', $c->{phone}) unless $o{no_record};
    $v{token} = issue_token($c->{email}, '--abilities', $o{abilities} // 'onboarding:bvn');
    return \%v;
}

# (METHOD, path, options) of POST /onboarding/bvn as $v (a verifiable) with its own BVN and
# date unless given: for json_request, a server's request() or Bank::Servers::concurrent.
sub bvn_req {
    my ($v, %o) = @_;
    my $body = exists $o{body} ? $o{body}
      : { bvn_number => $o{bvn} // $v->{bvn}, date_of_birth => $o{dob} // $v->{dob} };
    return ('POST', $o{path} // '/onboarding/bvn',
        headers => { Authorization => 'Bearer ' . ($o{token} // $v->{token}) },
        body    => $body);
}

# POST /onboarding/bvn to the test server (bvn_req's options).
sub bvn_post { return json_request(bvn_req(@_)) }

# NUBAN (CBN 2020), written again here so the test does not trust the module's own.
sub nuban {
    my ($code, $serial) = @_;
    my $inst = length $code == 3 ? "000$code" : length $code == 5 ? "9$code" : $code;
    my $s9   = sprintf '%09d', $serial;
    my @d    = split //, $inst . $s9;
    my @w    = (3, 7, 3) x 5;
    my $sum  = 0;
    $sum += $d[$_] * $w[$_] for 0 .. 14;
    return $s9 . ((10 - $sum % 10) % 10);
}

# The serial the next account will get.
sub next_serial {
    return db_value(
        $ENV{BANK_DBDRIVER} eq 'sqlite3'
        ? "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'account_serials'), 0) + 1"
        : "SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence('account_serials',"
          . " 'serial')::regclass), 0) + 1");
}

# bvn|referral_code of a customer, as stored ('' for NULL), the BVN decrypted by bankctl
# (the database holds it encrypted, docs/security.md).
sub customer_row {
    my ($id) = @_;
    my $c = JSON::PP::decode_json(scalar bankctl('customer', 'show', '--id', $id));
    return join '|', $c->{bvn} // '', $c->{referralCode} // '';
}

sub account_count {
    my ($id) = @_;
    return db_value("SELECT count(*) FROM accounts WHERE customer_id = '$id'");
}


1;
