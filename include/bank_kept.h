/* Verified token rows kept per process (BankTokenCacheSeconds, docs/configuration.md), so
 * requests with the same bearer token within that time skip the database round trip; the
 * same kind of cache, of rows of other fields, keeps what the same revocation feed keeps
 * true (verified BVN answers, BankBvnCacheSeconds: the *_fields functions). No httpd
 * dependency; safe between threads.
 *
 * What may be trusted is bounded three ways: an entry older than the caller's max age (at
 * most the cache's own bound) is a miss; bank_kept_invalidate(id) drops a token at
 * once (sign-out here, or a revocation heard from elsewhere); and while the cache is
 * distrusted (bank_kept_distrust: the process lost the feed that tells it of
 * revocations) every lookup is a miss and nothing is kept, until bank_kept_trust.
 * A row read from the database before an invalidation or a distrust is never kept after
 * it: callers take an epoch before reading and pass it to put. Unknown tokens are never
 * kept. */
#ifndef BANK_KEPT_H
#define BANK_KEPT_H

#include <apr_pools.h>
#include <apr_time.h>
#include "bank_store.h"

typedef struct bank_kept_s bank_kept_t;

/* A cache in p holding at most max_entries tokens, none trusted past max_age (the upper
 * bound of every caller's). NULL and *err on failure (no mutex or pool). Its memory stays
 * bounded: all entries are dropped together every max_age, and once max_entries puts (a
 * token put again counts again) were made since the last drop. */
bank_kept_t *bank_kept_create(apr_pool_t *p, int max_entries, apr_time_t max_age, const char **err);

/* The same for rows of nfields strings, kept by id (bank_kept_invalidate(id) drops
 * them) and read and put with the *_fields functions below. */
bank_kept_t *bank_kept_create_fields(apr_pool_t *p, int max_entries, apr_time_t max_age,
                                     int nfields, const char **err);
/* As bank_kept_get and _put, for a cache of nfields strings (fields: that many,
 * copied into p on a hit; any may be NULL; fields NULL: nothing copied). */
int bank_kept_get_fields(bank_kept_t *c, apr_pool_t *p, const void *scope, const char *id,
                         apr_time_t max_age, const char **fields);
void bank_kept_put_fields(bank_kept_t *c, const void *scope, const char *id,
                          const char *const *fields, apr_time_t fetched, apr_uint64_t epoch);

/* 1 if a get of id (either kind) would answer now (nothing copied): a caller that must
 * first make sure the cache may answer (its feed read) asks this before. */
int bank_kept_holds(bank_kept_t *c, apr_pool_t *p, const void *scope, const char *id,
                    apr_time_t max_age);

/* Taken before the database read of a row that is then put: an invalidation or distrust
 * since makes the put keep nothing. */
apr_uint64_t bank_kept_epoch(bank_kept_t *c);

/* 1 and *row (copied into p) if token id of scope (a database: each virtual host may have
 * its own) was read at most max_age ago (capped at the cache's bound) and the cache is
 * trusted; else 0. */
int bank_kept_get(bank_kept_t *c, apr_pool_t *p, const void *scope, const char *id,
                  apr_time_t max_age, bank_token_row_t *row);
/* Keeps row, read from the database at fetched, unless the epoch has moved since. */
void bank_kept_put(bank_kept_t *c, const void *scope, const char *id, const bank_token_row_t *row,
                   apr_time_t fetched, apr_uint64_t epoch);
/* A kept token's use was recorded at last_used (no second write for it). */
void bank_kept_touched(bank_kept_t *c, const void *scope, const char *id, const char *last_used);

/* Token id is no longer to be trusted, in every scope: dropped now, and a read of it in
 * flight is not kept. */
void bank_kept_invalidate(bank_kept_t *c, const char *id);
/* Trust nothing kept until bank_kept_trust: every entry is dropped, every lookup
 * misses and nothing is kept meanwhile. */
void bank_kept_distrust(bank_kept_t *c);
void bank_kept_trust(bank_kept_t *c);
/* 1 while distrusted. */
int bank_kept_distrusted(bank_kept_t *c);
/* Tokens kept now. */
int bank_kept_count(bank_kept_t *c);

#endif
