/* What keeps a process's token cache (bank_kept.h) true to the database: the
 * revocation feed, rows the database's triggers add to auth_token_revocations whenever a
 * token row is deleted or changed in what verifies it, whoever does it (sign-out, bankctl, an
 * application's own SQL). A cached token may answer only while the feed of its database was
 * read at most an interval ago (bank_change_feed_current); a read drops every token revoked
 * since the read before (bank_change_feed_check, bank_change_feed_read). A read that fails
 * distrusts the whole cache until a read succeeds again, and the next read starts where the last
 * good one stopped, so nothing committed meanwhile is missed. No httpd dependency; safe between
 * threads. */
#ifndef BANK_CHANGE_FEED_H
#define BANK_CHANGE_FEED_H

#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_time.h>
#include "bank_db.h"
#include "bank_kept.h"

typedef struct bank_change_feed_s bank_change_feed_t;

/* The feed of one database for cache, and for answers (NULL: none; verified BVN answers
 * kept by customer id), current for interval after each read. Both are distrusted until
 * the first read (which only learns where the feed stands). NULL and *err on failure (no
 * mutex or pool). */
bank_change_feed_t *bank_change_feed_create(apr_pool_t *p, bank_kept_t *cache, bank_kept_t *answers,
                                            apr_time_t interval, const char **err);

/* 1 if the feed's last read started at most interval before now and succeeded. */
int bank_change_feed_current(bank_change_feed_t *f, apr_time_t now);

/* Reads the feed on db (a connection to the feed's database), unless another thread read it
 * since now - interval (tests; requests use bank_change_feed_check); now is when the caller decided
 * to read. BANK_DB_OK, or the failure (the cache then distrusted and the failure logged, once until
 * a read succeeds). */
bank_db_rc bank_change_feed_read(bank_change_feed_t *f, bank_db_t *db, apr_time_t now);

/* The connection a read is made on, asked for only by the thread that reads (NULL: none). */
typedef bank_db_t *(*bank_change_feed_db_fn)(void *baton);

/* 1 if the cache may answer at now: the feed read at most an interval before. Reads it on
 * db(baton) when due, by one thread at a time:
 * - read more than half an interval ago: by this thread, unless another is reading it; no
 *   thread waits for that read (the feed is still current);
 * - more than an interval ago (or never, or the last read failed): by this thread, or, while
 *   another reads it, after that read if wait (else 0 at once: a caller holding a database
 *   connection must not wait on a read that may be waiting for one), for an interval at
 *   most (then 0). A read that failed while this thread waited is not tried again: 0.
 * Whether the feed is current after a read or a wait is judged at the time it ended. */
int bank_change_feed_check(bank_change_feed_t *f, apr_time_t now, int wait,
                           bank_change_feed_db_fn db, void *baton);

/* A read's outcome, as bank_change_feed_read applies it (exposed for tests): the ids revoked
 * since the position before ("0": every token), the customers whose answers changed ("*":
 * every customer; more than BANK_CHANGE_FEED_MAX of both together: everything in both caches)
 * and the position now, the read started at started. */
void bank_change_feed_apply(bank_change_feed_t *f, const apr_array_header_t *ids,
                            const apr_array_header_t *customers, const char *position,
                            apr_time_t started);
/* A failed read: both caches distrusted until bank_change_feed_apply. 1 if the feed was
 * current or trusted until then (the first failure of a run, to be logged). */
int bank_change_feed_failed(bank_change_feed_t *f);

/* Where the feed stands (NULL before its first read), copied into p. */
const char *bank_change_feed_position(bank_change_feed_t *f, apr_pool_t *p);

#endif
