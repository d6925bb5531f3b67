/* Customer bearer tokens and the answers kept beside them (bank_bearer.h): the rules, with
 * what only the host has asked of bank_bearer_host. */
#include <string.h>
#include <openssl/crypto.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include "bank_bearer.h"
#include "bank_log.h"
#include "bank_store.h"
#include "bank_time.h"
#include "bank_token.h"

/* Fields of a kept answer: the BVN and the date of birth it answers, the rule of the Location
 * that answered (bank_bvn_question_t), and the answer's text. */
enum { A_BVN, A_DOB, A_RULE, A_TEXT, A_FIELDS };

struct bank_bearer_s {
    bank_kept_t *tokens;  /* NULL: nothing is kept */
    bank_kept_t *answers; /* NULL: no answer is kept */
    apr_hash_t *feeds;    /* scope -> bank_change_feed_t *, read-only once the scopes are in */
};

bank_bearer_t *bank_bearer_create(apr_pool_t *p, apr_time_t max_age)
{
    bank_bearer_t *b = apr_pcalloc(p, sizeof(*b));
    const char *err = NULL;

    b->feeds = apr_hash_make(p);
    if (!(b->tokens = bank_kept_create(p, BANK_BEARER_TOKENS_MAX, max_age, &err))) {
        bank_log(NULL, BANK_LOG_MARK, BANK_LOG_ERR, BANKLOGNO(0303) "token cache disabled: %s",
                 err);
        return b;
    }
    if (!(b->answers =
              bank_kept_create_fields(p, BANK_BEARER_ANSWERS_MAX, max_age, A_FIELDS, &err))) {
        bank_log(NULL, BANK_LOG_MARK, BANK_LOG_ERR, BANKLOGNO(0304) "BVN answer cache disabled: %s",
                 err);
    }
    return b;
}

void bank_bearer_add_scope(bank_bearer_t *b, apr_pool_t *p, const void *scope, apr_time_t interval)
{
    const char *err = NULL;
    bank_change_feed_t *f;
    const void **key;

    if (!b->tokens) {
        return;
    }
    if (!(f = bank_change_feed_create(p, b->tokens, b->answers, interval, &err))) {
        bank_log(NULL, BANK_LOG_MARK, BANK_LOG_ERR,
                 BANKLOGNO(2103) "token cache disabled: no revocation feed: %s", err);
        b->tokens = b->answers = NULL;
        return;
    }
    key = apr_palloc(p, sizeof(*key));
    *key = scope;
    apr_hash_set(b->feeds, key, sizeof(*key), f);
}

const char *bank_bearer_why(bank_bearer_verdict v)
{
    switch (v) {
    case BANK_BEARER_NONE:
        return "no bearer token";
    case BANK_BEARER_MALFORMED:
        return "malformed token";
    case BANK_BEARER_EXPIRED:
        return "expired token";
    default:
        return "unknown or revoked token";
    }
}

/* Records the token's use at most once per BANK_BEARER_TOUCH_INTERVAL: noted for the scope's
 * writer (bank_token_uses.h), which writes the uses of every request in a few statements a
 * second; written here only when there is no writer or its set is full, on the host's
 * connection. cached: the row is the kept one's, told of the use, so that the requests with
 * the same token after this one do not note or write it too. */
static void touch(bank_bearer_t *b, const bank_bearer_host *h, void *baton, apr_pool_t *p,
                  const char *id, bank_token_row_t *row, int cached)
{
    apr_time_t now = h->now(), last;
    bank_token_uses_t *uses;
    bank_db_t *db;

    if (row->last_used_at && bank_time_parse(row->last_used_at, &last) == 0 &&
        now - last < BANK_BEARER_TOUCH_INTERVAL) {
        return;
    }
    row->last_used_at = bank_time_iso(p, now);
    if (cached) {
        bank_kept_touched(b->tokens, h->scope(baton), id, row->last_used_at);
    }
    if ((uses = h->uses(baton)) && bank_token_uses_note(uses, id, row->last_used_at)) {
        return;
    }
    /* Best effort: a failed write must not fail an authorised request. */
    if (!(db = h->db(baton))) {
        return;
    }
    if (bank_store_token_uses(db, 1, &id, (const char *const *)&row->last_used_at) != BANK_DB_OK) {
        bank_log(h->where(baton), BANK_LOG_MARK, BANK_LOG_WARNING,
                 BANKLOGNO(0302) "could not record token use: %s", bank_db_error(db));
    }
}

/* The checks on a token row, wherever it came from: the secret's hash (unless the caller
 * compared it already), expiry, ability. OK with the principal, or the refusal. */
static bank_bearer_verdict check_row(const bank_bearer_host *h, apr_pool_t *p, const char *id,
                                     const char *secret, const bank_token_row_t *row, int verified,
                                     const char *ability, bank_principal_t **out)
{
    apr_time_t exp;
    bank_principal_t *pr;

    if (!verified && !bank_token_verify(p, secret, row->hash)) {
        return BANK_BEARER_UNKNOWN;
    }
    if (row->expires_at && (bank_time_parse(row->expires_at, &exp) != 0 || exp <= h->now())) {
        return BANK_BEARER_EXPIRED;
    }
    pr = apr_pcalloc(p, sizeof(*pr));
    pr->token_id = id;
    pr->customer_id = row->customer_id;
    pr->abilities = row->abilities;
    if (ability && !bank_abilities_allow(p, pr->abilities ? pr->abilities : "[\"*\"]", ability)) {
        return BANK_BEARER_FORBIDDEN;
    }
    *out = pr;
    return BANK_BEARER_OK;
}

bank_change_feed_t *bank_bearer_feed(bank_bearer_t *b, const void *scope)
{
    return b->tokens ? apr_hash_get(b->feeds, &scope, sizeof(scope)) : NULL;
}

bank_kept_t *bank_bearer_tokens(bank_bearer_t *b)
{
    return b->tokens;
}

bank_kept_t *bank_bearer_answers(bank_bearer_t *b)
{
    return b->answers;
}

/* 1 and *epoch (taken now, before the database read whose row or answer is then put) if c
 * may keep what is read from now on for seconds: only while the scope's feed is current (no
 * read here), so that its next read reports any change the database read did not see (one
 * cache serves every scope's feed). */
static int may_keep(bank_bearer_t *b, const bank_bearer_host *h, void *baton, bank_kept_t *c,
                    apr_int64_t seconds, apr_uint64_t *epoch)
{
    bank_change_feed_t *f;

    if (!c || seconds <= 0 || !(f = bank_bearer_feed(b, h->scope(baton))) ||
        !bank_change_feed_current(f, h->now())) {
        return 0;
    }
    *epoch = bank_kept_epoch(c);
    return 1;
}

typedef struct {
    const bank_bearer_host *h;
    void *baton;
} feed_db_t;

/* The host's connection, taken when the feed is to be read on it. */
static bank_db_t *feed_db(void *baton)
{
    feed_db_t *d = baton;

    return d->h->db(d->baton);
}

/* 1 if the kept rows may answer for the scope now: its change feed read within the interval,
 * by this request when due (bank_change_feed_check, on the host's connection); waiting for
 * another request's read only if wait. */
static int feed_check(bank_bearer_t *b, const bank_bearer_host *h, void *baton, int wait)
{
    bank_change_feed_t *f = bank_bearer_feed(b, h->scope(baton));
    feed_db_t d = {h, baton};

    return f && bank_change_feed_check(f, h->now(), wait, feed_db, &d);
}

/* Before a kept row answers: a request that holds a connection of the pool never waits for
 * another's read, which may be waiting for a connection. */
static int feed_current(bank_bearer_t *b, const bank_bearer_host *h, void *baton)
{
    return feed_check(b, h, baton, !h->db_held(baton));
}

bank_bearer_verdict bank_bearer_kept(bank_bearer_t *b, const bank_bearer_host *h, void *baton,
                                     apr_pool_t *p, const char *token, apr_time_t max_age,
                                     const char *ability, bank_principal_t **out)
{
    const char *id, *secret;
    bank_token_row_t row;
    bank_bearer_verdict v;

    /* A token nothing is kept for goes to the database at once, without waiting for the
     * feed: only a kept row needs it current. */
    if (!b->tokens || max_age <= 0 || bank_token_decode(p, token, &id, &secret) != 0 ||
        !bank_kept_holds(b->tokens, p, h->scope(baton), id, max_age) ||
        !feed_current(b, h, baton) ||
        !bank_kept_get(b->tokens, p, h->scope(baton), id, max_age, &row) ||
        !bank_token_verify(p, secret, row.hash)) {
        return BANK_BEARER_MISS;
    }
    if ((v = check_row(h, p, id, secret, &row, 1, ability, out)) == BANK_BEARER_OK) {
        touch(b, h, baton, p, id, &row, 1);
    }
    return v;
}

bank_bearer_verdict bank_bearer_check(bank_bearer_t *b, const bank_bearer_host *h, void *baton,
                                      apr_pool_t *p, const char *token, apr_int64_t keep_seconds,
                                      const char *ability, bank_principal_t **out, bank_db_rc *rc)
{
    bank_db_t *db = h->db(baton);
    const char *id, *secret;
    apr_time_t fetched = h->now();
    apr_uint64_t epoch = 0;
    int keep = may_keep(b, h, baton, b->tokens, keep_seconds, &epoch);
    bank_token_row_t row;
    bank_bearer_verdict v;

    if (!db) {
        *rc = BANK_DB_ERROR;
        return BANK_BEARER_DB_ERROR;
    }
    if (!token) {
        return BANK_BEARER_NONE;
    }
    if (bank_token_decode(p, token, &id, &secret) != 0) {
        return BANK_BEARER_MALFORMED;
    }
    *rc = bank_store_token_find(db, id, &row);
    if (*rc != BANK_DB_OK && *rc != BANK_DB_NOT_FOUND) {
        return BANK_BEARER_DB_ERROR;
    }
    if (*rc == BANK_DB_NOT_FOUND) {
        return BANK_BEARER_UNKNOWN;
    }
    if ((v = check_row(h, p, id, secret, &row, 0, ability, out)) != BANK_BEARER_OK) {
        return v;
    }
    touch(b, h, baton, p, id, &row, 0);
    if (keep) {
        bank_kept_put(b->tokens, h->scope(baton), id, &row, fetched, epoch);
    } else if (b->tokens && keep_seconds > 0) {
        /* read ahead on this request's connection when due, never waited for: the next
         * check of the token keeps it */
        (void)feed_check(b, h, baton, 0);
    }
    return BANK_BEARER_OK;
}

void bank_bearer_forget(bank_bearer_t *b, const char *id)
{
    if (b->tokens) {
        bank_kept_invalidate(b->tokens, id);
    }
}

/* 1 if the kept identity value equals the one sent, in time that does not depend on where
 * they differ (their lengths are fixed by validation: a BVN, a date). */
static int same_identity(const char *kept, const char *sent)
{
    apr_size_t n = kept ? strlen(kept) : 0;

    return kept && sent && strlen(sent) == n && CRYPTO_memcmp(kept, sent, n) == 0;
}

int bank_bearer_answer_get(bank_bearer_t *b, const bank_bearer_host *h, void *baton, apr_pool_t *p,
                           apr_time_t max_age, const char *customer_id,
                           const bank_bvn_question_t *q, const char **text)
{
    const char *f[A_FIELDS];

    if (!b->answers || max_age <= 0 ||
        !bank_kept_holds(b->answers, p, h->scope(baton), customer_id, max_age) ||
        !feed_current(b, h, baton) ||
        !bank_kept_get_fields(b->answers, p, h->scope(baton), customer_id, max_age, f)) {
        return 0;
    }
    if (!same_identity(f[A_BVN], q->bvn) || !same_identity(f[A_DOB], q->dob) || !f[A_RULE] ||
        strcmp(f[A_RULE], q->rule) != 0) {
        /* Anything else sent for this customer is decided by the database, and the kept
         * answer goes at once: a guess that fails here may be counted toward BankBvnThrottle,
         * and no process should confirm a later guess before it hears of that count. */
        bank_bearer_answer_forget(b, customer_id);
        return 0;
    }
    *text = f[A_TEXT];
    return 1;
}

int bank_bearer_answer_epoch(bank_bearer_t *b, const bank_bearer_host *h, void *baton,
                             apr_int64_t seconds, apr_uint64_t *epoch)
{
    return may_keep(b, h, baton, b->answers, seconds, epoch);
}

void bank_bearer_answer_put(bank_bearer_t *b, const void *scope, const char *customer_id,
                            const bank_bvn_question_t *q, const char *text, apr_time_t fetched,
                            apr_uint64_t epoch)
{
    const char *f[A_FIELDS] = {q->bvn, q->dob, q->rule, text};

    if (b->answers) {
        bank_kept_put_fields(b->answers, scope, customer_id, f, fetched, epoch);
    }
}

void bank_bearer_answer_forget(bank_bearer_t *b, const char *customer_id)
{
    if (b->answers) {
        bank_kept_invalidate(b->answers, customer_id);
    }
}
