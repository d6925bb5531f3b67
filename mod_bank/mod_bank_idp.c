/* BVN verification by an identity provider, httpd side (docs/identity.md): what the
 * Location configures, the per-thread CURL handle, the circuit breaker shared by its processes, the
 * operator's log lines (never a BVN, a date or a credential) and the 503 answers. */
#include <apr_strings.h>
#include <apr_thread_proc.h>
#include <apr_shm.h>
#include <strings.h>
#include <http_protocol.h>
#include <http_config.h>
#include "mod_bank_idp.h"
#include "mod_bank_http.h"
#include "mod_bank_metrics.h"
#include "bank_rand.h"

APLOG_USE_MODULE(bank);

static bank_idp_breaker_t *breaker = NULL;
/* 1 when the configuration names a provider anywhere (BankBvnProvider other than none). */
static int provider_configured = 0;

static int names_provider(const ap_directive_t *d)
{
    for (; d; d = d->next) {
        if (!strcasecmp(d->directive, "BankBvnProvider") && d->args &&
            strncasecmp(d->args, "none", 4) != 0) {
            return 1;
        }
        if (d->first_child && names_provider(d->first_child)) {
            return 1;
        }
    }
    return 0;
}

const char *bank_idp_health(void)
{
    if (!provider_configured) {
        return "none";
    }
    return bank_idp_breaker_any_open(breaker, apr_time_now()) ? "circuit_open" : "ok";
}

#define IDP_UNAVAILABLE "BVN verification is unavailable right now; try again later"

int bank_idp_post_config(apr_pool_t *pconf, server_rec *s)
{
    apr_shm_t *shm = NULL;

    provider_configured = names_provider(ap_conftree);
    if (bank_idp_global_init() != 0) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     BANKLOGNO(1902) "libcurl failed to initialise: no identity provider calls");
    }
    /* Anonymous shared memory, inherited by the children: one breaker for all of them. It
     * goes with pconf, and a restart makes a new one (all closed). */
    if (apr_shm_create(&shm, bank_idp_breaker_size(), NULL, pconf) != APR_SUCCESS) {
        breaker = NULL;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     BANKLOGNO(1002) "no shared memory for the identity provider's circuit "
                                     "breaker: running without one");
        return OK;
    }
    breaker = bank_idp_breaker_at(apr_shm_baseaddr_get(shm));
    return OK;
}

bank_idp_kind bank_idp_kind_of(request_rec *r)
{
    bank_idp_conf_t c;
    bank_conf_idp(bank_conf(r), &c);
    return c.kind;
}

/* A pool that lives as long as this thread, for its CURL handle (the connection's when the
 * MPM gives no thread of its own). */
static apr_pool_t *thread_pool(request_rec *r)
{
#if APR_HAS_THREADS && AP_HAS_THREAD_LOCAL
    apr_thread_t *t = ap_thread_current();
    if (t) {
        return apr_thread_pool_get(t);
    }
#endif
    return r->connection->pool;
}

/* A call to the provider (c, called name) that gave no verdict on the identity: logged, counted
 * by the circuit breaker (which may open now), and 503. */
static int call_failed(request_rec *r, const bank_idp_conf_t *c, const char *name,
                       const bank_idp_result_t *out, int *retry_after)
{
    if (out->verdict == BANK_IDP_REFUSED) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(1007) "identity provider %s at %s refused the request: %s "
                                      "(HTTP %ld); check BankBvnProviderCredentials and the "
                                      "provider account",
                      name, c->base_url, out->why, out->http_status);
    } else {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      BANKLOGNO(1008) "identity provider %s at %s unavailable: %s", name,
                      c->base_url, out->why);
    }
    if (bank_idp_breaker_record(breaker, c->base_url, 0, apr_time_now())) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(1009) "identity provider %s at %s failed %d times in a row: "
                                      "circuit breaker open, no calls for %d seconds",
                      name, c->base_url, BANK_IDP_BREAKER_FAILURES, BANK_IDP_BREAKER_OPEN);
    }
    *retry_after = BANK_IDP_RETRY_AFTER;
    return HTTP_SERVICE_UNAVAILABLE;
}

/* Asks the Location's provider about q without answering: OK, or HTTP_SERVICE_UNAVAILABLE
 * (logged) with the seconds for Retry-After. */
static int bank_idp_verify(request_rec *r, const bank_idp_query_t *q, bank_idp_result_t *out,
                           int *retry_after)
{
    bank_idp_conf_t c;
    const char *name;
    apr_time_t start;
    int wait;

    bank_conf_idp(bank_conf(r), &c);
    name = bank_idp_kind_name(c.kind);
    if (!c.app_id || !c.secret) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(1003) "BankBvnProvider %s is set here but "
                                      "BankBvnProviderCredentials is not: answering 503",
                      name);
        *retry_after = BANK_IDP_RETRY_AFTER;
        return HTTP_SERVICE_UNAVAILABLE;
    }
    start = apr_time_now();
    if ((wait = bank_idp_breaker_allow(breaker, c.base_url, start)) > 0) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(1004) "identity provider %s at %s: circuit breaker open, "
                                      "not calling it for %d more seconds",
                      name, c.base_url, wait);
        *retry_after = wait;
        return HTTP_SERVICE_UNAVAILABLE;
    }
    ap_log_rerror(APLOG_MARK, APLOG_TRACE1, 0, r,
                  BANKLOGNO(1005) "asking identity provider %s at %s", name, c.base_url);
    bank_idp_check(r->pool, thread_pool(r), &c, q, out);
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                  BANKLOGNO(1006) "identity provider %s: %s (HTTP %ld) in %" APR_TIME_T_FMT
                                  " ms, %s connection",
                  name, out->why, out->http_status, apr_time_as_msec(apr_time_now() - start),
                  out->reused ? "reused" : "new");
    /* bank_idp_calls_total{provider,outcome}: the counters follow the kinds' and verdicts'
     * order (include/bank_metrics.h) */
    if (bank_metrics_shared()) {
        bank_metrics_count(
            bank_metrics_shared(),
            (bank_metric_t)(BANK_M_IDP_CALLS + (c.kind - BANK_IDP_DOJAH) * 4 + (int)out->verdict));
    }
    if (out->verdict == BANK_IDP_MATCH || out->verdict == BANK_IDP_MISMATCH) {
        bank_idp_breaker_record(breaker, c.base_url, 1, apr_time_now());
        bank_idp_latency_record(breaker, c.base_url, apr_time_now() - start);
        return OK;
    }
    return call_failed(r, &c, name, out, retry_after);
}

bank_record_verdict bank_idp_onboard_ask(void *baton, const char *bvn, const char *dob,
                                         const bank_customer_t *customer, const char **first,
                                         const char **last)
{
    bank_idp_onboard_t *b = baton;
    bank_idp_query_t q = {bvn, dob, customer->first_name, customer->last_name};
    bank_idp_result_t res;

    if (bank_idp_verify(b->r, &q, &res, &b->retry_after) != OK) {
        return BANK_RECORD_UNAVAILABLE;
    }
    if (res.verdict == BANK_IDP_MATCH) {
        *first = res.first;
        *last = res.last;
        return BANK_RECORD_OK;
    }
    b->why = res.why;
    return res.diff == BANK_IDP_DIFF_DATE    ? BANK_RECORD_DOB
           : res.diff == BANK_IDP_DIFF_NAMES ? BANK_RECORD_NAMES
                                             : BANK_RECORD_UNKNOWN;
}

void bank_idp_onboard_hold(void *baton)
{
    bank_idp_onboard_t *b = baton;
    bank_idp_conf_t c;
    apr_uint32_t r = 0;
    apr_interval_time_t wait;

    bank_conf_idp(bank_conf(b->r), &c);
    if (bank_random_bytes((unsigned char *)&r, sizeof(r)) != 0) {
        r = (apr_uint32_t)apr_time_now();
    }
    wait = bank_idp_latency_draw(breaker, c.base_url, r);
    if (wait < 0) {
        wait = apr_time_from_msec(BANK_IDP_HOLD_FALLBACK);
    }
    ap_log_rerror(APLOG_MARK, APLOG_TRACE1, 0, b->r,
                  BANKLOGNO(1601) "BVN judged on the kept record: answer held %" APR_TIME_T_FMT
                                  " ms, as long as a call to identity provider %s may take",
                  apr_time_as_msec(wait), bank_idp_kind_name(c.kind));
    apr_sleep(wait);
}

int bank_idp_unavailable(request_rec *r, const bank_idp_onboard_t *b)
{
    return bank_error_unavailable(r, IDP_UNAVAILABLE, b->retry_after);
}
