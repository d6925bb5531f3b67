/* Password verifications bounded per process and per server (docs/configuration.md,
 * BankPasswordVerifyConcurrency, BankPasswordVerifyServerConcurrency). One scrypt verification
 * holds one CPU for far longer than any other request's work, and a 16 MiB work area
 * (mod_bank/bank_scrypt.c; 32 MiB for two together): the process keeps one such area, wiped, for
 * each of its verification threads (at most the server's slots), from one verification to the next,
 * and unmaps them once none computed for KEEP_IDLE, so nothing of it stays after a flood. argon2
 * (AdonisJS's default: a 64 MiB work area) computes all its lanes on the calling thread with its
 * work area mapped for the call (bank_password.c): whatever the algorithm, one verification uses
 * one CPU and is counted as one below, per process and per server.
 *  - Two at once: a thread that holds a slot (below) for a scrypt verification takes the first
 *    queued one of the same cost with it when that one would wait otherwise (no slot or no
 *    thread free for it), and computes both together (bank_scrypt_two): more per second on the
 *    same CPUs (docs/benchmarks.md). Neither waits for the other to come: one that finds no
 *    partner is computed alone.
 *  - Per process: only `concurrency` threads of each process verify, in order, with at most
 *    `waiting` sign-ins queued; a sign-in beyond that is refused at once (503) instead of
 *    holding an httpd thread to wait. The defaults leave half of the process's threads
 *    (ThreadsPerChild) out of this, free to refuse at once whatever comes next.
 *  - In time: a sign-in that has not started computing BankPasswordVerifyMaxWait after it was
 *    queued (a turn in the queue, then a slot of the semaphore below) is refused then (503),
 *    so no sign-in waits long, whatever the settings.
 *  - Per server: those threads, in every process, compute only while they hold a slot of one
 *    System V semaphore (default: as many slots as CPUs). A server runs several processes (2
 *    to 4 in the shipped worker MPM configurations, more under the event MPM in a sign-in
 *    flood); without it their verification threads together oversubscribe
 *    the CPUs and every verification runs slower (docs/benchmarks.md). SEM_UNDO gives back the
 * slots of a process that dies holding them. A graceful restart removes the old semaphore: the old
 *    generation's last verifications then run without it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* semtimedop */
#endif
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <httpd.h>
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>
#include <apr_thread_cond.h>
#include <http_config.h>
#include <unixd.h>
#include <ap_mpm.h>
#include "mod_bank.h"
#include "mod_bank_verify.h"
#include "bank_metrics.h"
#include "bank_scrypt.h"
#include "bank_sign_in.h"

APLOG_USE_MODULE(bank);

typedef struct job_s {
    const bank_sign_in_job_t *job;
    apr_time_t deadline; /* not computing by then: refused */
    int done;
    int refused;
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
    int admitted; /* computing or queued */
    int busy;     /* threads computing (one job, or a pair) */
    int stop;
    int threads; /* started */
    apr_thread_t **thread;
};

static bank_verifier_t *all = NULL;
/* BankPasswordVerifyServerConcurrency: -1 not set (the CPU count), 0 off. */
static int server_slots = -1;
union bank_semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
};
/* The server's semaphore (post_config), inherited by the children; -1: none. */
static int gate_id = -1;
static pid_t gate_owner;
static int gate_slots;
static server_rec *gate_server;
static int gate_lost; /* in this process: the semaphore went away (logged once) */
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

static int cpu_count(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 && cpus < 1024 ? (int)cpus : 1;
}

/* The request threads of one process (ThreadsPerChild; 1 for prefork). */
static int thread_count(void)
{
    int threads = 0;
    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS || threads < 1) {
        threads = 1;
    }
    return threads;
}

/* BankPasswordVerifyMaxWait in ms: -1 not set (the default). */
static int max_wait_ms = -1;

static apr_status_t unset_server_slots(void *unused)
{
    (void)unused;
    server_slots = -1;
    return APR_SUCCESS;
}

static apr_status_t unset_max_wait(void *unused)
{
    (void)unused;
    max_wait_ms = -1;
    return APR_SUCCESS;
}

void bank_verify_set_max_wait(apr_pool_t *pconf, int ms)
{
    max_wait_ms = ms;
    apr_pool_cleanup_register(pconf, NULL, unset_max_wait, apr_pool_cleanup_null);
}

apr_interval_time_t bank_verify_max_wait(void)
{
    return apr_time_from_msec(max_wait_ms < 0 ? BANK_VERIFY_MAX_WAIT_DEFAULT : max_wait_ms);
}

void bank_verify_set_server_slots(apr_pool_t *pconf, int slots)
{
    server_slots = slots;
    /* the configuration is read again on every restart, and may no longer set it */
    apr_pool_cleanup_register(pconf, NULL, unset_server_slots, apr_pool_cleanup_null);
}

/* Only the parent that made it removes it: a child never runs this (pconf outlives it). */
static apr_status_t remove_gate(void *unused)
{
    (void)unused;
    if (gate_id >= 0 && getpid() == gate_owner) {
        semctl(gate_id, 0, IPC_RMID);
    }
    gate_id = -1;
    return APR_SUCCESS;
}

void bank_verify_post_config(apr_pool_t *pconf, server_rec *s)
{
    int slots = server_slots < 0 ? cpu_count() : server_slots, ok;
    struct semid_ds ds;
    union bank_semun arg; /* semctl(2): the caller declares it */

    gate_id = -1;
    gate_slots = slots;
    gate_server = s;
    if (slots == 0) {
        return;
    }
    arg.val = slots;
    gate_id = semget(IPC_PRIVATE, 1, IPC_CREAT | IPC_EXCL | 0600);
    ok = gate_id >= 0 && semctl(gate_id, 0, SETVAL, arg) == 0;
    if (ok && geteuid() == 0) {
        /* the children, which take and give back slots, run as User */
        arg.buf = &ds;
        ok = semctl(gate_id, 0, IPC_STAT, arg) == 0;
        ds.sem_perm.uid = ap_unixd_config.user_id;
        ds.sem_perm.gid = ap_unixd_config.group_id;
        ok = ok && semctl(gate_id, 0, IPC_SET, arg) == 0;
    }
    if (!ok) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, errno, s,
                     BANKLOGNO(1403) "no semaphore for BankPasswordVerifyServerConcurrency: "
                                     "password verifications bounded per process only");
        if (gate_id >= 0) {
            semctl(gate_id, 0, IPC_RMID);
        }
        gate_id = -1;
        return;
    }
    gate_owner = getpid();
    apr_pool_cleanup_register(pconf, NULL, remove_gate, apr_pool_cleanup_null);
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s,
                 BANKLOGNO(1405) "BankPasswordVerifyServerConcurrency: %d slots, semaphore id %d",
                 slots, gate_id);
}

/* Takes (-1) or gives back (1) one slot of the server's semaphore, a take waiting until
 * deadline at most; 0 when done, 1 when the deadline passed first, -1 when it is gone. */
static int gate(int op, apr_time_t deadline)
{
    struct sembuf b;
    struct timespec ts;
    apr_interval_time_t left;

    b.sem_num = 0;
    b.sem_op = (short)op;
    b.sem_flg = SEM_UNDO;
    for (;;) {
        left = deadline - apr_time_now();
        left = left > 0 ? left : 0;
        ts.tv_sec = (time_t)apr_time_sec(left);
        ts.tv_nsec = (long)apr_time_usec(left) * 1000L;
        if ((op < 0 ? semtimedop(gate_id, &b, 1, &ts) : semop(gate_id, &b, 1)) == 0) {
            return 0;
        }
        if (errno == EAGAIN) {
            return 1;
        }
        if (errno != EINTR) {
            /* removed (a graceful restart made a new one, ipcrm, systemd's RemoveIPC) or no
             * longer ours: verify without it from now on in this process, and say so once */
            if (!gate_lost) {
                gate_lost = 1;
                ap_log_error(APLOG_MARK, APLOG_WARNING, errno, gate_server,
                             BANKLOGNO(1404) "the semaphore of "
                                             "BankPasswordVerifyServerConcurrency is gone: "
                                             "this process verifies bounded per process only");
            }
            return -1;
        }
    }
}

/* In this process, whatever the bound: the verifications computing now, and when the last
 * one ended (the kept work areas go once none has for KEEP_IDLE). */
static int computing;
static apr_time_t last_end;

static int unqueue(bank_verifier_t *v, job_t *j);

/* Takes out of v's queue the first job j can be computed with (v->lock held): of j's kind,
 * and still within its deadline. NULL if none waits. */
static job_t *partner(bank_verifier_t *v, const job_t *j)
{
    apr_time_t now = apr_time_now();
    job_t *k;

    for (k = v->head; k; k = k->next) {
        if (k->job->kind && k->job->two == j->job->two && now < k->deadline &&
            strcmp(k->job->kind, j->job->kind) == 0) {
            unqueue(v, k);
            return k;
        }
    }
    return NULL;
}

/* Runs the job once it holds a slot of the server's semaphore (if there is one); refused
 * when none came before its deadline. With the slot held, a job of its kind that waits in v's
 * queue (v NULL: none) is computed with it, on the same slot: the partner returned, NULL if
 * none. */
static job_t *compute(bank_verifier_t *v, job_t *j)
{
    bank_metrics_t *m = bank_metrics_shared();
    int got = gate_id >= 0 && !gate_lost ? gate(-1, j->deadline) : -1, held = got == 0, free_slots;
    job_t *k = NULL;

    if (got == 1) {
        j->refused = 1;
        return NULL;
    }
    /* how many compute now, as the semaphore counts them (exact whatever became of processes
     * that held slots: the kernel gave theirs back) */
    free_slots = held ? semctl(gate_id, 0, GETVAL) : -1;
    if (m && free_slots >= 0 && free_slots < gate_slots) {
        bank_metrics_running(m, (apr_uint64_t)(gate_slots - free_slots));
    }
    /* a partner only if it would wait otherwise: every slot of the server's bound is taken, or
     * every thread of v is (a free slot and a free thread compute it at once, on another CPU) */
    if (v && j->job->kind && j->job->two) {
        apr_thread_mutex_lock(v->lock);
        if (free_slots == 0 || v->busy >= v->threads) {
            k = partner(v, j);
        }
        apr_thread_mutex_unlock(v->lock);
    }
    __atomic_add_fetch(&computing, 1, __ATOMIC_ACQ_REL);
    if (k) {
        if (m) {
            bank_metrics_count(m, BANK_M_PASSWORD_PAIRS);
        }
        j->job->two(j->job->arg, k->job->arg);
    } else {
        j->job->one(j->job->arg);
    }
    __atomic_store_n(&last_end, apr_time_now(), __ATOMIC_RELEASE);
    __atomic_sub_fetch(&computing, 1, __ATOMIC_ACQ_REL);
    if (held) {
        gate(1, 0);
    }
    return k;
}

/* The process keeps scrypt work areas from one verification to the next while sign-ins come
 * (bank_scrypt_keep, child_init); once no verification of the process computed for this
 * long, a verification thread that had none to do unmaps the spare ones. */
#define KEEP_IDLE apr_time_from_sec(2)

static void *APR_THREAD_FUNC worker(apr_thread_t *t, void *data)
{
    bank_verifier_t *v = data;
    job_t *j, *k;
    apr_interval_time_t idle;
    int worked = 0;

    apr_thread_mutex_lock(v->lock);
    for (;;) {
        while (!v->head && !v->stop) {
            if (!worked) {
                apr_thread_cond_wait(v->work, v->lock);
                continue;
            }
            idle = apr_time_now() - __atomic_load_n(&last_end, __ATOMIC_ACQUIRE);
            if (!__atomic_load_n(&computing, __ATOMIC_ACQUIRE) && idle >= KEEP_IDLE) {
                worked = 0;
                apr_thread_mutex_unlock(v->lock);
                bank_scrypt_drop_spares();
                apr_thread_mutex_lock(v->lock);
                continue;
            }
            apr_thread_cond_timedwait(v->work, v->lock,
                                      idle >= 0 && idle < KEEP_IDLE ? KEEP_IDLE - idle : KEEP_IDLE);
        }
        if (v->stop) {
            break;
        }
        worked = 1;
        j = v->head;
        v->head = j->next;
        if (!v->head) {
            v->tail = NULL;
        }
        v->busy++;
        apr_thread_mutex_unlock(v->lock);
        k = compute(v, j);
        apr_thread_mutex_lock(v->lock);
        v->busy--;
        v->admitted -= k ? 2 : 1;
        j->done = 1;
        if (k) {
            k->done = 1;
        }
        apr_thread_cond_broadcast(v->done);
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
    int threads = thread_count(), n = bank_sign_in_default_concurrency(cpu_count(), threads),
        threads_all = 0;

    fallback = bank_verifier_new(pchild, n, bank_sign_in_default_waiting(n, threads));
    for (v = all; v; v = v->next) {
        if (v->waiting < 0) {
            v->waiting = bank_sign_in_default_waiting(v->concurrency, threads);
        }
        start(v, pchild, s);
        threads_all += v->threads;
    }
    /* one work area for each thread that can compute at once in this process (a pair shares
     * one): its verification threads, at most the server's slots */
    bank_scrypt_keep(gate_id >= 0 && gate_slots < threads_all ? gate_slots : threads_all);
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s,
                 BANKLOGNO(1602) "password verifications of this process by default: %d at "
                                 "once, %d waiting at most %d ms (ThreadsPerChild %d)",
                 fallback->concurrency, fallback->waiting,
                 (int)apr_time_as_msec(bank_verify_max_wait()), threads);
}

/* Takes j out of v's queue if it is still there (v->lock held); 1 if it was. */
static int unqueue(bank_verifier_t *v, job_t *j)
{
    job_t **at = &v->head, *prev = NULL;

    while (*at && *at != j) {
        prev = *at;
        at = &(*at)->next;
    }
    if (!*at) {
        return 0;
    }
    *at = j->next;
    if (v->tail == j) {
        v->tail = prev;
    }
    return 1;
}

int bank_verify_has_room(void *baton)
{
    bank_verifier_t *v = baton;
    int room;

    if (!v || !v->lock || v->threads == 0) {
        return 1;
    }
    apr_thread_mutex_lock(v->lock);
    room = v->admitted < v->threads + v->waiting;
    apr_thread_mutex_unlock(v->lock);
    return room;
}

int bank_verify_run(void *baton, const bank_sign_in_job_t *job)
{
    bank_verifier_t *v = baton;
    job_t j = {job, apr_time_now() + bank_verify_max_wait(), 0, 0, NULL};
    apr_interval_time_t left;

    if (!v || !v->lock || v->threads == 0) {
        compute(NULL, &j); /* no threads (logged at start): verify here, not refuse every one */
        return j.refused;
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
        left = j.deadline - apr_time_now();
        if (left <= 0 && unqueue(v, &j)) {
            /* no turn in time: give up the place; nothing was verified */
            v->admitted--;
            apr_thread_mutex_unlock(v->lock);
            return 1;
        }
        if (left > 0) {
            apr_thread_cond_timedwait(v->done, v->lock, left);
        } else {
            /* a thread took it: it computes now, or gives up waiting for a slot at the
             * deadline (compute) */
            apr_thread_cond_wait(v->done, v->lock);
        }
    }
    apr_thread_mutex_unlock(v->lock);
    return j.refused;
}
