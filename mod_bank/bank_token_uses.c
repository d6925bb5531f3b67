/* Token uses waiting to be recorded (bank_token_uses.h). The noted uses live in one of two
 * pools, each with an allocator of its own: notes go into the active one (under the lock);
 * a write swaps them, so the writer reads and then clears the other without holding the
 * lock and without sharing an allocator with any other thread. Memory stays bounded by what
 * is noted between two writes. */
#include <stdlib.h>
#include <string.h>
#include <apr_allocator.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>
#include "bank_token_uses.h"
#include "bank_store.h"

struct bank_token_uses_s {
    apr_thread_mutex_t *lock;
    apr_pool_t *pools[2];
    int active;       /* pools[active] holds uses and what it points to */
    apr_hash_t *uses; /* id -> time */
    int max;
};

static apr_status_t drop_pools(void *data)
{
    bank_token_uses_t *u = data;
    int k;

    for (k = 0; k < 2; k++) {
        if (u->pools[k]) {
            apr_pool_destroy(u->pools[k]);
            u->pools[k] = NULL;
        }
    }
    return APR_SUCCESS;
}

bank_token_uses_t *bank_token_uses_create(apr_pool_t *p, int max, const char **err)
{
    bank_token_uses_t *u = apr_pcalloc(p, sizeof(*u));
    int k;

    if (apr_thread_mutex_create(&u->lock, APR_THREAD_MUTEX_DEFAULT, p) != APR_SUCCESS) {
        *err = "no mutex";
        return NULL;
    }
    apr_pool_cleanup_register(p, u, drop_pools, apr_pool_cleanup_null);
    for (k = 0; k < 2; k++) {
        apr_allocator_t *a = NULL;
        if (apr_allocator_create(&a) != APR_SUCCESS ||
            apr_pool_create_unmanaged_ex(&u->pools[k], NULL, a) != APR_SUCCESS) {
            if (a) {
                apr_allocator_destroy(a);
            }
            *err = "no pool";
            return NULL;
        }
        apr_allocator_owner_set(a, u->pools[k]);
    }
    u->uses = apr_hash_make(u->pools[0]);
    u->max = max;
    return u;
}

int bank_token_uses_note(bank_token_uses_t *u, const char *id, const char *when)
{
    apr_pool_t *pool;
    const char *had;
    int noted = 1;

    apr_thread_mutex_lock(u->lock);
    pool = u->pools[u->active];
    had = apr_hash_get(u->uses, id, APR_HASH_KEY_STRING);
    if (had) {
        if (strcmp(had, when) < 0) { /* bank_time_iso: one width, ordered as text */
            apr_hash_set(u->uses, id, APR_HASH_KEY_STRING, apr_pstrdup(pool, when));
        }
    } else if ((int)apr_hash_count(u->uses) < u->max) {
        apr_hash_set(u->uses, apr_pstrdup(pool, id), APR_HASH_KEY_STRING, apr_pstrdup(pool, when));
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

/* The entries of h, copied into p, sorted by id; *n how many. */
static use_t *sorted(apr_pool_t *p, apr_hash_t *h, int max, int *n)
{
    use_t *all = apr_palloc(p, sizeof(*all) * (size_t)(max > 0 ? max : 1));
    apr_hash_index_t *hi;

    *n = 0;
    for (hi = apr_hash_first(p, h); hi && *n < max; hi = apr_hash_next(hi)) {
        const void *key;
        void *val;
        apr_hash_this(hi, &key, NULL, &val);
        all[*n].id = apr_pstrdup(p, key);
        all[*n].time = apr_pstrdup(p, val);
        (*n)++;
    }
    qsort(all, (size_t)*n, sizeof(*all), by_id);
    return all;
}

int bank_token_uses_take(bank_token_uses_t *u, apr_pool_t *p, int max, const char **ids,
                         const char **times)
{
    use_t *taken;
    int n, i;

    apr_thread_mutex_lock(u->lock);
    taken = sorted(p, u->uses, max, &n);
    for (i = 0; i < n; i++) {
        apr_hash_set(u->uses, taken[i].id, APR_HASH_KEY_STRING, NULL);
    }
    apr_thread_mutex_unlock(u->lock);
    for (i = 0; i < n; i++) {
        ids[i] = taken[i].id;
        times[i] = taken[i].time;
    }
    return n;
}

bank_db_rc bank_token_uses_write(bank_token_uses_t *u, bank_db_t *db, apr_pool_t *p,
                                 const bank_token_uses_turn_t *turn, int *written)
{
    const char *ids[BANK_TOKEN_USES_MAX], *times[BANK_TOKEN_USES_MAX];
    bank_db_rc rc = BANK_DB_OK;
    apr_hash_t *noted;
    use_t *all;
    int old, n, i, k, count = 0;

    *written = 0;
    apr_thread_mutex_lock(u->lock);
    old = u->active;
    noted = u->uses;
    u->active = !old;
    u->uses = apr_hash_make(u->pools[u->active]); /* cleared at the end of the last write */
    apr_thread_mutex_unlock(u->lock);
    all = sorted(p, noted, (int)apr_hash_count(noted), &n);
    apr_pool_clear(u->pools[old]); /* copied out: the writer's alone until the next swap */
    for (i = 0; rc == BANK_DB_OK && i < n; i += count) {
        int took = turn && turn->take ? turn->take(turn->baton) : 0;
        count = n - i < BANK_TOKEN_USES_MAX ? n - i : BANK_TOKEN_USES_MAX;
        for (k = 0; k < count; k++) {
            ids[k] = all[i + k].id;
            times[k] = all[i + k].time;
        }
        rc = bank_store_token_uses(db, count, ids, times);
        if (took) {
            turn->give(turn->baton);
        }
        *written += rc == BANK_DB_OK ? count : 0;
    }
    if (rc == BANK_DB_BUSY) { /* this batch and the rest: the next write tries them again */
        for (i -= count; i < n; i++) {
            bank_token_uses_note(u, all[i].id, all[i].time);
        }
    }
    return rc;
}
