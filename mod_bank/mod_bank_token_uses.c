/* Each process's writer of token uses (mod_bank_token_uses.h). */
#include <pthread.h>
#include <signal.h>
#include <apr_hash.h>
#include <apr_thread_cond.h>
#include <apr_thread_proc.h>
#include <httpd.h>
#include <http_config.h>
#include <http_log.h>
#include <ap_mpm.h>
#include "mod_bank.h"
#include "mod_bank_db.h"
#include "mod_bank_token_uses.h"

APLOG_USE_MODULE(bank);

/* At most this many tokens' uses wait per server between two writes; a use noted when the
 * set is full is written on the request's way. */
#define USES_MAX 100000
/* How long the writer waits for the notices' commit turn on SQLite before writing anyway. */
#define TURN_WAIT apr_time_from_msec(250)

static apr_hash_t *sets; /* server_rec * -> bank_token_uses_t *, read-only after child init */
static apr_thread_mutex_t *lock;
static apr_thread_cond_t *wake;
static apr_thread_t *thread;
static int stopping;

bank_token_uses_t *bank_token_uses_of(server_rec *s)
{
    return thread ? apr_hash_get(sets, &s, sizeof(s)) : NULL;
}

/* SQLite has one writer: each statement of uses takes the notices' turn, as the push
 * sender's writes do (bank_db_turn_take), so a webhook commit waits for one statement at
 * most; PostgreSQL writes rows apart: no turn. */
static int turn_take(void *baton)
{
    apr_interval_time_t waited = 0;

    (void)baton;
    return bank_db_turn_take(TURN_WAIT, &waited) == APR_SUCCESS;
}

static void turn_give(void *baton)
{
    (void)baton;
    bank_db_turn_give();
}

/* Writes what server s has noted. */
static void write_server(server_rec *s, bank_token_uses_t *u, apr_pool_t *p)
{
    static const bank_token_uses_turn_t turn = {turn_take, turn_give, NULL};
    apr_pool_t *lease = NULL;
    bank_db_t *db;
    bank_db_rc rc;
    int written = 0;

    if (bank_token_uses_pending(u) == 0 || !(db = bank_db_background(s, p, &lease))) {
        return;
    }
    rc = bank_token_uses_write(u, db, p, bank_db_is_pgsql(db) ? NULL : &turn, &written);
    if (rc != BANK_DB_OK) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     BANKLOGNO(2401) "token uses not recorded (%d written before): %s", written,
                     bank_db_error(db));
    }
    bank_db_give_back(&lease);
}

/* Writes what every server has noted; p is cleared by the caller. */
static void write_all(apr_pool_t *p)
{
    apr_hash_index_t *hi;
    apr_pool_t *each;

    apr_pool_create(&each, p);
    for (hi = apr_hash_first(p, sets); hi; hi = apr_hash_next(hi)) {
        const void *key;
        void *val;
        apr_hash_this(hi, &key, NULL, &val);
        write_server(*(server_rec *const *)key, val, each);
        apr_pool_clear(each);
    }
}

static void *APR_THREAD_FUNC writer(apr_thread_t *t, void *data)
{
    apr_pool_t *p;
    int last = 0;

    (void)data;
    apr_pool_create(&p, NULL);
    while (!last) {
        apr_thread_mutex_lock(lock);
        if (!stopping) {
            apr_thread_cond_timedwait(wake, lock, BANK_TOKEN_USES_INTERVAL);
        }
        last = stopping;
        apr_thread_mutex_unlock(lock);
        write_all(p);
        apr_pool_clear(p);
    }
    apr_pool_destroy(p);
    apr_thread_exit(t, APR_SUCCESS);
    return NULL;
}

/* The process exits: the writer writes what is left, then ends. A pre-cleanup: before
 * mod_dbd's connections (in a sub-pool) are closed. */
static apr_status_t writer_stop(void *data)
{
    apr_status_t rv;

    (void)data;
    apr_thread_mutex_lock(lock);
    stopping = 1;
    apr_thread_cond_signal(wake);
    apr_thread_mutex_unlock(lock);
    apr_thread_join(&rv, thread);
    thread = NULL;
    return APR_SUCCESS;
}

void bank_token_uses_child_init(apr_pool_t *pchild, server_rec *s)
{
    const char *err = NULL;
    apr_status_t rv;
    server_rec *v;
    sigset_t all, before;
    int threaded = 0;

    sets = apr_hash_make(pchild);
    for (v = s; v; v = v->next) {
        server_rec **key = apr_palloc(pchild, sizeof(*key));
        bank_token_uses_t *u = bank_token_uses_create(pchild, USES_MAX, &err);

        if (!u) {
            break;
        }
        *key = v;
        apr_hash_set(sets, key, sizeof(*key), u);
    }
    /* A process of one thread (prefork) has one connection and an allocator without a
     * lock: no second thread there; its requests write their uses themselves. */
    if (ap_mpm_query(AP_MPMQ_IS_THREADED, &threaded) != APR_SUCCESS ||
        threaded == AP_MPMQ_NOT_SUPPORTED) {
        thread = NULL;
        return;
    }
    if (!err) {
        /* the writer takes no signal: httpd's are for the threads it made */
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &before);
    }
    if (err || (rv = apr_thread_mutex_create(&lock, APR_THREAD_MUTEX_DEFAULT, pchild)) ||
        (rv = apr_thread_cond_create(&wake, pchild)) ||
        (rv = apr_thread_create(&thread, NULL, writer, NULL, pchild)) != APR_SUCCESS) {
        if (!err) {
            pthread_sigmask(SIG_SETMASK, &before, NULL);
        }
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(2402) "token uses written on each request's way: no writer (%s)",
                     err ? err : "no thread");
        thread = NULL;
        return;
    }
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    apr_pool_pre_cleanup_register(pchild, NULL, writer_stop);
}
