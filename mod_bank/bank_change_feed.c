/* The token revocation feed (bank_change_feed.h). The position is kept in a pool of its own,
 * replaced on each read, so a long-running process holds one position's bytes. */
#include <string.h>
#include <apr_atomic.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>
#include "bank_limits.h"
#include "bank_log.h"
#include "bank_metrics.h"
#include "bank_store.h"
#include "bank_change_feed.h"

struct bank_change_feed_s {
    apr_thread_mutex_t *lock; /* one read at a time; guards position and failing */
    bank_kept_t *cache;
    bank_kept_t *answers;      /* NULL: none */
    apr_pool_t *parent, *pool; /* pool: the position's */
    const char *position;
    apr_time_t interval;
    volatile apr_uint64_t read_at; /* when the last good read started; 0: none since a failure */
    volatile apr_uint32_t ended;   /* reads ended, good or not (bank_change_feed_check) */
    int failing;
};

/* Every cache the feed keeps true, distrusted; and trusted again. */
static void distrust(bank_change_feed_t *f)
{
    bank_kept_distrust(f->cache);
    if (f->answers) {
        bank_kept_distrust(f->answers);
    }
}

static void trust(bank_change_feed_t *f)
{
    bank_kept_trust(f->cache);
    if (f->answers) {
        bank_kept_trust(f->answers);
    }
}

bank_change_feed_t *bank_change_feed_create(apr_pool_t *p, bank_kept_t *cache, bank_kept_t *answers,
                                            apr_time_t interval, const char **err)
{
    bank_change_feed_t *f = apr_pcalloc(p, sizeof(*f));

    if (apr_thread_mutex_create(&f->lock, APR_THREAD_MUTEX_TIMED, p) != APR_SUCCESS ||
        apr_pool_create(&f->pool, p) != APR_SUCCESS) {
        *err = "no mutex or pool";
        return NULL;
    }
    f->parent = p;
    f->cache = cache;
    f->answers = answers;
    f->interval = interval;
    distrust(f);
    return f;
}

/* 1 if the last read was good and started at most span before now. A read started after
 * now: by another thread since now was taken, or the clock set back (then trusted for an
 * interval at most). */
static int read_within(bank_change_feed_t *f, apr_time_t now, apr_interval_time_t span)
{
    apr_time_t at = (apr_time_t)apr_atomic_read64(&f->read_at);

    return at > 0 && now - at <= span && at - now <= f->interval && !bank_kept_distrusted(f->cache);
}

int bank_change_feed_current(bank_change_feed_t *f, apr_time_t now)
{
    return read_within(f, now, f->interval);
}

/* Drops from c the ids listed, or everything if one of them is every. */
static void drop(bank_kept_t *c, const apr_array_header_t *ids, const char *every)
{
    int i, all = 0;

    for (i = 0; !all && i < ids->nelts; i++) {
        all = strcmp(APR_ARRAY_IDX(ids, i, const char *), every) == 0;
    }
    if (all) {
        bank_kept_distrust(c);
        return;
    }
    for (i = 0; i < ids->nelts; i++) {
        bank_kept_invalidate(c, APR_ARRAY_IDX(ids, i, const char *));
    }
}

void bank_change_feed_apply(bank_change_feed_t *f, const apr_array_header_t *ids,
                            const apr_array_header_t *customers, const char *position,
                            apr_time_t started)
{
    apr_pool_t *pool;

    if (ids->nelts + customers->nelts > BANK_CHANGE_FEED_MAX) {
        distrust(f);
    } else {
        drop(f->cache, ids, "0");
        if (f->answers) {
            drop(f->answers, customers, "*");
        }
    }
    if (apr_pool_create(&pool, f->parent) == APR_SUCCESS) {
        f->position = apr_pstrdup(pool, position);
        apr_pool_destroy(f->pool);
        f->pool = pool;
        f->failing = 0;
        trust(f);
        apr_atomic_set64(&f->read_at, (apr_uint64_t)started);
    } else {
        bank_change_feed_failed(f);
    }
}

int bank_change_feed_failed(bank_change_feed_t *f)
{
    int first = !f->failing;

    apr_atomic_set64(&f->read_at, 0);
    distrust(f);
    f->failing = 1;
    return first;
}

/* Reads the feed on db (NULL: no connection to read it on), under f->lock. */
static bank_db_rc read_locked(bank_change_feed_t *f, bank_db_t *db)
{
    apr_array_header_t *ids = NULL, *customers = NULL;
    const char *next = NULL;
    apr_time_t started = apr_time_now();
    bank_db_rc rc = BANK_DB_ERROR;

    if (db && (rc = bank_store_token_revocations(db, f->position, &ids, &customers, &next)) ==
                  BANK_DB_OK) {
        int was_failing = f->failing;
        bank_change_feed_apply(f, ids, customers, next, started);
        if (!f->failing && bank_metrics_shared()) {
            bank_metrics_feed_read(bank_metrics_shared(), started);
        }
        if (was_failing && !f->failing) {
            bank_log(bank_db_where(db), BANK_LOG_MARK, BANK_LOG_NOTICE,
                     BANKLOGNO(2102) "token revocation feed read again: the token cache answers "
                                     "again");
        }
    } else if (db) {
        if (bank_metrics_shared()) {
            bank_metrics_count(bank_metrics_shared(), BANK_M_FEED_FAILED);
        }
        if (bank_change_feed_failed(f)) {
            bank_log(bank_db_where(db), BANK_LOG_MARK, BANK_LOG_WARNING,
                     BANKLOGNO(2101) "token revocation feed unreadable, every token is read from "
                                     "the database until it is read again: %s",
                     bank_db_error_line(bank_db_pool(db), bank_db_error(db)));
        }
    }
    apr_atomic_inc32(&f->ended);
    return rc;
}

bank_db_rc bank_change_feed_read(bank_change_feed_t *f, bank_db_t *db, apr_time_t now)
{
    bank_db_rc rc = BANK_DB_OK;

    apr_thread_mutex_lock(f->lock);
    if (!bank_change_feed_current(f, now)) {
        rc = read_locked(f, db);
    }
    apr_thread_mutex_unlock(f->lock);
    return rc;
}

/* 1 if the feed was read at most half its interval before now: no read ahead yet. */
static int fresh(bank_change_feed_t *f, apr_time_t now)
{
    return read_within(f, now, f->interval / 2);
}

/* Whether the feed is current once a read or a wait is over: at now, or later if time
 * passed meanwhile (a wait for a connection may have been long). */
static int current_after(bank_change_feed_t *f, apr_time_t now)
{
    apr_time_t later = apr_time_now();

    return bank_change_feed_current(f, later > now ? later : now);
}

int bank_change_feed_check(bank_change_feed_t *f, apr_time_t now, int wait,
                           bank_change_feed_db_fn db, void *baton)
{
    apr_uint32_t ended;

    if (bank_change_feed_current(f, now)) {
        /* Read ahead by one thread; the others answer from the cache meanwhile. */
        if (!fresh(f, now) && apr_thread_mutex_trylock(f->lock) == APR_SUCCESS) {
            if (!fresh(f, now)) {
                read_locked(f, db(baton));
            }
            apr_thread_mutex_unlock(f->lock);
            return current_after(f, now);
        }
        return 1;
    }
    if (!wait) {
        if (apr_thread_mutex_trylock(f->lock) != APR_SUCCESS) {
            return 0;
        }
    } else {
        ended = apr_atomic_read32(&f->ended);
        /* A read takes milliseconds; one that waits longer for a connection of the pool is
         * not waited for beyond an interval (the caller goes to the database). */
        if (apr_thread_mutex_timedlock(f->lock, f->interval) != APR_SUCCESS) {
            return 0;
        }
        if (apr_atomic_read32(&f->ended) != ended && !current_after(f, now)) {
            /* the read waited on failed: not tried again by every thread that waited */
            apr_thread_mutex_unlock(f->lock);
            return 0;
        }
    }
    if (!current_after(f, now)) {
        read_locked(f, db(baton));
    }
    apr_thread_mutex_unlock(f->lock);
    return current_after(f, now);
}

const char *bank_change_feed_position(bank_change_feed_t *f, apr_pool_t *p)
{
    const char *pos;

    apr_thread_mutex_lock(f->lock);
    pos = f->position ? apr_pstrdup(p, f->position) : NULL;
    apr_thread_mutex_unlock(f->lock);
    return pos;
}
