/* Verified rows per process (bank_kept.h): token rows, or the BVN answers the same
 * feed keeps true, each kept as its fields' strings. Entries live in one pool, dropped
 * together (every max_age, or once max_entries puts were made into it), so memory stays
 * bounded without a per-entry free; an invalidated or replaced entry is unlinked and its
 * bytes go with the next drop. */
#include <string.h>
#include <apr_strings.h>
#include <apr_hash.h>
#include <apr_thread_mutex.h>
#include "bank_kept.h"

/* A token row's fields, in this order. */
enum { F_CUSTOMER, F_HASH, F_ABILITIES, F_EXPIRES, F_LAST_USED, TOKEN_FIELDS };

typedef struct {
    const char **fields;
    const char *id;
    apr_time_t fetched;
} entry_t;

struct bank_kept_s {
    apr_thread_mutex_t *lock;
    apr_pool_t *pool;   /* this generation's entries */
    apr_hash_t *tokens; /* "scope/id" -> entry_t * */
    apr_time_t born, max_age;
    int max_entries, nfields;
    int puts;       /* entries and touches written into this generation's pool */
    int token_rows; /* the fields are a token row's (bank_kept_touched) */
    int distrusted;
    apr_uint64_t epoch; /* moves on every invalidation and distrust */
};

bank_kept_t *bank_kept_create_fields(apr_pool_t *p, int max_entries, apr_time_t max_age,
                                     int nfields, const char **err)
{
    bank_kept_t *c = apr_pcalloc(p, sizeof(*c));

    if (apr_thread_mutex_create(&c->lock, APR_THREAD_MUTEX_DEFAULT, p) != APR_SUCCESS ||
        apr_pool_create(&c->pool, p) != APR_SUCCESS) {
        *err = "no mutex or pool";
        return NULL;
    }
    c->tokens = apr_hash_make(c->pool);
    c->born = apr_time_now();
    c->max_age = max_age;
    c->max_entries = max_entries;
    c->nfields = nfields;
    return c;
}

bank_kept_t *bank_kept_create(apr_pool_t *p, int max_entries, apr_time_t max_age, const char **err)
{
    bank_kept_t *c = bank_kept_create_fields(p, max_entries, max_age, TOKEN_FIELDS, err);

    if (c) {
        c->token_rows = 1;
    }
    return c;
}

static const char *key_of(apr_pool_t *p, const void *scope, const char *id)
{
    return apr_psprintf(p, "%pp/%s", scope, id);
}

/* Drops every entry (the lock held). */
static void drop_all(bank_kept_t *c, apr_time_t now)
{
    apr_pool_clear(c->pool);
    c->tokens = apr_hash_make(c->pool);
    c->born = now;
    c->puts = 0;
}

static void copy_fields(apr_pool_t *p, const char **to, const char *const *from, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        to[i] = apr_pstrdup(p, from[i]);
    }
}

apr_uint64_t bank_kept_epoch(bank_kept_t *c)
{
    apr_uint64_t e;

    apr_thread_mutex_lock(c->lock);
    e = c->epoch;
    apr_thread_mutex_unlock(c->lock);
    return e;
}

int bank_kept_get_fields(bank_kept_t *c, apr_pool_t *p, const void *scope, const char *id,
                         apr_time_t max_age, const char **fields)
{
    const char *key = key_of(p, scope, id);
    const entry_t *e;
    int hit = 0;

    if (max_age > c->max_age) {
        max_age = c->max_age;
    }
    apr_thread_mutex_lock(c->lock);
    e = c->distrusted ? NULL : apr_hash_get(c->tokens, key, APR_HASH_KEY_STRING);
    if (e && apr_time_now() - e->fetched < max_age) {
        if (fields) {
            copy_fields(p, fields, e->fields, c->nfields);
        }
        hit = 1;
    }
    apr_thread_mutex_unlock(c->lock);
    return hit;
}

int bank_kept_holds(bank_kept_t *c, apr_pool_t *p, const void *scope, const char *id,
                    apr_time_t max_age)
{
    return bank_kept_get_fields(c, p, scope, id, max_age, NULL);
}

void bank_kept_put_fields(bank_kept_t *c, const void *scope, const char *id,
                          const char *const *fields, apr_time_t fetched, apr_uint64_t epoch)
{
    apr_time_t now = apr_time_now();
    entry_t *e;

    apr_thread_mutex_lock(c->lock);
    if (c->distrusted || epoch != c->epoch) {
        apr_thread_mutex_unlock(c->lock);
        return;
    }
    /* every put's bytes stay until the drop, also those of an entry replaced or invalidated:
     * counting puts, not entries, bounds the pool */
    if (now - c->born >= c->max_age || c->puts >= c->max_entries) {
        drop_all(c, now);
    }
    c->puts++;
    e = apr_pcalloc(c->pool, sizeof(*e));
    e->fields = apr_palloc(c->pool, sizeof(*e->fields) * (apr_size_t)c->nfields);
    copy_fields(c->pool, e->fields, fields, c->nfields);
    e->id = apr_pstrdup(c->pool, id);
    e->fetched = fetched;
    apr_hash_set(c->tokens, key_of(c->pool, scope, id), APR_HASH_KEY_STRING, e);
    apr_thread_mutex_unlock(c->lock);
}

int bank_kept_get(bank_kept_t *c, apr_pool_t *p, const void *scope, const char *id,
                  apr_time_t max_age, bank_token_row_t *row)
{
    const char *f[TOKEN_FIELDS];

    if (!bank_kept_get_fields(c, p, scope, id, max_age, f)) {
        return 0;
    }
    row->customer_id = f[F_CUSTOMER];
    row->hash = f[F_HASH];
    row->abilities = f[F_ABILITIES];
    row->expires_at = f[F_EXPIRES];
    row->last_used_at = f[F_LAST_USED];
    return 1;
}

void bank_kept_put(bank_kept_t *c, const void *scope, const char *id, const bank_token_row_t *row,
                   apr_time_t fetched, apr_uint64_t epoch)
{
    const char *f[TOKEN_FIELDS] = {row->customer_id, row->hash, row->abilities, row->expires_at,
                                   row->last_used_at};

    bank_kept_put_fields(c, scope, id, f, fetched, epoch);
}

void bank_kept_touched(bank_kept_t *c, const void *scope, const char *id, const char *last_used)
{
    char key[256];
    entry_t *e;

    apr_snprintf(key, sizeof(key), "%pp/%s", scope, id);
    apr_thread_mutex_lock(c->lock);
    e = apr_hash_get(c->tokens, key, APR_HASH_KEY_STRING);
    if (e && c->token_rows && c->puts < c->max_entries) {
        e->fields[F_LAST_USED] = apr_pstrdup(c->pool, last_used);
        c->puts++;
    }
    apr_thread_mutex_unlock(c->lock);
}

void bank_kept_invalidate(bank_kept_t *c, const char *id)
{
    apr_hash_index_t *hi;

    apr_thread_mutex_lock(c->lock);
    c->epoch++;
    /* every scope's entry of this id; apr_hash allows removing the current entry */
    for (hi = apr_hash_first(NULL, c->tokens); hi; hi = apr_hash_next(hi)) {
        const void *key;
        apr_ssize_t klen;
        void *val;

        apr_hash_this(hi, &key, &klen, &val);
        if (strcmp(((const entry_t *)val)->id, id) == 0) {
            apr_hash_set(c->tokens, key, klen, NULL);
        }
    }
    apr_thread_mutex_unlock(c->lock);
}

void bank_kept_distrust(bank_kept_t *c)
{
    apr_thread_mutex_lock(c->lock);
    c->epoch++;
    c->distrusted = 1;
    drop_all(c, apr_time_now());
    apr_thread_mutex_unlock(c->lock);
}

void bank_kept_trust(bank_kept_t *c)
{
    apr_thread_mutex_lock(c->lock);
    c->distrusted = 0;
    apr_thread_mutex_unlock(c->lock);
}

int bank_kept_distrusted(bank_kept_t *c)
{
    int d;

    apr_thread_mutex_lock(c->lock);
    d = c->distrusted;
    apr_thread_mutex_unlock(c->lock);
    return d;
}

int bank_kept_count(bank_kept_t *c)
{
    int n;

    apr_thread_mutex_lock(c->lock);
    n = (int)apr_hash_count(c->tokens);
    apr_thread_mutex_unlock(c->lock);
    return n;
}
