/* POST /webhook/<partner> (docs/api.md): the payment partner's fund-transfer notices.
 * Fails closed without a secret; the bearer is checked against every configured secret,
 * then the HMAC of the raw bytes when BankWebhookSignature is set; the payload is validated
 * (notice.c) and committed before the answer. The table's UNIQUE (partner,
 * transaction_reference, status_code) makes a repeat insert nothing, whichever process
 * and connection it reaches, and the affected-row count tells the partner so. */
#include <apr_strings.h>
#include <apr_global_mutex.h>
#include <http_protocol.h>
#include <util_mutex.h>
#include "mod_bank.h"
#include "mod_bank_webhook.h"
#include "mod_bank_server_map.h"
#include "mod_bank_config.h"
#include "mod_bank_http.h"
#include "mod_bank_db.h"
#include "mod_bank_auth.h"
#include "mod_bank_metrics.h"
#include "bank_json.h"
#include "bank_notice.h"
#include "bank_group_commit.h"
#include "mod_bank_push.h"
#include "bank_store.h"
#include "bank_digest.h"
#include "bank_time.h"
#include "bank_uuid.h"

APLOG_USE_MODULE(bank);

/* Retry-After when no secret is configured: fixing that takes an operator, not seconds. */
#define WEBHOOK_UNCONFIGURED_RETRY 300

static int authenticate(request_rec *r, const bank_dir_conf *conf, const char *partner)
{
    const apr_array_header_t *secrets = conf->webhook_secrets;
    const char *bearer = bank_bearer(r);

    if (!secrets || secrets->nelts == 0) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(0701) "no BankWebhookSecret for partner %s (Location %s): "
                                      "every payment notice is refused with 503 until one is set",
                      partner, bank_location(r) ? bank_location(r) : "(none)");
        return bank_error_unavailable(r, NULL, WEBHOOK_UNCONFIGURED_RETRY);
    }
    if (!bank_secret_in(bearer, (const char *const *)secrets->elts, secrets->nelts)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0702) "payment notice for partner %s refused: %s bearer", partner,
                      bearer ? "wrong" : "no");
        return bank_error(r, BANK_E_UNAUTHORIZED_ACCESS, NULL, NULL);
    }
    /* The access log names the partner, never the secret. */
    r->user = apr_pstrdup(r->pool, partner);
    r->ap_auth_type = "Bearer";
    return OK;
}

static int check_signature(request_rec *r, const bank_dir_conf *conf, const char *raw,
                           apr_size_t len)
{
    const char *given;

    if (!conf->sig_set) {
        return OK;
    }
    given = apr_table_get(r->headers_in, conf->sig_header);
    if (!bank_notice_signature_ok(conf->sig_key, raw, len, given)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0703) "payment notice refused: %s %s header",
                      given ? "wrong" : "no", conf->sig_header);
        return bank_error(r, BANK_E_INVALID_SIGNATURE, NULL, NULL);
    }
    return OK;
}

/* ---- group commit (bank_group_commit.c) ----
 * Notices that arrive together in one process share one transaction, per server (each may
 * have its own database); each request answers only once the transaction holding its notice
 * has committed (docs/api.md).
 *
 * Across the server's processes commits take turns (the "bank-webhook" mutex, docs/api.md):
 * a leader waits for the turn before it takes the queue, so what arrives meanwhile joins its
 * batch. Without turns each process committed its own small batch at the same time as the
 * others: on SQLite they met in the file's write lock, whose waits are sleeps; on PostgreSQL,
 * smaller batches cost the database more work per notice (the figures: docs/api.md). A leader that
 * waits longer than TURN_WAIT (a commit stuck on a database that does not answer) commits without
 * the turn. */
#define BATCH_MAX 64
#define TURN_WAIT apr_time_from_sec(1)

/* Each server's commit queue, made on first use. */
typedef struct {
    bank_group_t *group;
} commit_entry;
static bank_server_map_t *commits; /* server_rec * -> commit_entry; NULL: each commits alone */

void bank_webhook_child_init(apr_pool_t *pchild, server_rec *s)
{
    if ((commits = bank_server_map_make(pchild, sizeof(commit_entry))) == NULL) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(0707) "payment notices: no mutex; each commits on its own");
    }
}

/* The queue of r's server, made on first use; NULL without one (commit alone). */
static bank_group_t *group_of(request_rec *r)
{
    commit_entry *e = bank_server_map_lock(commits, r->server);
    bank_group_t *g;
    const char *err = NULL;

    if (!e) {
        return NULL;
    }
    if (!e->group) {
        e->group = bank_group_create(bank_server_map_pool(commits), BATCH_MAX, &err);
    }
    g = e->group;
    bank_server_map_unlock(commits);
    return g;
}

static bank_db_t *group_connect(void *baton)
{
    return bank_db(baton);
}

static int group_failed(void *baton, bank_db_t *db, bank_db_rc rc, const char *what)
{
    return bank_db_failed(baton, db, rc, what);
}

/* The group commit's: 1 if the turn was taken, 0 if the commit goes ahead without it. */
static int take_turn(void *baton)
{
    request_rec *r = baton;
    apr_interval_time_t waited = 0;
    apr_status_t rv = bank_db_turn_take(TURN_WAIT, &waited);

    if (rv == APR_ENOLOCK) {
        return 0; /* no turns in this process (logged at its start) */
    }
    if (rv != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, rv, r,
                      BANKLOGNO(0710) "payment notices: no commit turn after %" APR_TIME_T_FMT
                                      " ms; committing without it",
                      apr_time_as_msec(waited));
        return 0;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                  BANKLOGNO(0711) "payment notices: commit turn taken after %" APR_TIME_T_FMT " us",
                  waited);
    return 1;
}

static void give_turn(void *baton)
{
    (void)baton;
    bank_db_turn_give();
}

static const bank_group_host group_host = {group_connect, take_turn, give_turn, group_failed};

/* Commits the notice (with other requests' in one transaction when they arrive together);
 * *duplicate is set when the key was already there (nothing written). */
static int store(request_rec *r, const bank_notice_t *n, const char *partner, const char *raw,
                 int *duplicate)
{
    bank_group_item_t *q = apr_pcalloc(r->pool, sizeof(*q));
    bank_group_t *g = group_of(r);
    bank_metrics_t *m = bank_metrics_shared();

    q->put.n = n;
    q->put.id = bank_uuid7(r->pool);
    q->put.partner = partner;
    q->put.raw = raw;
    q->put.now = bank_time_iso(r->pool, apr_time_now());
    if (!q->put.id) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, BANKLOGNO(0704) "no randomness for an id");
        return bank_error(r, BANK_E_INTERNAL, NULL, NULL);
    }
    if (m) {
        bank_metrics_committing(m, 1);
    }
    bank_group_commit(bank_group_item_init(q, r->pool) == APR_SUCCESS ? g : NULL, q, &group_host, r,
                      r->pool);
    if (m) {
        bank_metrics_committing(m, -1);
    }
    if (q->rc != BANK_DB_OK) {
        return bank_error_db_retry(r, q->retry);
    }
    *duplicate = !q->put.added;
    if (q->put.added && q->put.matched) {
        bank_push_wake(); /* its outbox rows are committed with it */
    }
    /* Partner-sent text is escaped: it must not forge log lines. */
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  BANKLOGNO(0705) "payment notice %s: partner %s, reference %s, status code %s, %s",
                  *duplicate ? "repeated (nothing written)" : "stored", partner,
                  ap_escape_logitem(r->pool, n->transaction_reference),
                  ap_escape_logitem(r->pool, n->status_code), n->status);
    if (!*duplicate && n->wallet_id && !q->put.matched) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0706) "payment notice %s from partner %s: walletId %s matches "
                                      "no account; stored without one",
                      ap_escape_logitem(r->pool, n->transaction_reference), partner,
                      ap_escape_logitem(r->pool, n->wallet_id));
    }
    return OK;
}

int bank_webhook_handler(request_rec *r)
{
    const bank_dir_conf *conf = bank_conf(r);
    const char *partner = bank_conf_partner(r, conf), *raw = NULL;
    apr_array_header_t *errs = bank_errors_new(r->pool);
    apr_size_t len = 0;
    json_object *body = NULL, *answer;
    bank_notice_t *n;
    int rc, duplicate = 0;

    /* The order matters: nothing of the body is read before the partner is known, and
     * nothing is parsed before its signature holds. (The parser refuses NUL bytes, so the
     * raw body stored as text is all of it.) */
    if ((rc = bank_allow_methods(r, AP_METHOD_BIT << M_POST, "POST")) != OK) {
        return rc;
    }
    if ((rc = authenticate(r, conf, partner)) != OK) {
        return rc;
    }
    if ((rc = bank_read_body(r, &raw, &len)) != OK) {
        return rc;
    }
    if ((rc = check_signature(r, conf, raw, len)) != OK) {
        return rc;
    }
    if ((rc = bank_parse_json(r, raw, len, &body)) != OK) {
        return rc;
    }
    if (!(n = bank_notice_read(r->pool, body, errs))) {
        return bank_error_validation(r, errs);
    }
    if ((rc = store(r, n, partner, raw, &duplicate)) != OK) {
        return rc;
    }
    bank_metrics_outcome(r, duplicate ? BANK_M_NOTICE_DUPLICATE : BANK_M_NOTICE_STORED);
    answer = bank_json_own(r->pool, json_object_new_object());
    json_object_object_add(answer, "received", json_object_new_boolean(1));
    json_object_object_add(answer, "duplicate", json_object_new_boolean(duplicate));
    json_object_object_add(answer, "transactionReference",
                           json_object_new_string(n->transaction_reference));
    return bank_send_json(r, HTTP_OK, answer, NULL);
}
