/* The rules of customer bearer tokens (docs/api.md) and of the answers kept beside them: decode
 * the token, answer it from the process's kept rows (bank_kept.h) while the scope's change
 * feed (bank_change_feed.h) is current, else look its row up; compare the SHA-256 of the
 * secret in constant time, refuse expired ones, check the endpoint's ability, note the last
 * use at most once per BANK_BEARER_TOUCH_INTERVAL; and the verified BVN answers kept by
 * customer. No httpd dependency: what only the host has (the request's connection, taken
 * when first needed, the clock, where a message belongs, the scope) comes through
 * bank_bearer_host; the host answers the verdicts (401, 403, 503).
 *
 * Verified token rows are kept for at most the caller's max age (BankTokenCacheSeconds):
 * requests with the same token within that time are verified against them (the same hash
 * comparison, expiry and ability checks) without a database round trip, as long as the
 * scope's change feed was read in the last BANK_CHANGE_FEED_INTERVAL_MS (one request reads
 * it again once it is half that old, while the others go on answering from the kept rows;
 * requests that find it older wait for one read: bank_change_feed_check). A token with no
 * kept row neither reads nor waits for the feed: its database check reads the feed ahead
 * afterwards, on its own connection, when it is due and no other request reads it (never
 * waiting), so that the next check keeps the row. A token revoked
 * anywhere is therefore refused here within that interval; sign-out here drops it at once.
 *
 * A verified customer's BVN answer is kept, by customer, for at most BankBvnCacheSeconds,
 * and kept true by the same feed (the database's triggers add the customer on every change
 * of their row, account or BVN failure count, and every customer on a change of the
 * identity records: 009_answer_feed.sql). It is given only while the feed is current, and
 * kept only if the feed was current before the database read began (so that the feed's next
 * read reports any change the read did not see). */
#ifndef BANK_BEARER_H
#define BANK_BEARER_H

#include <apr_pools.h>
#include <apr_time.h>
#include "bank_change_feed.h"
#include "bank_db.h"
#include "bank_kept.h"
#include "bank_log.h"
#include "bank_token_uses.h"

/* last_used_at is noted at most this often per token, not on every request. */
#define BANK_BEARER_TOUCH_INTERVAL apr_time_from_sec(60)
/* Kept per process: token rows, and BVN answers (about a kilobyte each: fewer). */
#define BANK_BEARER_TOKENS_MAX 10000
#define BANK_BEARER_ANSWERS_MAX 2000

typedef struct {
    const char *token_id; /* the bearer token's row (sign-out deletes it) */
    const char *customer_id;
    const char *abilities;
} bank_principal_t;

/* What a verified customer's BVN answer answers: the BVN and date of birth sent, and the rule
 * of the Location asked (BankBvnThrottle's attempts and window, the identity provider): an
 * answer is given again only for the same three. */
typedef struct {
    const char *bvn;
    const char *dob;
    const char *rule;
} bank_bvn_question_t;

/* What the rules need from their host, with the baton its caller passed. */
typedef struct {
    /* The request's connection, taken on the first call (later calls: the same one), or
     * NULL if none can be had. */
    bank_db_t *(*db)(void *baton);
    /* 1 if the request holds a connection of the pool: it never waits for another
     * request's read of the feed, which may be waiting for one. */
    int (*db_held)(void *baton);
    /* The clock (the same for every request). */
    apr_time_t (*now)(void);
    /* The scope's set of token uses (its writer's), or NULL: a use is written on the way. */
    bank_token_uses_t *(*uses)(void *baton);
    /* Where a message about the request belongs (asked only when one is logged). */
    bank_log_where (*where)(void *baton);
    /* The scope (a server: its own database and feed; kept rows are told apart by it). */
    const void *(*scope)(void *baton);
} bank_bearer_host;

typedef struct bank_bearer_s bank_bearer_t;

/* The kept rows of a process (a failure to make them is logged: then nothing is kept), none
 * trusted past max_age; scopes are added with bank_bearer_add_scope. */
bank_bearer_t *bank_bearer_create(apr_pool_t *p, apr_time_t max_age);
/* scope's change feed, read at most every interval; if it cannot be made (logged), nothing
 * is kept for any scope. */
void bank_bearer_add_scope(bank_bearer_t *b, apr_pool_t *p, const void *scope, apr_time_t interval);

typedef enum {
    BANK_BEARER_OK,
    BANK_BEARER_MISS,      /* bank_bearer_kept only: not answered, ask the database */
    BANK_BEARER_NONE,      /* no bearer token */
    BANK_BEARER_MALFORMED, /* not a token */
    BANK_BEARER_UNKNOWN,   /* unknown or revoked, or not its secret */
    BANK_BEARER_EXPIRED,
    BANK_BEARER_FORBIDDEN, /* a valid token without the ability */
    BANK_BEARER_DB_ERROR   /* no connection, or the lookup failed (*rc) */
} bank_bearer_verdict;

/* Why a token was refused, for the operator's log (no token material). */
const char *bank_bearer_why(bank_bearer_verdict v);

/* token (the bearer value, may be NULL) answered from the kept rows if max_age (> 0) allows
 * and the feed is current (read now by this request when due): OK with *out, or a refusal;
 * MISS to ask the database (bank_bearer_check). */
bank_bearer_verdict bank_bearer_kept(bank_bearer_t *b, const bank_bearer_host *h, void *baton,
                                     apr_pool_t *p, const char *token, apr_time_t max_age,
                                     const char *ability, bank_principal_t **out);
/* token checked against its row, read on the host's connection; the row kept for requests to
 * come when keep_seconds > 0 and the feed is current. OK with *out, or the refusal (*rc: the
 * lookup's failure for DB_ERROR). */
bank_bearer_verdict bank_bearer_check(bank_bearer_t *b, const bank_bearer_host *h, void *baton,
                                      apr_pool_t *p, const char *token, apr_int64_t keep_seconds,
                                      const char *ability, bank_principal_t **out, bank_db_rc *rc);
/* Drops token id from this process's kept rows (sign-out revoked it). */
void bank_bearer_forget(bank_bearer_t *b, const char *id);

/* 1 and *text (the whole answer) if customer_id's answer to q was read at most max_age ago
 * and nothing it is made of changed since, as far as the feed, read within its interval (by
 * this request if needed), tells; else 0, and a kept answer of the customer to another
 * question is dropped. */
int bank_bearer_answer_get(bank_bearer_t *b, const bank_bearer_host *h, void *baton, apr_pool_t *p,
                           apr_time_t max_age, const char *customer_id,
                           const bank_bvn_question_t *q, const char **text);
/* 1 and *epoch if an answer read from the database from now on may be kept for seconds (the
 * cache is on and the scope's feed is current, no read here); taken before that read, so
 * that a change heard of since makes the put keep nothing. */
int bank_bearer_answer_epoch(bank_bearer_t *b, const bank_bearer_host *h, void *baton,
                             apr_int64_t seconds, apr_uint64_t *epoch);
/* Keeps the answer text to q of a verified customer of scope, read from the database at
 * fetched (after bank_bearer_answer_epoch said 1). */
void bank_bearer_answer_put(bank_bearer_t *b, const void *scope, const char *customer_id,
                            const bank_bvn_question_t *q, const char *text, apr_time_t fetched,
                            apr_uint64_t epoch);
/* Drops the customer's kept answer from this process. */
void bank_bearer_answer_forget(bank_bearer_t *b, const char *customer_id);

/* What b keeps, for tests: the scope's change feed, the token rows, the answers (NULL:
 * none). */
bank_change_feed_t *bank_bearer_feed(bank_bearer_t *b, const void *scope);
bank_kept_t *bank_bearer_tokens(bank_bearer_t *b);
bank_kept_t *bank_bearer_answers(bank_bearer_t *b);

#endif
