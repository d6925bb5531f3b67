package Bank::OpenAPI;
# Every answer the suite receives is checked against docs/openapi.yaml by JSON::Validator
# (Debian's libjson-validator-perl), so the document cannot drift from the module unnoticed.
#
# Loading this module wraps LWP::UserAgent::request: every user agent of every test (the
# Apache::TestRequest one, those of Bank::Servers and the tests' own) is checked. An answer
# for a path below one of the API's Locations is looked up as (method, path template,
# status) in the document and validated: status documented, required headers, body against
# the schema of its media type, and no body where none is documented. Answers for other
# paths (httpd's own pages) are not the API's and are left alone.
#
# A violation fails the running test (ok(0) with the validator's messages) and is appended
# to $BANK_TEST_ROOT/openapi-violations, which scripts/run-tests checks after the suite:
# answers received in forked children (Bank::Servers::concurrent) cannot report to the
# parent's TAP stream, so the file is what catches theirs.
use strict;
use warnings FATAL => 'all';
use Exporter 'import';
use File::Basename qw(dirname);
use JSON::PP ();
use JSON::Validator::Schema::OpenAPIv3 ();
use LWP::UserAgent ();
use YAML::XS ();

our @EXPORT_OK = qw(violations load_document operation_for);

my $DOC = dirname(__FILE__) . '/../../../docs/openapi.yaml';
my ($schema, $checked, $enabled) = (undef, 0, 1);
my $main_pid = $$;

# The document as JSON::Validator uses it. Response and header objects given by $ref are
# inlined first: JSON::Validator 5.14 follows $ref inside schemas, not at those two levels.
sub load_document {
    my ($file) = @_;
    # YAML's true/false as JSON booleans, so `const: true` compares with a decoded answer.
    local $YAML::XS::Boolean = 'JSON::PP';
    my $data = YAML::XS::LoadFile($file // $DOC);
    my $deref = sub {
        my ($o) = @_;
        while (ref $o eq 'HASH' && $o->{'$ref'} && $o->{'$ref'} =~ m{^#/components/(\w+)/(\w+)$}) {
            $o = $data->{components}{$1}{$2} // die "openapi: unresolved $o->{'$ref'}";
        }
        return $o;
    };
    for my $item (values %{ $data->{paths} }) {
        for my $op (grep { ref eq 'HASH' && $_->{responses} } values %$item) {
            for my $status (keys %{ $op->{responses} }) {
                my $r = { %{ $deref->($op->{responses}{$status}) } };
                $r->{headers} = { map { $_ => $deref->($r->{headers}{$_}) } keys %{ $r->{headers} } }
                  if $r->{headers};
                $op->{responses}{$status} = $r;
            }
        }
    }
    # No coercion: JSON::Validator's OpenAPI default would let "false" pass for a boolean and
    # "5" for a number, which is exactly the drift this is here to catch.
    my $s = JSON::Validator::Schema::OpenAPIv3->new($data);
    $s->coerce({});
    return $s;
}

sub _schema { return $schema //= load_document() }

# The path template of the API endpoint a request path is served by (mod_bank refuses paths
# below an endpoint's own with 404, which the document lists per operation), or undef. The
# test server mounts the endpoints under several prefixes (t/conf/extra.conf.in).
sub operation_for {
    my ($path) = @_;
    return '/auth/sign_in'       if $path =~ m{/sign_in(?:/.*)?\z};
    return '/auth/sign_out'      if $path =~ m{/sign_out(?:/.*)?\z};
    return '/onboarding/bvn'     if $path =~ m{/onboarding/bvn(?:/.*)?\z};
    return '/misc/payment_banks' if $path =~ m{/(?:misc/payment_banks|v2/banks|short/banks)(?:/.*)?\z};
    return '/webhook/{partner}'  if $path =~ m{^/webhook/[^/]+};
    return '/metrics'            if $path =~ m{^/metrics(?:-elsewhere)?\z};
    return '/health'             if $path =~ m{^/health\z};
    return undef;
}

# The validator's complaints about one answer ($res->request is the request sent), as
# strings; () when it conforms or is not the API's.
sub violations {
    my ($res) = @_;
    my $req = $res->request or return ();
    # LWP's own answer when the server sent none (a connection closed by a killed child,
    # t/api/load/webhook_load.t): not the API's
    return () if ($res->header('Client-Warning') // '') eq 'Internal response';
    my $tmpl = operation_for($req->uri->path) // return ();
    my $method = lc $req->method;
    my $status = $res->code;
    my $s  = _schema();
    my $op = $s->get([paths => $tmpl, $method])
      or return ("$method $tmpl: the method is not documented");
    my $spec = $op->{responses}{$status}
      or return ("$method $tmpl: status $status is not documented");
    $checked++;
    my $text = $res->content // '';
    my @e;
    my %body = (exists => 0);
    if (length $text) {
        return ("$method $tmpl $status: a body where the document has none")
          unless $spec->{content};
        my $v = eval { JSON::PP->new->allow_nonref->decode($text) };
        $v = $text unless defined $v || ($res->header('Content-Type') // '') =~ /json/i;
        # The bare media type: JSON::Validator looks the schema up by the exact key.
        my ($type) = lc($res->header('Content-Type') // '') =~ m{^\s*([^;\s]+)};
        %body = (exists => 1, value => $v, content_type => $type // '');
    }
    @e = $s->validate_response([$method, $tmpl, $status], {
        body   => sub { return {%body} },
        header => sub {
            my ($name) = @_;
            my $v = $res->header($name);
            return { exists => defined $v, value => $v };
        },
    });
    return map { "$method $tmpl $status: $_" } @e;
}

# How many answers were validated so far (t/api/endpoints/openapi.t shows the hook is live).
sub checked { return $checked }

sub _report {
    my ($res, @v) = @_;
    if (open my $fh, '>>', ($ENV{BANK_TEST_ROOT} // '/tmp') . '/openapi-violations') {
        print $fh join('', map { "$0: $_\n" } @v);
        close $fh;
    }
    if ($$ != $main_pid) {    # a forked child: the file alone reports it
        warn join("\n", @v) . "\n";
        return;
    }
    require Test::More;
    Test::More::ok(0, 'answer conforms to docs/openapi.yaml')
      or Test::More::diag(join "\n", @v, $res->as_string);
}

{
    no warnings 'redefine';
    my $orig = \&LWP::UserAgent::request;
    *LWP::UserAgent::request = sub {
        my $res = $orig->(@_);
        if ($enabled) {
            my @v = violations($res);
            _report($res, @v) if @v;
        }
        return $res;
    };
}

# Off and on again, for a test that wants to look at a violation itself (t/api/endpoints/openapi.t).
sub enabled { $enabled = $_[0] if @_; return $enabled }

1;
