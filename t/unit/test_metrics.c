/* Unit tests for the metrics block and its Prometheus text (include/bank_metrics.h). */
#include <apr_atomic.h>
#include <apr_strings.h>
#include "unit.h"

#include "bank_metrics.h"

/* 1 if text holds the whole line. */
static int has_line(const char *text, const char *line)
{
    apr_size_t n = strlen(line);
    const char *at = text;

    while ((at = strstr(at, line)) != NULL) {
        if ((at == text || at[-1] == '\n') && at[n] == '\n') {
            return 1;
        }
        at += n;
    }
    return 0;
}

static void test_counters(apr_pool_t *p)
{
    bank_metrics_t m;
    const char *t;

    memset(&m, 0, sizeof(m));
    bank_metrics_count(&m, BANK_M_SIGN_IN_OK);
    bank_metrics_count(&m, BANK_M_SIGN_IN_OK);
    bank_metrics_count(&m, BANK_M_SIGN_IN_REFUSED);
    bank_metrics_count(&m, BANK_M_NOTICE_DUPLICATE);
    bank_metrics_count(&m, BANK_M_DB_ERRORS);
    bank_metrics_waiting(&m, 1);
    bank_metrics_waiting(&m, 1);
    bank_metrics_waiting(&m, -1);
    t = bank_metrics_prometheus(p, &m);
    CHECK(has_line(t, "# TYPE bank_sign_ins_total counter"));
    CHECK(has_line(t, "bank_sign_ins_total{outcome=\"ok\"} 2"));
    CHECK(has_line(t, "bank_sign_ins_total{outcome=\"wrong\"} 0"));
    CHECK(has_line(t, "bank_sign_ins_total{outcome=\"refused\"} 1"));
    CHECK(has_line(t, "bank_notices_total{outcome=\"duplicate\"} 1"));
    CHECK(has_line(t, "bank_db_errors_total 1"));
    CHECK(has_line(t, "bank_bearer_tokens_refused_total 0"));
    CHECK(has_line(t, "# TYPE bank_password_verifications_waiting gauge"));
    CHECK(has_line(t, "bank_password_verifications_waiting 1"));
    CHECK(has_line(t, "# TYPE bank_password_verifications_running_max gauge"));
    CHECK(has_line(t, "bank_password_verifications_running_max 0"));
    /* the most ever seen at once is kept, a lower count later does not lower it */
    bank_metrics_running(&m, 3);
    bank_metrics_running(&m, 2);
    t = bank_metrics_prometheus(p, &m);
    CHECK(has_line(t, "bank_password_verifications_running_max 3"));
    /* one HELP and one TYPE per family, before its first sample */
    CHECK(strstr(t, "# TYPE bank_sign_ins_total") < strstr(t, "bank_sign_ins_total{"));
    CHECK(strstr(strstr(t, "# TYPE bank_sign_ins_total") + 1, "# TYPE bank_sign_ins_total") ==
          NULL);
    CHECK(t[strlen(t) - 1] == '\n');
}

static void test_histogram(apr_pool_t *p)
{
    bank_metrics_t m;
    const char *t;

    memset(&m, 0, sizeof(m));
    bank_metrics_observe(&m, BANK_EP_BVN, 5000);     /* on a bound: in it (le is <=) */
    bank_metrics_observe(&m, BANK_EP_BVN, 5001);     /* the next one */
    bank_metrics_observe(&m, BANK_EP_BVN, 60000);    /* 0.1 */
    bank_metrics_observe(&m, BANK_EP_BVN, 20000000); /* beyond 10 s: +Inf only */
    bank_metrics_observe(&m, BANK_EP_BVN, -3);       /* a clock step back counts as 0 */
    bank_metrics_observe(&m, BANK_EP_NONE, 1000);    /* not an endpoint: ignored */
    t = bank_metrics_prometheus(p, &m);
    CHECK(has_line(t, "# TYPE bank_request_duration_seconds histogram"));
    CHECK(has_line(t, "bank_request_duration_seconds_bucket{endpoint=\"bvn\",le=\"0.005\"} 2"));
    CHECK(has_line(t, "bank_request_duration_seconds_bucket{endpoint=\"bvn\",le=\"0.01\"} 3"));
    CHECK(has_line(t, "bank_request_duration_seconds_bucket{endpoint=\"bvn\",le=\"0.05\"} 3"));
    CHECK(has_line(t, "bank_request_duration_seconds_bucket{endpoint=\"bvn\",le=\"0.1\"} 4"));
    CHECK(has_line(t, "bank_request_duration_seconds_bucket{endpoint=\"bvn\",le=\"10\"} 4"));
    CHECK(has_line(t, "bank_request_duration_seconds_bucket{endpoint=\"bvn\",le=\"+Inf\"} 5"));
    CHECK(has_line(t, "bank_request_duration_seconds_count{endpoint=\"bvn\"} 5"));
    CHECK(has_line(t, "bank_request_duration_seconds_sum{endpoint=\"bvn\"} 20.070001"));
    CHECK(has_line(t, "bank_request_duration_seconds_count{endpoint=\"sign_in\"} 0"));
    CHECK(has_line(t, "bank_request_duration_seconds_sum{endpoint=\"webhook\"} 0.000000"));
    CHECK_STR(bank_metrics_endpoint(BANK_EP_SIGN_OUT), "sign_out");
    CHECK_STR(bank_metrics_endpoint(BANK_EP_NONE), "none");
}

static void run_tests(apr_pool_t *p)
{
    apr_atomic_init(p);
    test_counters(p);
    test_histogram(p);
}
