/* Customer bearer tokens (docs/api.md) in httpd: the Authorization header, the answers (401, 403,
 * 503), and the host of the rules (bank_bearer.c): the request's connection, log, server. */
#include <string.h>
#include <apr_strings.h>
#include "mod_bank.h"
#include "mod_bank_auth.h"
#include "mod_bank_http.h"
#include "mod_bank_db.h"
#include "mod_bank_log.h"
#include "mod_bank_token_uses.h"
#include "bank_limits.h"
#include "mod_bank_config.h"

APLOG_USE_MODULE(bank);

/* Verified tokens and BVN answers kept per process (BankTokenCacheSeconds, BankBvnCacheSeconds),
 * scoped by server: each may have its own database, and has its own change feed. */
static bank_bearer_t *bearer;

void bank_auth_child_init(apr_pool_t *pchild, server_rec *s)
{
    bearer = bank_bearer_create(pchild, apr_time_from_sec(BANK_TOKEN_CACHE_MAX));
    for (; s; s = s->next) {
        bank_bearer_add_scope(bearer, pchild, s, apr_time_from_msec(BANK_CHANGE_FEED_INTERVAL_MS));
    }
}

/* The host's baton: the request and where its connection goes once taken. */
typedef struct {
    request_rec *r;
    bank_db_t **db;
} req_t;

static bank_db_t *host_db(void *baton)
{
    req_t *q = baton;
    return *q->db ? *q->db : (*q->db = bank_db(q->r));
}

static int host_db_held(void *baton)
{
    return bank_db_held(((req_t *)baton)->r);
}

static bank_token_uses_t *host_uses(void *baton)
{
    return bank_token_uses_of(((req_t *)baton)->r->server);
}

static bank_log_where host_where(void *baton)
{
    return mod_bank_where(((req_t *)baton)->r);
}

static const void *host_scope(void *baton)
{
    return ((req_t *)baton)->r->server;
}

static const bank_bearer_host host = {host_db,   host_db_held, apr_time_now,
                                      host_uses, host_where,   host_scope};

void bank_auth_forget(request_rec *r, const char *id)
{
    (void)r;
    bank_bearer_forget(bearer, id);
}

const char *bank_bearer(request_rec *r)
{
    const char *h = apr_table_get(r->headers_in, "Authorization");
    const char *v;

    if (!h || strncasecmp(h, "Bearer ", 7)) {
        return NULL;
    }
    for (v = h + 7; *v == ' '; v++) {
    }
    return *v ? v : NULL;
}

/* The answer to a verdict: OK (the request's user set: logged with the customer, never with
 * the token), 403, 503 or 401 (why, ours and without token material, at debug level). */
static int answer(request_rec *r, bank_bearer_verdict v, bank_db_t *db, bank_db_rc rc,
                  bank_principal_t **pr)
{
    switch (v) {
    case BANK_BEARER_OK:
        r->user = apr_pstrdup(r->pool, (*pr)->customer_id);
        r->ap_auth_type = "Bearer";
        return OK;
    case BANK_BEARER_FORBIDDEN:
        return bank_error(r, BANK_E_FORBIDDEN, NULL, NULL);
    case BANK_BEARER_DB_ERROR: /* no connection (db NULL), or the lookup failed */
        return bank_error_db(r, db, rc, db ? "token lookup" : r->handler);
    default:
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, BANKLOGNO(0301) "bearer refused: %s",
                      bank_bearer_why(v));
        return bank_error(r, BANK_E_UNAUTHORIZED_ACCESS, NULL, NULL);
    }
}

int bank_customer_request(request_rec *r, apr_int64_t methods, const char *allow,
                          const char *ability, bank_db_t **db, bank_principal_t **out)
{
    apr_int64_t seconds = bank_conf_token_cache(bank_conf(r));
    const char *token = bank_bearer(r);
    req_t q = {r, db};
    bank_bearer_verdict v;
    bank_db_rc rc = BANK_DB_OK;
    int status;

    *db = NULL;
    if ((status = bank_allow_methods(r, methods, allow)) != OK) {
        return status;
    }
    v = bank_bearer_kept(bearer, &host, &q, r->pool, token, apr_time_from_sec(seconds), ability,
                         out);
    if (v == BANK_BEARER_MISS) {
        v = bank_bearer_check(bearer, &host, &q, r->pool, token, seconds, ability, out, &rc);
    }
    return answer(r, v, *db, rc, out);
}

int bank_bvn_answer_get(request_rec *r, bank_db_t **db, const char *customer_id,
                        const bank_bvn_question_t *q, const char **text)
{
    return bank_bearer_answer_get(bearer, &host, &(req_t){r, db}, r->pool,
                                  apr_time_from_sec(bank_conf_bvn_cache(bank_conf(r))), customer_id,
                                  q, text);
}

int bank_bvn_answer_epoch(request_rec *r, apr_uint64_t *epoch)
{
    /* no connection: the feed is not read here */
    return bank_bearer_answer_epoch(bearer, &host, &(req_t){r, &(bank_db_t *){NULL}},
                                    bank_conf_bvn_cache(bank_conf(r)), epoch);
}

void bank_bvn_answer_put(request_rec *r, const char *customer_id, const bank_bvn_question_t *q,
                         const char *text, apr_time_t fetched, apr_uint64_t epoch)
{
    bank_bearer_answer_put(bearer, r->server, customer_id, q, text, fetched, epoch);
}

void bank_bvn_answer_forget(request_rec *r, const char *customer_id)
{
    (void)r;
    bank_bearer_answer_forget(bearer, customer_id);
}
