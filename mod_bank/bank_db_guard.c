/* The statement guard (bank_db_guard.h): a table of watched sockets under one mutex, and a
 * thread that wakes every tick (or at once when stopped) and shuts down every socket past its
 * deadline. A slot is only touched under the mutex, so a socket is never shut down after its
 * statement left the guard (its descriptor may belong to something else by then). */
#include <sys/socket.h>
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>
#include <apr_thread_cond.h>
#include "bank_db_guard.h"

typedef struct {
    int fd;  /* -1: free */
    int cut; /* shut down by the guard */
    apr_time_t deadline;
} slot_t;

struct bank_db_guard_s {
    apr_thread_mutex_t *lock;
    apr_thread_cond_t *wake;
    apr_thread_t *thread;
    apr_interval_time_t tick;
    slot_t *slots;
    int nslots;
    int stopping;
    unsigned long cut;
};

static void *APR_THREAD_FUNC watch(apr_thread_t *thread, void *data)
{
    bank_db_guard_t *g = data;
    int i;

    apr_thread_mutex_lock(g->lock);
    while (!g->stopping) {
        apr_time_t now = apr_time_now();
        for (i = 0; i < g->nslots; i++) {
            slot_t *s = &g->slots[i];
            if (s->fd >= 0 && !s->cut && now >= s->deadline) {
                shutdown(s->fd, SHUT_RDWR);
                s->cut = 1;
                g->cut++;
            }
        }
        apr_thread_cond_timedwait(g->wake, g->lock, g->tick);
    }
    apr_thread_mutex_unlock(g->lock);
    apr_thread_exit(thread, APR_SUCCESS);
    return NULL;
}

static apr_status_t stop(void *data)
{
    bank_db_guard_t *g = data;
    apr_status_t rv;

    apr_thread_mutex_lock(g->lock);
    g->stopping = 1;
    apr_thread_cond_signal(g->wake);
    apr_thread_mutex_unlock(g->lock);
    apr_thread_join(&rv, g->thread);
    return APR_SUCCESS;
}

bank_db_guard_t *bank_db_guard_start(apr_pool_t *p, int slots, apr_interval_time_t tick)
{
    bank_db_guard_t *g = apr_pcalloc(p, sizeof(*g));
    int i;

    g->nslots = slots > 0 ? slots : 1;
    g->tick = tick > 0 ? tick : apr_time_from_msec(100);
    g->slots = apr_palloc(p, sizeof(*g->slots) * (apr_size_t)g->nslots);
    for (i = 0; i < g->nslots; i++) {
        g->slots[i].fd = -1;
    }
    if (apr_thread_mutex_create(&g->lock, APR_THREAD_MUTEX_DEFAULT, p) != APR_SUCCESS ||
        apr_thread_cond_create(&g->wake, p) != APR_SUCCESS ||
        apr_thread_create(&g->thread, NULL, watch, g, p) != APR_SUCCESS) {
        return NULL;
    }
    /* A pre-cleanup: the thread is joined before the pool frees what it reads. */
    apr_pool_pre_cleanup_register(p, g, stop);
    return g;
}

int bank_db_guard_enter(bank_db_guard_t *g, int fd, apr_time_t deadline)
{
    int i, ticket = -1;

    if (!g || fd < 0) {
        return -1;
    }
    apr_thread_mutex_lock(g->lock);
    for (i = 0; i < g->nslots; i++) {
        if (g->slots[i].fd < 0) {
            g->slots[i].fd = fd;
            g->slots[i].cut = 0;
            g->slots[i].deadline = deadline;
            ticket = i;
            break;
        }
    }
    apr_thread_mutex_unlock(g->lock);
    return ticket;
}

int bank_db_guard_leave(bank_db_guard_t *g, int ticket)
{
    int cut;

    if (!g || ticket < 0 || ticket >= g->nslots) {
        return 0;
    }
    apr_thread_mutex_lock(g->lock);
    cut = g->slots[ticket].cut;
    g->slots[ticket].fd = -1;
    apr_thread_mutex_unlock(g->lock);
    return cut;
}

unsigned long bank_db_guard_cut(bank_db_guard_t *g)
{
    unsigned long cut;

    if (!g) {
        return 0;
    }
    apr_thread_mutex_lock(g->lock);
    cut = g->cut;
    apr_thread_mutex_unlock(g->lock);
    return cut;
}
