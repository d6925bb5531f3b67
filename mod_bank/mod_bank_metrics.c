/* Metrics in shared memory, counted per request, served as Prometheus text and in mod_status
 * (include/mod_bank_metrics.h, docs/operations.md "Metrics"). */
#include <string.h>
#include <apr_shm.h>
#include <apr_strings.h>
#include <http_protocol.h>
#include <mod_status.h>
#include "mod_bank.h"
#include "mod_bank_metrics.h"
#include "mod_bank_http.h"
#include "mod_bank_idp.h"
#include "bank_version.h"

APLOG_USE_MODULE(bank);

#define NOTE_OUTCOME "mod_bank-outcome"
/* Per release: a graceful restart onto another release's module (an upgrade) starts new
 * counters instead of reading a block whose layout may differ. */
#define SHM_KEY "mod_bank-metrics-" BANK_VERSION

/* Set in the parent before the children fork: every process adds to the same block. NULL
 * when it could not be created (then nothing is counted; start-up logged why). */
static bank_metrics_t *metrics;

int bank_metrics_post_config(apr_pool_t *pconf, server_rec *s)
{
    apr_pool_t *keep = s->process->pool;
    apr_shm_t *shm = NULL;
    apr_status_t rv;

    (void)pconf;
    /* In the process pool, found again on a graceful restart: counters are not reset by one
     * (Prometheus handles a reset, but a restart to change a setting should not cause one). */
    apr_pool_userdata_get((void **)&shm, SHM_KEY, keep);
    if (!shm || apr_shm_size_get(shm) != sizeof(bank_metrics_t)) {
        /* Anonymous: inherited by the children, gone with the last process. */
        if ((rv = apr_shm_create(&shm, sizeof(bank_metrics_t), NULL, keep)) != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                         BANKLOGNO(1101) "cannot create the shared memory for metrics: "
                                         "nothing will be counted");
            metrics = NULL;
            bank_metrics_share(NULL);
            return OK;
        }
        memset(apr_shm_baseaddr_get(shm), 0, sizeof(bank_metrics_t));
        apr_pool_userdata_set(shm, SHM_KEY, apr_pool_cleanup_null, keep);
    }
    metrics = apr_shm_baseaddr_get(shm);
    bank_metrics_share(metrics);
    return OK;
}

void bank_metrics_outcome(request_rec *r, bank_metric_t c)
{
    apr_table_setn(r->notes, NOTE_OUTCOME, apr_itoa(r->pool, (int)c));
}

static int is_code(const char *code, const char *want)
{
    return code && !strcmp(code, want);
}

/* The counter an answer of endpoint e stands for, or -1. Handlers note what the answer does
 * not show (bank_metrics_outcome); the rest follows from the status and the error code. */
static int outcome_of(request_rec *r, bank_endpoint_t e, int st)
{
    const char *note = apr_table_get(r->notes, NOTE_OUTCOME);
    const char *code = bank_error_code(r);

    if (note) {
        return atoi(note);
    }
    if (e == BANK_EP_SIGN_IN) {
        return st == HTTP_OK                            ? BANK_M_SIGN_IN_OK
               : is_code(code, "E_INVALID_CREDENTIALS") ? BANK_M_SIGN_IN_WRONG
               : st == HTTP_TOO_MANY_REQUESTS           ? BANK_M_SIGN_IN_THROTTLED
               : is_code(code, "E_UNAUTHORIZED_ACCESS") ? BANK_M_SIGN_IN_REFUSED
                                                        : -1;
    }
    if (e == BANK_EP_WEBHOOK) {
        return st >= 400 && st < 500 ? BANK_M_NOTICE_REFUSED : -1;
    }
    if (is_code(code, "E_UNAUTHORIZED_ACCESS")) {
        return BANK_M_TOKEN_REFUSED; /* a customer endpoint's bearer token */
    }
    if (e == BANK_EP_BVN) {
        return st == HTTP_TOO_MANY_REQUESTS          ? BANK_M_BVN_THROTTLED
               : is_code(code, "E_BVN_IN_USE")       ? BANK_M_BVN_IN_USE
               : is_code(code, "E_ALREADY_VERIFIED") ? BANK_M_BVN_OTHER
               : is_code(code, "E_VALIDATION_ERROR") || is_code(code, "E_INVALID_JSON") ||
                       is_code(code, "E_PAYLOAD_TOO_LARGE") ||
                       is_code(code, "E_UNSUPPORTED_MEDIA_TYPE")
                   ? BANK_M_BVN_INVALID
                   : -1;
    }
    return -1;
}

void bank_metrics_request(request_rec *r, bank_endpoint_t e, int rc)
{
    /* handlers answer themselves and return DONE or OK; a status returned is httpd's to send */
    int st = rc == OK || rc == DONE ? r->status : rc, c;

    if (!metrics || e == BANK_EP_NONE) {
        return;
    }
    if ((c = outcome_of(r, e, st)) >= 0 && c < BANK_M_COUNT) {
        bank_metrics_count(metrics, (bank_metric_t)c);
    }
    if (st == HTTP_SERVICE_UNAVAILABLE) {
        bank_metrics_count(metrics, BANK_M_UNAVAILABLE);
    }
    if (st >= 500) {
        bank_metrics_server_error(metrics, e);
    }
    bank_metrics_observe(metrics, e, apr_time_now() - r->request_time);
}

/* The shared block's samples, then the identity providers' breaker (its own shared block). */
static const char *snapshot(apr_pool_t *p)
{
    static bank_metrics_t none; /* before post_config, or without shared memory: all 0 */
    return apr_pstrcat(p, bank_metrics_prometheus(p, metrics ? metrics : &none),
                       bank_metrics_gauge(p, "bank_idp_breaker_open",
                                          "1 while an identity provider's circuit breaker is "
                                          "open (BVN verification answers 503), else 0.",
                                          !strcmp(bank_idp_health(), "circuit_open")),
                       (char *)NULL);
}

int bank_metrics_handler(request_rec *r)
{
    const char *text;
    int rc;

    if ((rc = bank_allow_methods(r, AP_METHOD_BIT << M_GET, "GET, HEAD")) != OK) {
        return rc;
    }
    text = snapshot(r->pool);
    ap_set_content_type(r, "text/plain; version=0.0.4; charset=utf-8");
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    ap_set_content_length(r, (apr_off_t)strlen(text));
    if (!r->header_only) {
        ap_rputs(text, r);
    }
    return OK;
}

/* mod_status: the same samples, as "name{labels}: value" lines for ?auto and a preformatted
 * block on the HTML page. */
static int status_hook(request_rec *r, int flags)
{
    const char *text = snapshot(r->pool), *line, *end;

    if (!(flags & AP_STATUS_SHORT)) {
        ap_rputs("<hr />\n<h2>mod_bank</h2>\n<pre>", r);
    }
    for (line = text; *line; line = end + 1) {
        end = strchr(line, '\n');
        if (*line == '#') {
            continue;
        }
        if (flags & AP_STATUS_SHORT) {
            const char *sp = memchr(line, ' ', (apr_size_t)(end - line));
            ap_rprintf(r, "%.*s:%.*s\n", (int)(sp - line), line, (int)(end - sp), sp);
        } else {
            ap_rprintf(
                r, "%s\n",
                ap_escape_html(r->pool, apr_pstrndup(r->pool, line, (apr_size_t)(end - line))));
        }
    }
    if (!(flags & AP_STATUS_SHORT)) {
        ap_rputs("</pre>\n", r);
    }
    return OK;
}

void bank_metrics_register_hooks(void)
{
    APR_OPTIONAL_HOOK(ap, status_hook, status_hook, NULL, NULL, APR_HOOK_MIDDLE);
}
