/* Password verifications bounded per process (docs/configuration.md,
 * BankPasswordVerifyConcurrency). One scrypt verification takes about 40 ms of one CPU and
 * 16 MiB, which OpenSSL allocates on every call. Run on the request's own thread, each of an
 * event MPM child's 25 threads ends up with that much in its own glibc arena, kept after the
 * flood (1.3 GiB measured after 20 s of 64 concurrent sign-ins). Here only `concurrency`
 * threads per process ever verify, so at most that many work areas exist per process, and
 * each is reused by the next verification without new page faults (a fixed
 * M_MMAP_THRESHOLD would map and fault in the 16 MiB on every call: 12% more CPU per
 * verification, measured with perf stat). When nothing runs or waits, malloc_trim returns
 * what glibc lets it (the main arena's top, free pages inside arenas); a work area freed
 * inside a thread arena below memory still in use stays mapped until it is reused (measured:
 * about 16 MiB per verification thread after a flood, docs/configuration.md). A request
 * beyond `waiting` queued is refused at once (503) instead of holding a thread to wait. */
#include <unistd.h>
#include <httpd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>
#include <apr_thread_cond.h>
#include "mod_bank.h"
#include "mod_bank_verify.h"

APLOG_USE_MODULE(bank);

typedef struct job_s {
    void (*fn)(void *arg);
    void *arg;
    int done;
    struct job_s *next;
} job_t;

struct bank_verifier_s {
    int concurrency, waiting;
    bank_verifier_t *next; /* every bound of the configuration, for child_init */
    /* In each child, from child_init on: */
    apr_thread_mutex_t *lock;
    apr_thread_cond_t *work; /* a job was queued, or stop */
    apr_thread_cond_t *done; /* a job finished */
    job_t *head, *tail;
    int admitted; /* running or queued */
    int running;
    int stop;
    int threads; /* started */
    apr_thread_t **thread;
};

static bank_verifier_t *all = NULL;
static bank_verifier_t *fallback = NULL;

static apr_status_t forget_all(void *unused)
{
    (void)unused;
    all = NULL;
    fallback = NULL;
    return APR_SUCCESS;
}

bank_verifier_t *bank_verifier_new(apr_pool_t *pconf, int concurrency, int waiting)
{
    bank_verifier_t *v = apr_pcalloc(pconf, sizeof(*v));

    v->concurrency = concurrency;
    v->waiting = waiting;
    v->next = all;
    if (!all) {
        /* the configuration is read twice at start and again on every restart */
        apr_pool_cleanup_register(pconf, NULL, forget_all, apr_pool_cleanup_null);
    }
    all = v;
    return v;
}

bank_verifier_t *bank_verifier_default(void)
{
    return fallback;
}

static void give_back_memory(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

static void *APR_THREAD_FUNC worker(apr_thread_t *t, void *data)
{
    bank_verifier_t *v = data;
    job_t *j;

    apr_thread_mutex_lock(v->lock);
    for (;;) {
        while (!v->head && !v->stop) {
            apr_thread_cond_wait(v->work, v->lock);
        }
        if (v->stop) {
            break;
        }
        j = v->head;
        v->head = j->next;
        if (!v->head) {
            v->tail = NULL;
        }
        v->running++;
        apr_thread_mutex_unlock(v->lock);
        j->fn(j->arg);
        apr_thread_mutex_lock(v->lock);
        v->running--;
        v->admitted--;
        j->done = 1;
        apr_thread_cond_broadcast(v->done);
        if (v->admitted == 0) {
            apr_thread_mutex_unlock(v->lock);
            give_back_memory();
            apr_thread_mutex_lock(v->lock);
        }
    }
    apr_thread_mutex_unlock(v->lock);
    apr_thread_exit(t, APR_SUCCESS);
    return NULL;
}

/* A pre-cleanup of pchild: the threads are joined before the pools they use go. */
static apr_status_t stop(void *data)
{
    bank_verifier_t *v = data;
    apr_status_t rv;
    int i;

    apr_thread_mutex_lock(v->lock);
    v->stop = 1;
    apr_thread_cond_broadcast(v->work);
    apr_thread_mutex_unlock(v->lock);
    for (i = 0; i < v->threads; i++) {
        apr_thread_join(&rv, v->thread[i]);
    }
    v->threads = 0;
    return APR_SUCCESS;
}

static void start(bank_verifier_t *v, apr_pool_t *pchild, server_rec *s)
{
    int i;

    if (apr_thread_mutex_create(&v->lock, APR_THREAD_MUTEX_DEFAULT, pchild) != APR_SUCCESS ||
        apr_thread_cond_create(&v->work, pchild) != APR_SUCCESS ||
        apr_thread_cond_create(&v->done, pchild) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     BANKLOGNO(1401) "password verification threads: no mutex; sign-in "
                                     "verifies on the request's thread, unbounded");
        v->lock = NULL;
        return;
    }
    v->thread = apr_pcalloc(pchild, sizeof(*v->thread) * (apr_size_t)v->concurrency);
    apr_pool_pre_cleanup_register(pchild, v, stop);
    for (i = 0; i < v->concurrency; i++) {
        if (apr_thread_create(&v->thread[i], NULL, worker, v, pchild) != APR_SUCCESS) {
            break;
        }
        v->threads++;
    }
    if (v->threads < v->concurrency) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(1402) "only %d of %d password verification threads started",
                     v->threads, v->concurrency);
    }
}

void bank_verify_child_init(apr_pool_t *pchild, server_rec *s)
{
    bank_verifier_t *v;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cpus > 0 && cpus < 1024 ? (int)cpus : 1;

    fallback = bank_verifier_new(pchild, n, n * BANK_VERIFY_WAIT_FACTOR);
    for (v = all; v; v = v->next) {
        start(v, pchild, s);
    }
}

int bank_verify_run(void *baton, void (*fn)(void *arg), void *arg)
{
    bank_verifier_t *v = baton;
    job_t j = {fn, arg, 0, NULL};

    if (!v || !v->lock || v->threads == 0) {
        fn(arg); /* no threads (logged at start): verify here rather than refuse every one */
        return 0;
    }
    apr_thread_mutex_lock(v->lock);
    if (v->admitted >= v->threads + v->waiting) {
        apr_thread_mutex_unlock(v->lock);
        return 1;
    }
    v->admitted++;
    if (v->tail) {
        v->tail->next = &j;
    } else {
        v->head = &j;
    }
    v->tail = &j;
    apr_thread_cond_signal(v->work);
    while (!j.done) {
        apr_thread_cond_wait(v->done, v->lock);
    }
    apr_thread_mutex_unlock(v->lock);
    return 0;
}
