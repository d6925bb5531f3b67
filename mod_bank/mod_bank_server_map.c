/* One entry per server per child process (mod_bank_server_map.h). */
#include <apr_hash.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>
#include "mod_bank_server_map.h"

struct bank_server_map_s {
    apr_pool_t *pool;
    apr_thread_mutex_t *lock; /* guards by_server and every entry */
    apr_hash_t *by_server;    /* server_rec * -> entry */
    apr_size_t size;
};

bank_server_map_t *bank_server_map_make(apr_pool_t *pchild, apr_size_t size)
{
    bank_server_map_t *m = apr_pcalloc(pchild, sizeof(*m));

    if (apr_thread_mutex_create(&m->lock, APR_THREAD_MUTEX_DEFAULT, pchild) != APR_SUCCESS) {
        return NULL;
    }
    m->pool = pchild;
    m->by_server = apr_hash_make(pchild);
    m->size = size;
    return m;
}

void *bank_server_map_lock(bank_server_map_t *m, const server_rec *s)
{
    void *e;

    if (!m || apr_thread_mutex_lock(m->lock) != APR_SUCCESS) {
        return NULL;
    }
    e = apr_hash_get(m->by_server, &s, sizeof(s));
    if (!e) {
        /* kept for the child's lifetime: the key is the server_rec pointer */
        e = apr_pcalloc(m->pool, m->size);
        apr_hash_set(m->by_server, apr_pmemdup(m->pool, &s, sizeof(s)), sizeof(s), e);
    }
    return e;
}

void bank_server_map_unlock(bank_server_map_t *m)
{
    apr_thread_mutex_unlock(m->lock);
}

apr_pool_t *bank_server_map_pool(const bank_server_map_t *m)
{
    return m->pool;
}
