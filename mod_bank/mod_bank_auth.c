/* Customer bearer tokens (docs/api.md): decode, look up by id, compare the SHA-256 of the
 * secret in constant time, refuse expired ones, check the endpoint's ability. */
#include <string.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <http_protocol.h>
#include "mod_bank.h"
#include "mod_bank_auth.h"
#include "mod_bank_http.h"
#include "mod_bank_db.h"
#include "bank_store.h"
#include "bank_token.h"
#include "bank_time.h"
#include "bank_limits.h"
#include "mod_bank_config.h"
#include <apr_hash.h>
#include <apr_thread_mutex.h>

APLOG_USE_MODULE(bank);

/* last_used_at is written at most this often per token, not on every request. */
#define BANK_TOUCH_INTERVAL apr_time_from_sec(60)

/* ---- verified tokens, per process (docs/configuration.md, BankTokenCacheSeconds) ----
 * A token row read from the database is kept for BankTokenCacheSeconds: requests with the
 * same token within that time are verified against it (the same hash comparison, expiry and
 * ability checks) without a database round trip. A revoked token therefore still works for
 * at most that long on a process that read it before. The whole table is dropped every
 * CACHE_FLUSH (every entry is older than any delay allowed by then) or when it holds
 * CACHE_MAX tokens, so its memory stays bounded. Unknown tokens are never kept. */
#define CACHE_FLUSH apr_time_from_sec(BANK_TOKEN_CACHE_MAX)
#define CACHE_MAX 10000

typedef struct {
    bank_token_row_t row;
    apr_time_t fetched;
} cached_token;

static struct {
    apr_thread_mutex_t *lock;
    apr_pool_t *parent, *pool; /* pool: this generation's entries */
    apr_hash_t *tokens;        /* "server pointer/id" -> cached_token */
    apr_time_t born;
} tc;

void bank_auth_child_init(apr_pool_t *pchild, server_rec *s)
{
    tc.parent = pchild;
    if (apr_thread_mutex_create(&tc.lock, APR_THREAD_MUTEX_DEFAULT, pchild) != APR_SUCCESS ||
        apr_pool_create(&tc.pool, pchild) != APR_SUCCESS) {
        tc.lock = NULL;
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(0303) "token cache disabled: no mutex or pool");
        return;
    }
    tc.tokens = apr_hash_make(tc.pool);
    tc.born = apr_time_now();
}

static const char *cache_key(request_rec *r, const char *id)
{
    return apr_psprintf(r->pool, "%pp/%s", (void *)r->server, id);
}

/* The cached row of this token id if it was read within max_age; copied into r's pool. */
static int cache_get(request_rec *r, const char *id, apr_time_t max_age, bank_token_row_t *row)
{
    const char *key = cache_key(r, id);
    const cached_token *e;
    int hit = 0;

    apr_thread_mutex_lock(tc.lock);
    e = apr_hash_get(tc.tokens, key, APR_HASH_KEY_STRING);
    if (e && apr_time_now() - e->fetched < max_age) {
        row->customer_id = apr_pstrdup(r->pool, e->row.customer_id);
        row->hash = apr_pstrdup(r->pool, e->row.hash);
        row->abilities = apr_pstrdup(r->pool, e->row.abilities);
        row->expires_at = apr_pstrdup(r->pool, e->row.expires_at);
        row->last_used_at = apr_pstrdup(r->pool, e->row.last_used_at);
        hit = 1;
    }
    apr_thread_mutex_unlock(tc.lock);
    return hit;
}

static void cache_put(request_rec *r, const char *id, const bank_token_row_t *row,
                      apr_time_t fetched)
{
    cached_token *e;
    apr_time_t now = apr_time_now();

    apr_thread_mutex_lock(tc.lock);
    if (now - tc.born >= CACHE_FLUSH || apr_hash_count(tc.tokens) >= CACHE_MAX) {
        apr_pool_clear(tc.pool);
        tc.tokens = apr_hash_make(tc.pool);
        tc.born = now;
    }
    e = apr_pcalloc(tc.pool, sizeof(*e));
    e->row.customer_id = apr_pstrdup(tc.pool, row->customer_id);
    e->row.hash = apr_pstrdup(tc.pool, row->hash);
    e->row.abilities = apr_pstrdup(tc.pool, row->abilities);
    e->row.expires_at = apr_pstrdup(tc.pool, row->expires_at);
    e->row.last_used_at = apr_pstrdup(tc.pool, row->last_used_at);
    e->fetched = fetched;
    apr_hash_set(tc.tokens, apr_pstrdup(tc.pool, cache_key(r, id)), APR_HASH_KEY_STRING, e);
    apr_thread_mutex_unlock(tc.lock);
}

/* After a cached token's use was recorded: the entry says so too (no second write). */
static void cache_touched(request_rec *r, const char *id, const char *last_used)
{
    cached_token *e;

    apr_thread_mutex_lock(tc.lock);
    e = apr_hash_get(tc.tokens, cache_key(r, id), APR_HASH_KEY_STRING);
    if (e) {
        e->row.last_used_at = apr_pstrdup(tc.pool, last_used);
    }
    apr_thread_mutex_unlock(tc.lock);
}

void bank_auth_forget(request_rec *r, const char *id)
{
    if (tc.lock) {
        apr_thread_mutex_lock(tc.lock);
        apr_hash_set(tc.tokens, cache_key(r, id), APR_HASH_KEY_STRING, NULL);
        apr_thread_mutex_unlock(tc.lock);
    }
}

static apr_time_t cache_max_age(request_rec *r)
{
    return tc.lock ? apr_time_from_sec(bank_conf_token_cache(bank_conf(r))) : 0;
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

static int unauthorized(request_rec *r, const char *why)
{
    /* why is ours (no token material), for the operator at debug level */
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, BANKLOGNO(0301) "bearer refused: %s", why);
    return bank_error(r, BANK_E_UNAUTHORIZED_ACCESS, NULL, NULL);
}

/* Records the token's use at most once a minute (BANK_TOUCH_INTERVAL). db NULL: a cached
 * token, the connection taken only if a write is due. */
static void touch(request_rec *r, bank_db_t *db, const char *id, bank_token_row_t *row)
{
    apr_time_t now = apr_time_now(), last;

    if (row->last_used_at && bank_time_parse(row->last_used_at, &last) == 0 &&
        now - last < BANK_TOUCH_INTERVAL) {
        return;
    }
    row->last_used_at = bank_time_iso(r->pool, now);
    /* Best effort: a failed write must not fail an authorised request. */
    if (!db && !(db = bank_db(r))) {
        return;
    }
    if (bank_store_token_touch(db, id, row->last_used_at) != BANK_DB_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      BANKLOGNO(0302) "could not record token use: %s", bank_db_error(db));
    }
}

/* The checks on a token row, wherever it came from: the secret's hash (unless the caller
 * compared it already), expiry, ability. OK with the principal, or the error answered. */
static int check_row(request_rec *r, const char *id, const char *secret,
                     const bank_token_row_t *row, int verified, const char *ability,
                     bank_principal_t **out)
{
    apr_time_t exp;
    bank_principal_t *pr;

    if (!verified && !bank_token_verify(r->pool, secret, row->hash)) {
        return unauthorized(r, "unknown or revoked token");
    }
    if (row->expires_at && (bank_time_parse(row->expires_at, &exp) != 0 || exp <= apr_time_now())) {
        return unauthorized(r, "expired token");
    }
    pr = apr_pcalloc(r->pool, sizeof(*pr));
    pr->token_id = id;
    pr->customer_id = row->customer_id;
    pr->abilities = row->abilities;
    if (ability &&
        !bank_abilities_allow(r->pool, pr->abilities ? pr->abilities : "[\"*\"]", ability)) {
        return bank_error(r, BANK_E_FORBIDDEN, NULL, NULL);
    }
    /* Authenticated requests are logged with the customer, never with the token. */
    r->user = apr_pstrdup(r->pool, pr->customer_id);
    r->ap_auth_type = "Bearer";
    *out = pr;
    return OK;
}

/* 1 if the token was answered from the cache (*rc: OK or the error answered), 0 to go to
 * the database. */
static int from_cache(request_rec *r, const char *ability, bank_principal_t **out, int *rc)
{
    apr_time_t max_age = cache_max_age(r);
    const char *id, *secret;
    bank_token_row_t row;

    if (max_age <= 0 || bank_token_decode(r->pool, bank_bearer(r), &id, &secret) != 0 ||
        !cache_get(r, id, max_age, &row) || !bank_token_verify(r->pool, secret, row.hash)) {
        return 0;
    }
    if ((*rc = check_row(r, id, secret, &row, 1, ability, out)) == OK) {
        const char *seen = row.last_used_at;
        touch(r, NULL, id, &row);
        if (row.last_used_at != seen) {
            cache_touched(r, id, row.last_used_at);
        }
    }
    return 1;
}

int bank_authenticate(request_rec *r, bank_db_t *db, const char *ability, bank_principal_t **out)
{
    const char *plain = bank_bearer(r), *id, *secret;
    apr_time_t fetched = apr_time_now();
    bank_token_row_t row;
    bank_db_rc rc;
    int status;

    if (!plain) {
        return unauthorized(r, "no bearer token");
    }
    if (bank_token_decode(r->pool, plain, &id, &secret) != 0) {
        return unauthorized(r, "malformed token");
    }
    rc = bank_store_token_find(db, id, &row);
    if (rc != BANK_DB_OK && rc != BANK_DB_NOT_FOUND) {
        return bank_error_db(r, db, rc, "token lookup");
    }
    if (rc == BANK_DB_NOT_FOUND) {
        return unauthorized(r, "unknown or revoked token");
    }
    if ((status = check_row(r, id, secret, &row, 0, ability, out)) != OK) {
        return status;
    }
    touch(r, db, id, &row);
    if (cache_max_age(r) > 0) {
        cache_put(r, id, &row, fetched);
    }
    return OK;
}

int bank_customer_request(request_rec *r, apr_int64_t methods, const char *allow,
                          const char *ability, bank_db_t **db, bank_principal_t **out)
{
    int rc;

    *db = NULL;
    if ((rc = bank_allow_methods(r, methods, allow)) != OK) {
        return rc;
    }
    if (from_cache(r, ability, out, &rc)) {
        return rc;
    }
    if (!(*db = bank_db(r))) {
        return bank_error_db(r, NULL, BANK_DB_ERROR, r->handler);
    }
    return bank_authenticate(r, *db, ability, out);
}
