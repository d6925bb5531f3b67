/* Request metrics: atomic updates and the Prometheus text rendering (include/bank_metrics.h,
 * docs/operations.md "Metrics"). */
#include <apr_atomic.h>
#include <string.h>
#include <apr_strings.h>
#include "bank_metrics.h"
#include "bank_version.h"

static const char *const endpoint_names[BANK_EP_COUNT] = {"sign_in", "sign_out", "bvn", "banks",
                                                          "webhook"};

/* Prometheus's default buckets from 5 ms to 10 s: they hold sign-in, whose password hash
 * alone outlasts any other answer, and the other endpoints, quick unless the database
 * waits. */
static const apr_int64_t bound_usec[BANK_METRICS_BOUNDS] = {
    5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000};
static const char *const bound_text[BANK_METRICS_BOUNDS] = {
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10"};

/* Each counter's family, label (NULL: none) and, on the first of a family, its help text. */
static const struct {
    const char *family, *label, *help;
} counters[BANK_M_COUNT] = {
    [BANK_M_SIGN_IN_OK] = {"bank_sign_ins_total", "outcome=\"ok\"",
                           "Sign-ins by outcome: ok (token issued), wrong (unknown e-mail or wrong "
                           "password), throttled (429), refused (client key missing or wrong)."},
    [BANK_M_SIGN_IN_WRONG] = {"bank_sign_ins_total", "outcome=\"wrong\"", NULL},
    [BANK_M_SIGN_IN_THROTTLED] = {"bank_sign_ins_total", "outcome=\"throttled\"", NULL},
    [BANK_M_SIGN_IN_REFUSED] = {"bank_sign_ins_total", "outcome=\"refused\"", NULL},
    [BANK_M_TOKEN_REFUSED] = {"bank_bearer_tokens_refused_total", NULL,
                              "Customer bearer tokens refused (401): missing, malformed, unknown, "
                              "revoked or expired."},
    [BANK_M_BVN_VERIFIED] = {"bank_bvn_verifications_total", "outcome=\"verified\"",
                             "BVN verifications by outcome: verified (account opened), repeat "
                             "(already verified, same BVN), mismatch, throttled, in_use, "
                             "other_bvn, invalid (a field's format)."},
    [BANK_M_BVN_REPEAT] = {"bank_bvn_verifications_total", "outcome=\"repeat\"", NULL},
    [BANK_M_BVN_MISMATCH] = {"bank_bvn_verifications_total", "outcome=\"mismatch\"", NULL},
    [BANK_M_BVN_THROTTLED] = {"bank_bvn_verifications_total", "outcome=\"throttled\"", NULL},
    [BANK_M_BVN_IN_USE] = {"bank_bvn_verifications_total", "outcome=\"in_use\"", NULL},
    [BANK_M_BVN_OTHER] = {"bank_bvn_verifications_total", "outcome=\"other_bvn\"", NULL},
    [BANK_M_BVN_INVALID] = {"bank_bvn_verifications_total", "outcome=\"invalid\"", NULL},
    [BANK_M_NOTICE_STORED] = {"bank_notices_total", "outcome=\"stored\"",
                              "Partner notices: stored, duplicate (already stored), refused "
                              "(any 4xx answer)."},
    [BANK_M_NOTICE_DUPLICATE] = {"bank_notices_total", "outcome=\"duplicate\"", NULL},
    [BANK_M_NOTICE_REFUSED] = {"bank_notices_total", "outcome=\"refused\"", NULL},
    [BANK_M_DB_ERRORS] = {"bank_db_errors_total", NULL,
                          "Database failures: no connection, or a statement that failed."},
    [BANK_M_UNAVAILABLE] = {"bank_unavailable_responses_total", NULL,
                            "Answers 503 E_UNAVAILABLE (database, or a webhook without secret)."},
#define IDP_CALLS "bank_idp_calls_total"
    [BANK_M_IDP_CALLS] = {IDP_CALLS, "provider=\"dojah\",outcome=\"match\"",
                          "Calls to an identity provider (each one billed) by provider and "
                          "outcome: match, mismatch (not found, or a name or the date differs), "
                          "unavailable (no clear answer: counts nothing), refused (credentials "
                          "or account)."},
    [BANK_M_IDP_CALLS + 1] = {IDP_CALLS, "provider=\"dojah\",outcome=\"mismatch\"", NULL},
    [BANK_M_IDP_CALLS + 2] = {IDP_CALLS, "provider=\"dojah\",outcome=\"unavailable\"", NULL},
    [BANK_M_IDP_CALLS + 3] = {IDP_CALLS, "provider=\"dojah\",outcome=\"refused\"", NULL},
    [BANK_M_IDP_CALLS + 4] = {IDP_CALLS, "provider=\"prembly\",outcome=\"match\"", NULL},
    [BANK_M_IDP_CALLS + 5] = {IDP_CALLS, "provider=\"prembly\",outcome=\"mismatch\"", NULL},
    [BANK_M_IDP_CALLS + 6] = {IDP_CALLS, "provider=\"prembly\",outcome=\"unavailable\"", NULL},
    [BANK_M_IDP_CALLS + 7] = {IDP_CALLS, "provider=\"prembly\",outcome=\"refused\"", NULL},
#undef IDP_CALLS
    [BANK_M_PUSH_SENT] = {"bank_push_total", "outcome=\"sent\"",
                          "Push messages by outcome: sent (FCM accepted it), retried (a failed "
                          "call, tried again later), failed (given up), unregistered (the "
                          "device's token is gone: device removed)."},
    [BANK_M_PUSH_RETRIED] = {"bank_push_total", "outcome=\"retried\"", NULL},
    [BANK_M_PUSH_FAILED] = {"bank_push_total", "outcome=\"failed\"", NULL},
    [BANK_M_PUSH_UNREGISTERED] = {"bank_push_total", "outcome=\"unregistered\"", NULL},
    [BANK_M_PUSH_LEAN] = {"bank_push_lean_rounds_total", NULL,
                          "Push sender rounds held to a few messages because the CPUs had "
                          "less idle time than BankPushSpareCPU or many payment notices waited "
                          "for their commit (the webhook comes first)."},
    [BANK_M_PASSWORD_PAIRS] = {"bank_password_verification_pairs_total", NULL,
                               "Pairs of password verifications computed together on one CPU: "
                               "two sign-ins waiting at once with scrypt hashes of one cost."},
    [BANK_M_FEED_FAILED] = {"bank_revocation_feed_failures_total", NULL,
                            "Reads of the token revocation feed that failed (the token cache is "
                            "distrusted until a read succeeds)."},
};

void bank_metrics_count(bank_metrics_t *m, bank_metric_t c)
{
    apr_atomic_inc64(&m->counter[c]);
}

/* A gauge one up (delta > 0) or one down. */
static void gauge_step(apr_uint64_t *g, int delta)
{
    if (delta > 0) {
        apr_atomic_inc64(g);
    } else {
        apr_atomic_dec64(g);
    }
}

void bank_metrics_committing(bank_metrics_t *m, int delta)
{
    gauge_step(&m->notices_committing, delta);
}

void bank_metrics_waiting(bank_metrics_t *m, int delta)
{
    gauge_step(&m->password_waiting, delta);
}

/* g raised to v unless it is already higher. */
static void keep_max(apr_uint64_t *g, apr_uint64_t v)
{
    apr_uint64_t max;

    while ((max = apr_atomic_read64(g)) < v && apr_atomic_cas64(g, v, max) != max) {
    }
}

void bank_metrics_running(bank_metrics_t *m, apr_uint64_t now)
{
    keep_max(&m->password_running_max, now);
}

void bank_metrics_feed_read(bank_metrics_t *m, apr_time_t started)
{
    keep_max(&m->feed_read_sec, (apr_uint64_t)apr_time_sec(started));
}

void bank_metrics_server_error(bank_metrics_t *m, bank_endpoint_t e)
{
    if (e >= 0 && e < BANK_EP_COUNT) {
        apr_atomic_inc64(&m->server_errors[e]);
    }
}

static void observe(bank_histogram_t *h, apr_interval_time_t took)
{
    int i = 0;

    if (took < 0) {
        took = 0;
    }
    while (i < BANK_METRICS_BOUNDS && took > bound_usec[i]) {
        i++;
    }
    apr_atomic_inc64(&h->slot[i]);
    apr_atomic_add64(&h->sum_usec, (apr_uint64_t)took);
}

void bank_metrics_observe(bank_metrics_t *m, bank_endpoint_t e, apr_interval_time_t took)
{
    if (e >= 0 && e < BANK_EP_COUNT) {
        observe(&m->latency[e], took);
    }
}

void bank_metrics_push_call(bank_metrics_t *m, apr_interval_time_t took)
{
    observe(&m->push_calls, took);
}

void bank_metrics_push_backlog(bank_metrics_t *m, apr_uint64_t rows)
{
    apr_atomic_set64(&m->push_backlog, rows);
}

const char *bank_metrics_endpoint(bank_endpoint_t e)
{
    return e >= 0 && e < BANK_EP_COUNT ? endpoint_names[e] : "none";
}

static const char *family_head(apr_pool_t *p, const char *name, const char *type, const char *help)
{
    return apr_psprintf(p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static const char *render_counters(apr_pool_t *p, const bank_metrics_t *m)
{
    const char *out = "";
    int c;

    for (c = 0; c < BANK_M_COUNT; c++) {
        apr_uint64_t v = apr_atomic_read64((volatile apr_uint64_t *)&m->counter[c]);

        if (counters[c].help) {
            out =
                apr_pstrcat(p, out, family_head(p, counters[c].family, "counter", counters[c].help),
                            (char *)NULL);
        }
        out = apr_psprintf(p, "%s%s%s%s%s %" APR_UINT64_T_FMT "\n", out, counters[c].family,
                           counters[c].label ? "{" : "", counters[c].label ? counters[c].label : "",
                           counters[c].label ? "}" : "", v);
    }
    return out;
}

/* One series (labels: "endpoint=\"x\"," or ""); buckets are cumulative and the +Inf bucket
 * is the count, so the three always agree even while other processes add observations. */
static const char *render_histogram(apr_pool_t *p, const bank_histogram_t *h, const char *name,
                                    const char *labels)
{
    const char *out = "", *only = apr_pstrndup(p, labels, strlen(labels) ? strlen(labels) - 1 : 0);
    apr_uint64_t total = 0, sum;
    int i;

    for (i = 0; i <= BANK_METRICS_BOUNDS; i++) {
        total += apr_atomic_read64((volatile apr_uint64_t *)&h->slot[i]);
        out = apr_psprintf(p, "%s%s_bucket{%sle=\"%s\"} %" APR_UINT64_T_FMT "\n", out, name, labels,
                           i < BANK_METRICS_BOUNDS ? bound_text[i] : "+Inf", total);
    }
    sum = apr_atomic_read64((volatile apr_uint64_t *)&h->sum_usec);
    return apr_psprintf(p,
                        "%s%s_sum%s%s%s %" APR_UINT64_T_FMT ".%06" APR_UINT64_T_FMT
                        "\n%s_count%s%s%s %" APR_UINT64_T_FMT "\n",
                        out, name, *only ? "{" : "", only, *only ? "}" : "", sum / 1000000,
                        sum % 1000000, name, *only ? "{" : "", only, *only ? "}" : "", total);
}

/* out, then a gauge family of one sample. */
const char *bank_metrics_gauge(apr_pool_t *p, const char *name, const char *help,
                               apr_uint64_t value)
{
    return apr_psprintf(p, "%s%s %" APR_UINT64_T_FMT "\n", family_head(p, name, "gauge", help),
                        name, value);
}

static const char *render_gauge(apr_pool_t *p, const char *out, const char *name, const char *help,
                                const apr_uint64_t *v)
{
    return apr_pstrcat(
        p, out, bank_metrics_gauge(p, name, help, apr_atomic_read64((volatile apr_uint64_t *)v)),
        (char *)NULL);
}

/* The families labelled by endpoint: latency histograms and 5xx answers. */
static const char *render_endpoints(apr_pool_t *p, const bank_metrics_t *m)
{
    const char *out = family_head(p, "bank_request_duration_seconds", "histogram",
                                  "Time from the request's arrival to the end of the handler.");
    int e;

    for (e = 0; e < BANK_EP_COUNT; e++) {
        out = apr_pstrcat(p, out,
                          render_histogram(p, &m->latency[e], "bank_request_duration_seconds",
                                           apr_psprintf(p, "endpoint=\"%s\",", endpoint_names[e])),
                          (char *)NULL);
    }
    out = apr_pstrcat(p, out,
                      family_head(p, "bank_server_errors_total", "counter",
                                  "Answers with a 5xx status, per endpoint."),
                      (char *)NULL);
    for (e = 0; e < BANK_EP_COUNT; e++) {
        out = apr_psprintf(p, "%sbank_server_errors_total{endpoint=\"%s\"} %" APR_UINT64_T_FMT "\n",
                           out, endpoint_names[e],
                           apr_atomic_read64((volatile apr_uint64_t *)&m->server_errors[e]));
    }
    return out;
}

const char *bank_metrics_prometheus(apr_pool_t *p, const bank_metrics_t *m)
{
    const char *out = render_counters(p, m);

    out = render_gauge(p, out, "bank_password_verifications_waiting",
                       "Sign-ins admitted to a password verification (scrypt or bcrypt) and not "
                       "yet finished: waiting for a turn or computing.",
                       &m->password_waiting);
    out = render_gauge(p, out, "bank_password_verifications_running_max",
                       "The most password verifications computing at once in all processes "
                       "together, as the server-wide bound counts them "
                       "(BankPasswordVerifyServerConcurrency).",
                       &m->password_running_max);
    out = apr_pstrcat(p, out, render_endpoints(p, m), (char *)NULL);
    out = render_gauge(p, out, "bank_revocation_feed_last_read_timestamp_seconds",
                       "When the latest good read of a token revocation feed started, in "
                       "seconds since the epoch (0: none yet).",
                       &m->feed_read_sec);
    out = render_gauge(p, out, "bank_push_backlog",
                       "Push messages still to send (the outbox's pending rows), as the sender "
                       "last counted them.",
                       &m->push_backlog);
    return apr_pstrcat(
        p, out,
        family_head(p, "bank_push_send_duration_seconds", "histogram",
                    "Time of each FCM messages:send call, from its start to its answer (or "
                    "timeout)."),
        render_histogram(p, &m->push_calls, "bank_push_send_duration_seconds", ""),
        family_head(p, "bank_build_info", "gauge", "The running mod_bank's version (always 1)."),
        "bank_build_info{version=\"" BANK_VERSION "\"} 1\n", (char *)NULL);
}

static bank_metrics_t *shared;

void bank_metrics_share(bank_metrics_t *m)
{
    shared = m;
}

bank_metrics_t *bank_metrics_shared(void)
{
    return shared;
}
