/* Token uses waiting to be recorded (bank_token_uses.h). The noted uses live in a pool of the
 * set's own, cleared whenever a take leaves the set empty, so its memory stays bounded by
 * what is noted between two writes. */
#include <stdlib.h>
#include <string.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>
#include "bank_token_uses.h"
#include "bank_store.h"

struct bank_token_uses_s {
    apr_thread_mutex_t *lock;
    apr_pool_t *pool; /* the noted uses' keys and times */
    apr_hash_t *uses; /* id -> time */
    int max;
};

bank_token_uses_t *bank_token_uses_create(apr_pool_t *p, int max, const char **err)
{
    bank_token_uses_t *u = apr_pcalloc(p, sizeof(*u));

    if (apr_thread_mutex_create(&u->lock, APR_THREAD_MUTEX_DEFAULT, p) != APR_SUCCESS ||
        apr_pool_create(&u->pool, p) != APR_SUCCESS) {
        *err = "no mutex or pool";
        return NULL;
    }
    u->uses = apr_hash_make(u->pool);
    u->max = max;
    return u;
}

int bank_token_uses_note(bank_token_uses_t *u, const char *id, const char *when)
{
    const char *had;
    int noted = 1;

    apr_thread_mutex_lock(u->lock);
    had = apr_hash_get(u->uses, id, APR_HASH_KEY_STRING);
    if (had) {
        if (strcmp(had, when) < 0) { /* bank_time_iso: one width, ordered as text */
            apr_hash_set(u->uses, id, APR_HASH_KEY_STRING, apr_pstrdup(u->pool, when));
        }
    } else if ((int)apr_hash_count(u->uses) < u->max) {
        apr_hash_set(u->uses, apr_pstrdup(u->pool, id), APR_HASH_KEY_STRING,
                     apr_pstrdup(u->pool, when));
    } else {
        noted = 0;
    }
    apr_thread_mutex_unlock(u->lock);
    return noted;
}

int bank_token_uses_pending(bank_token_uses_t *u)
{
    int n;

    apr_thread_mutex_lock(u->lock);
    n = (int)apr_hash_count(u->uses);
    apr_thread_mutex_unlock(u->lock);
    return n;
}

typedef struct {
    const char *id, *time;
} use_t;

/* Ascending decimal ids: the shorter first, then as text. */
static int by_id(const void *a, const void *b)
{
    const use_t *x = a, *y = b;
    size_t lx = strlen(x->id), ly = strlen(y->id);

    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->id, y->id);
}

int bank_token_uses_take(bank_token_uses_t *u, apr_pool_t *p, int max, const char **ids,
                         const char **times)
{
    apr_hash_index_t *hi;
    use_t *taken;
    int n = 0, i;

    apr_thread_mutex_lock(u->lock);
    taken = apr_palloc(p, sizeof(*taken) * (size_t)(max > 0 ? max : 1));
    for (hi = apr_hash_first(p, u->uses); hi && n < max; hi = apr_hash_next(hi)) {
        const void *key;
        void *val;
        apr_hash_this(hi, &key, NULL, &val);
        taken[n].id = apr_pstrdup(p, key);
        taken[n].time = apr_pstrdup(p, val);
        n++;
    }
    for (i = 0; i < n; i++) {
        apr_hash_set(u->uses, taken[i].id, APR_HASH_KEY_STRING, NULL);
    }
    if (apr_hash_count(u->uses) == 0) {
        apr_pool_clear(u->pool);
        u->uses = apr_hash_make(u->pool);
    }
    apr_thread_mutex_unlock(u->lock);
    qsort(taken, (size_t)n, sizeof(*taken), by_id);
    for (i = 0; i < n; i++) {
        ids[i] = taken[i].id;
        times[i] = taken[i].time;
    }
    return n;
}

bank_db_rc bank_token_uses_write(bank_token_uses_t *u, bank_db_t *db, apr_pool_t *p, int *written)
{
    const char *ids[BANK_TOKEN_USES_MAX], *times[BANK_TOKEN_USES_MAX];
    bank_db_rc rc = BANK_DB_OK;
    int n, left = bank_token_uses_pending(u); /* what was noted until now, not what comes */
    apr_pool_t *sub;

    *written = 0;
    apr_pool_create(&sub, p);
    while (rc == BANK_DB_OK && left > 0 &&
           (n = bank_token_uses_take(u, sub, BANK_TOKEN_USES_MAX, ids, times)) > 0) {
        int i;
        rc = bank_store_token_uses(db, n, ids, times);
        *written += rc == BANK_DB_OK ? n : 0;
        for (i = 0; rc == BANK_DB_BUSY && i < n; i++) {
            bank_token_uses_note(u, ids[i], times[i]); /* the next write tries them again */
        }
        left -= n;
        apr_pool_clear(sub);
    }
    apr_pool_destroy(sub);
    return rc;
}
