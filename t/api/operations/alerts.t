# The alerting rules and the Grafana dashboard the package ships (packaging/monitoring/,
# docs/operations.md "Alerts and the dashboard"): promtool accepts the rules and their unit
# tests pass; every alert has a test where it fires and one where it stays silent, a
# severity and a runbook heading in docs/operations.md; the dashboard is JSON whose queries
# parse as PromQL; and every metric a rule or a panel names is one this server's /metrics
# really exports.
use strict;
use warnings FATAL => 'all';
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use File::Temp ();
use JSON::PP ();
use YAML::XS ();
use Cwd ();
use Bank::Test qw(slurp spew);
use Bank::Docs qw(doc_block substitute);

my $dir = 'packaging/monitoring';
my $tmp = File::Temp::tempdir(CLEANUP => 1);

# --- promtool: the rules load, their unit tests pass (docs/operations.md's lines) ----------------
my $sh = substitute(doc_block('docs/operations.md', 'operations-promtool'), 'operations.md',
    '/usr/share/mod_bank/monitoring' => Cwd::abs_path($dir));
spew("$tmp/promtool.sh", $sh);
my $out = `sh -e '$tmp/promtool.sh' 2>&1`;
is($?, 0, 'promtool check rules alerts.yml; promtool test rules alerts_test.yml') or diag($out);
like($out, qr/SUCCESS: \d+ rules found/, 'promtool check rules: SUCCESS') or diag($out);
like($out, qr/Unit Testing:  alerts_test\.yml\n  SUCCESS/, 'promtool test rules: SUCCESS') or diag($out);

# --- the Prometheus configuration docs/operations.md shows ---------------------------------------
my $prom = doc_block('docs/operations.md', 'operations-prometheus');
my $conf = YAML::XS::Load($prom);
is_deeply($conf->{rule_files}, ['/usr/share/mod_bank/monitoring/alerts.yml'], 'rule_files: the packaged rules');
is($conf->{scrape_configs}[0]{job_name}, 'mod_bank', 'the scrape job is mod_bank');
is($conf->{scrape_configs}[0]{metrics_path}, '/metrics', 'it scrapes /metrics');
spew("$tmp/prometheus.yml", substitute($prom, 'operations.md',
    '/usr/share/mod_bank/monitoring' => Cwd::abs_path($dir)));
$out = `promtool check config '$tmp/prometheus.yml' 2>&1`;
is($?, 0, 'promtool check config: the configuration and the rules it names') or diag($out);

# --- every alert: a firing test, a silent test, a severity, a runbook -------------------------------
my @alerts = map { @{ $_->{rules} } } @{ YAML::XS::LoadFile("$dir/alerts.yml")->{groups} };
my %alert = map { $_->{alert} => $_ } @alerts;
cmp_ok(scalar @alerts, '>=', 15, 'alerts.yml: ' . scalar(@alerts) . ' alerts');
is(scalar(keys %alert), scalar @alerts, 'alerts.yml: each name once');
my (%fires, %silent);
for my $t (@{ YAML::XS::LoadFile("$dir/alerts_test.yml")->{tests} }) {
    for my $c (@{ $t->{alert_rule_test} // [] }) {
        (@{ $c->{exp_alerts} // [] } ? \%fires : \%silent)->{ $c->{alertname} }++;
    }
}
my $ops = slurp('docs/operations.md');
for my $a (@alerts) {
    my $name = $a->{alert};
    ok($fires{$name},  "$name: a test where it fires");
    ok($silent{$name}, "$name: a test where it stays silent");
    like($a->{labels}{severity} // '', qr/^(critical|warning)$/, "$name: severity critical or warning");
    is($a->{annotations}{runbook} // '', 'docs/operations.md#' . lc $name, "$name: its runbook anchor");
    ok($ops =~ /^#### \Q$name\E$/m, "$name: a runbook heading in docs/operations.md");
    like($a->{annotations}{summary} // '', qr/\S/, "$name: a summary");
}
is_deeply([sort grep { !$alert{$_} } keys %fires, keys %silent], [], 'the tests name no other alert');

# --- the metrics /metrics exports --------------------------------------------------------------------
my $res = GET('/metrics');
is($res->code, 200, 'GET /metrics');
my %exported;
for ($res->content =~ /^# TYPE (\S+ \S+)$/mg) {
    my ($name, $type) = split / /;
    $exported{$name} = 1;
    $exported{"${name}_$_"} = 1 for $type eq 'histogram' ? qw(bucket sum count) : ();
}
ok($exported{bank_request_duration_seconds_bucket}, 'a histogram: its _bucket series count as exported');

# The bank_ metrics an expression names that /metrics does not export.
sub unknown {
    my ($expr) = @_;
    my %seen;
    return [sort grep { !$exported{$_} && !$seen{$_}++ } $expr =~ /\b(bank_[a-z0-9_]+)/g];
}
is_deeply(unknown('rate(bank_sign_in_total[5m]) + bank_push_backlog'), ['bank_sign_in_total'],
    'the check finds a misspelt metric (it can fail)');

for my $a (@alerts) {
    my @names = $a->{expr} =~ /\b(bank_[a-z0-9_]+)/g;
    is_deeply(unknown($a->{expr}), [], "$a->{alert}: every metric it names is exported (@names)");
}

# --- the dashboard ---------------------------------------------------------------------------------
my $dash = JSON::PP->new->decode(slurp("$dir/dashboard.json"));
ok(ref $dash eq 'HASH', 'dashboard.json is a JSON object');
cmp_ok($dash->{schemaVersion} // 0, '>=', 37, 'dashboard: schemaVersion 37 or later');
my ($ds) = grep { $_->{type} eq 'datasource' } @{ $dash->{templating}{list} };
is($ds && $ds->{query}, 'prometheus', 'dashboard: a Prometheus data source variable');
my @exprs = map { ref $_->{query} ? $_->{query}{query} : () } @{ $dash->{templating}{list} };
my @panels = map { ($_, @{ $_->{panels} // [] }) } @{ $dash->{panels} };
for my $p (grep { $_->{type} ne 'row' } @panels) {
    my @t = map { $_->{expr} } @{ $p->{targets} // [] };
    ok(@t && !grep({ !defined || !/\bbank_/ } @t), "panel '$p->{title}': queries on bank_ metrics");
    is_deeply(unknown($_), [], "panel '$p->{title}': every metric exported: $_") for @t;
    is($p->{datasource}{uid}, '${datasource}', "panel '$p->{title}': the data source variable");
    push @exprs, @t;
}
my $all = join "\n", @exprs;
for my $want (qw(bank_request_duration_seconds_bucket bank_server_errors_total bank_push_backlog
    bank_push_send_duration_seconds_bucket bank_revocation_feed_last_read_timestamp_seconds
    bank_idp_breaker_open bank_sign_ins_total bank_password_verifications_waiting bank_db_errors_total)) {
    like($all, qr/\b\Q$want\E\b/, "dashboard: a panel shows $want");
}
like($all, qr/histogram_quantile\(0\.99, sum by \(endpoint, le\) \(rate\(bank_request_duration_seconds_bucket/,
    'dashboard: p99 latency per endpoint from the histogram');

# Every query parses as PromQL: as recording rules (Grafana's variables given values) through
# promtool check rules.
my $rules = File::Temp->new(SUFFIX => '.yml');
print $rules "groups:\n  - name: dashboard\n    rules:\n";
for my $i (0 .. $#exprs) {
    my $e = $exprs[$i] =~ s/\$__rate_interval/5m/gr =~ s/\$instance/.*/gr;
    $e = "group by (instance) ($1)" if $e =~ /^label_values\((\w+), \w+\)$/;
    print $rules "      - record: dashboard_query_$i\n        expr: " . JSON::PP->new->encode([$e]) =~ s/^\[|\]$//gr
      . "\n";
}
close $rules;
$out = `promtool check rules $rules 2>&1`;
is($?, 0, 'dashboard: every query parses as PromQL (promtool check rules)') or diag($out);

done_testing();
