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
#include "bank_kept.h"
#include "bank_change_feed.h"
#include "mod_bank_token_uses.h"
#include "bank_time.h"
#include "bank_limits.h"
#include "mod_bank_config.h"

APLOG_USE_MODULE(bank);

/* last_used_at is written at most this often per token, not on every request. */
#define BANK_TOUCH_INTERVAL apr_time_from_sec(60)

/* ---- verified tokens, per process (docs/configuration.md, BankTokenCacheSeconds) ----
 * A token row read from the database is kept for at most BankTokenCacheSeconds
 * (bank_kept.c): requests with the same token within that time are verified against it
 * (the same hash comparison, expiry and ability checks) without a database round trip, as
 * long as the server's revocation feed (bank_change_feed.c) was read in the last
 * BANK_CHANGE_FEED_INTERVAL_MS. One request reads it again once it is half that old, while the
 * others go on answering from the cache; requests that find it older wait for one read
 * (bank_change_feed_check). A token revoked anywhere is therefore refused here within that
 * interval; sign-out here drops it at once.
 * Scoped by server: each may have its own database, and has its own feed. */
#define CACHE_MAX 10000

/* ---- verified BVN answers, per process (docs/configuration.md, BankBvnCacheSeconds) ----
 * The answer to a verified customer sending their BVN and date of birth again is kept, by
 * customer, for at most BankBvnCacheSeconds, and kept true by the same feed: the database's
 * triggers add the customer to it on every change of their row, account or BVN failure
 * count, and every customer on a change of the identity records (009_answer_feed.sql).
 * An answer is given from it only while the feed is current, as a token is, and kept only if
 * the feed was current before the database read began (so that the feed's next read reports
 * any change the read did not see). Fields of an entry: the BVN and the date of birth it
 * answers, the rule of the Location that answered (bank_bvn_question_t), and the answer's
 * text. Fewer entries than tokens: an answer is about a kilobyte. */
#define ANSWERS_MAX 2000
enum { A_BVN, A_DOB, A_RULE, A_TEXT, A_FIELDS };

static bank_kept_t *tokens;
static bank_kept_t *answers; /* NULL: no answer is kept */
static apr_hash_t *feeds;    /* server_rec * -> bank_change_feed_t *, read-only after child init */

void bank_auth_child_init(apr_pool_t *pchild, server_rec *s)
{
    const char *err = NULL;
    server_rec *v;

    if (!(tokens =
              bank_kept_create(pchild, CACHE_MAX, apr_time_from_sec(BANK_TOKEN_CACHE_MAX), &err))) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, BANKLOGNO(0303) "token cache disabled: %s", err);
        return;
    }
    if (!(answers = bank_kept_create_fields(
              pchild, ANSWERS_MAX, apr_time_from_sec(BANK_TOKEN_CACHE_MAX), A_FIELDS, &err))) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, BANKLOGNO(0304) "BVN answer cache disabled: %s",
                     err);
    }
    feeds = apr_hash_make(pchild);
    for (v = s; v; v = v->next) {
        bank_change_feed_t *f = bank_change_feed_create(
            pchild, tokens, answers, apr_time_from_msec(BANK_CHANGE_FEED_INTERVAL_MS), &err);
        server_rec **key = apr_palloc(pchild, sizeof(*key));

        if (!f) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                         BANKLOGNO(2103) "token cache disabled: no revocation feed: %s", err);
            tokens = answers = NULL;
            return;
        }
        *key = v;
        apr_hash_set(feeds, key, sizeof(*key), f);
    }
}

void bank_auth_forget(request_rec *r, const char *id)
{
    (void)r;
    if (tokens) {
        bank_kept_invalidate(tokens, id);
    }
}

static apr_time_t cache_max_age(request_rec *r)
{
    return tokens ? apr_time_from_sec(bank_conf_token_cache(bank_conf(r))) : 0;
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

/* Records the token's use at most once a minute (BANK_TOUCH_INTERVAL): noted for the
 * process's writer (mod_bank_token_uses.c), which writes the uses of every request in a few
 * statements a second; written here only when there is no writer or its set is full, on *db
 * (NULL: a connection taken into *db). cached: the row is the cache's, told of the use, so
 * that the requests with the same token after this one do not note or write it too. */
static void touch(request_rec *r, bank_db_t **db, const char *id, bank_token_row_t *row, int cached)
{
    apr_time_t now = apr_time_now(), last;
    bank_token_uses_t *uses;

    if (row->last_used_at && bank_time_parse(row->last_used_at, &last) == 0 &&
        now - last < BANK_TOUCH_INTERVAL) {
        return;
    }
    row->last_used_at = bank_time_iso(r->pool, now);
    if (cached) {
        bank_kept_touched(tokens, r->server, id, row->last_used_at);
    }
    if ((uses = bank_token_uses_of(r->server)) &&
        bank_token_uses_note(uses, id, row->last_used_at)) {
        return;
    }
    /* Best effort: a failed write must not fail an authorised request. */
    if (!*db && !(*db = bank_db(r))) {
        return;
    }
    if (bank_store_token_uses(*db, 1, &id, (const char *const *)&row->last_used_at) != BANK_DB_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      BANKLOGNO(0302) "could not record token use: %s", bank_db_error(*db));
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

/* The revocation feed of r's server (NULL: none, no cache). */
static bank_change_feed_t *feed_of(request_rec *r)
{
    server_rec *s = r->server;
    return feeds ? apr_hash_get(feeds, &s, sizeof(s)) : NULL;
}

/* 1 and *epoch (taken now, before the database read whose row or answer is then put) if c
 * may keep what is read from now on for seconds: only while r's server's feed is current
 * (no read here), so that its next read reports any change the database read did not see
 * (one cache serves every server's feed). */
static int may_keep(request_rec *r, bank_kept_t *c, apr_int64_t seconds, apr_uint64_t *epoch)
{
    bank_change_feed_t *f = feed_of(r);

    if (!c || seconds <= 0 || !f || !bank_change_feed_current(f, apr_time_now())) {
        return 0;
    }
    *epoch = bank_kept_epoch(c);
    return 1;
}

typedef struct {
    request_rec *r;
    bank_db_t **db;
} feed_db_t;

/* The request's connection, taken when the feed is to be read on it. */
static bank_db_t *feed_db(void *baton)
{
    feed_db_t *b = baton;

    if (!*b->db) {
        *b->db = bank_db(b->r);
    }
    return *b->db;
}

/* 1 if the cache may answer for r's server now: its revocation feed read within the
 * interval, by this request when due (bank_change_feed_check; the connection it took, if any,
 * in *db). A request that holds a connection of the pool never waits for another's read,
 * which may be waiting for a connection. */
static int feed_current(request_rec *r, bank_db_t **db)
{
    bank_change_feed_t *f = feed_of(r);
    feed_db_t b = {r, db};

    return f && bank_change_feed_check(f, apr_time_now(), !bank_db_held(r), feed_db, &b);
}

/* 1 if the token was answered from the cache (*rc: OK or the error answered), 0 to go to
 * the database (with *db if the cache took a connection already). */
static int from_cache(request_rec *r, const char *ability, bank_principal_t **out, int *rc,
                      bank_db_t **db)
{
    apr_time_t max_age = cache_max_age(r);
    const char *id, *secret;
    bank_token_row_t row;

    if (max_age <= 0 || bank_token_decode(r->pool, bank_bearer(r), &id, &secret) != 0 ||
        !feed_current(r, db) || !bank_kept_get(tokens, r->pool, r->server, id, max_age, &row) ||
        !bank_token_verify(r->pool, secret, row.hash)) {
        return 0;
    }
    if ((*rc = check_row(r, id, secret, &row, 1, ability, out)) == OK) {
        touch(r, db, id, &row, 1);
    }
    return 1;
}

int bank_authenticate(request_rec *r, bank_db_t *db, const char *ability, bank_principal_t **out)
{
    const char *plain = bank_bearer(r), *id, *secret;
    apr_time_t fetched = apr_time_now();
    apr_uint64_t epoch = 0;
    int keep = may_keep(r, tokens, bank_conf_token_cache(bank_conf(r)), &epoch);
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
    touch(r, &db, id, &row, 0);
    if (keep) {
        bank_kept_put(tokens, r->server, id, &row, fetched, epoch);
    }
    return OK;
}

int bank_bvn_answer_get(request_rec *r, bank_db_t **db, const char *customer_id,
                        const bank_bvn_question_t *q, const char **text)
{
    apr_time_t max_age = answers ? apr_time_from_sec(bank_conf_bvn_cache(bank_conf(r))) : 0;
    const char *f[A_FIELDS];

    if (max_age <= 0 || !feed_current(r, db) ||
        !bank_kept_get_fields(answers, r->pool, r->server, customer_id, max_age, f)) {
        return 0;
    }
    if (!f[A_BVN] || strcmp(f[A_BVN], q->bvn) != 0 || !f[A_DOB] || strcmp(f[A_DOB], q->dob) != 0 ||
        !f[A_RULE] || strcmp(f[A_RULE], q->rule) != 0) {
        /* Anything else sent for this customer is decided by the database, and the kept
         * answer goes at once: a guess that fails here may be counted toward BankBvnThrottle,
         * and no process should confirm a later guess before it hears of that count. */
        bank_bvn_answer_forget(r, customer_id);
        return 0;
    }
    *text = f[A_TEXT];
    return 1;
}

int bank_bvn_answer_epoch(request_rec *r, apr_uint64_t *epoch)
{
    return may_keep(r, answers, bank_conf_bvn_cache(bank_conf(r)), epoch);
}

void bank_bvn_answer_put(request_rec *r, const char *customer_id, const bank_bvn_question_t *q,
                         const char *text, apr_time_t fetched, apr_uint64_t epoch)
{
    const char *f[A_FIELDS] = {q->bvn, q->dob, q->rule, text};

    bank_kept_put_fields(answers, r->server, customer_id, f, fetched, epoch);
}

void bank_bvn_answer_forget(request_rec *r, const char *customer_id)
{
    (void)r;
    if (answers) {
        bank_kept_invalidate(answers, customer_id);
    }
}

int bank_customer_request(request_rec *r, apr_int64_t methods, const char *allow,
                          const char *ability, bank_db_t **db, bank_principal_t **out)
{
    int rc;

    *db = NULL;
    if ((rc = bank_allow_methods(r, methods, allow)) != OK) {
        return rc;
    }
    if (from_cache(r, ability, out, &rc, db)) {
        return rc;
    }
    if (!*db && !(*db = bank_db(r))) {
        return bank_error_db(r, NULL, BANK_DB_ERROR, r->handler);
    }
    return bank_authenticate(r, *db, ability, out);
}
