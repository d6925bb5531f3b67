package Bank::Webhook;
# Helpers for the webhook tests: notices as the partner sends them, signatures computed by
# OpenSSL's command-line tool (not by the module's code), and deliveries.
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use File::Temp ();
use JSON::PP ();
use Bank::Test;

our @EXPORT = qw(notice notice_json hmac delivery deliver stored stored_count secrets_in_log
  $SECRET_OLD $SECRET_NEW $HMAC_KEY);

our $SECRET_OLD = 'test-webhook-secret-old';
our $SECRET_NEW = 'test-webhook-secret-new';
our $HMAC_KEY   = 'test-hmac-key-123';    # /webhook/signed: X-Partner-Signature, sha512

my $json = JSON::PP->new->canonical;

# A valid fund-transfer notice with a fresh reference; %o overrides data fields (undef
# deletes one), and service/type.
sub notice {
    my (%o) = @_;
    my $u = unique();
    my %n = (
        service => 'payments',
        type    => 'fund_transfer',
        data    => {
            amount                => 5000,
            charges               => 10.75,
            currency              => 'NGN',
            narration             => 'Rent for November',
            receiverAccountName   => 'ADA OBI',
            receiverAccountNumber => '0123456789',
            receiverBankCode      => '999',
            sessionId             => "SES$u",
            statusCode            => 'T100',
            statusMessage         => 'Transaction successful',
            transactionReference  => "TRF-$u",
            walletId              => "WAL-$u",
        },
    );
    for my $k (keys %o) {
        my $slot = ($k eq 'service' || $k eq 'type') ? \%n : $n{data};
        if (defined $o{$k}) { $slot->{$k} = $o{$k} } else { delete $slot->{$k} }
    }
    return \%n;
}

sub notice_json { return $json->encode($_[0]) }

# Hex HMAC of the exact bytes, by `openssl dgst`.
sub hmac {
    my ($bytes, $key, $alg) = @_;
    my $tmp = File::Temp->new;
    binmode $tmp;
    print $tmp $bytes;
    close $tmp;
    my $out = `openssl dgst -${\ ($alg || 'sha512')} -hmac '$key' -r '$tmp'`;
    die "openssl dgst failed" if $? || $out !~ /^([0-9a-f]+) /;
    return $1;
}

# (METHOD, path, options) of a delivery of a notice (hash ref or exact text): for
# json_request, a server's request() or Bank::Servers::concurrent. Options: path
# (/webhook/partner), secret (default the new one; undef: no Authorization), headers,
# content_type.
sub delivery {
    my ($body, %o) = @_;
    my $text = ref $body ? notice_json($body) : $body;
    my %h    = %{ $o{headers} || {} };
    my $secret = exists $o{secret} ? $o{secret} : $SECRET_NEW;
    $h{Authorization} = "Bearer $secret" if defined $secret;
    return ('POST', $o{path} || '/webhook/partner', headers => \%h, body => $text,
        exists $o{content_type} ? (content_type => $o{content_type}) : ());
}

# POSTs a notice to the test server (delivery's options).
sub deliver { return json_request(delivery(@_)) }

# One column of the stored notice with this reference (and partner), or undef.
sub stored {
    my ($ref, $col, $partner) = @_;
    my $v = db_value("SELECT COALESCE(CAST($col AS TEXT), '<NULL>') FROM payment_notices"
          . " WHERE transaction_reference = '$ref' AND partner = '${\ ($partner || 'partner')}'");
    return $v eq '' ? undef : $v eq '<NULL>' ? 'NULL' : $v;
}

sub stored_count {
    my ($ref) = @_;
    return db_value("SELECT count(*) FROM payment_notices WHERE transaction_reference = '$ref'");
}

# Which of the given secrets appear in the whole error log (should be none).
sub secrets_in_log {
    my @secrets = @_;
    my $log = error_log_since(0);
    return grep { index($log, $_) >= 0 } @secrets;
}

1;
