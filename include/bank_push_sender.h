/* The push sender's rounds (docs/push.md): claim due outbox rows under a lease, send them at
 * once, settle each outcome (sent, retried with backoff, given up, the device unregistered),
 * round after round while rows are due and the server has room. No httpd dependency; the host
 * (mod_bank_push.c's watchdog thread, the C tests) supplies the settings, the connections,
 * the write turn across processes and the log's place (bank_push_sender_host), and calls
 * bank_push_sender_tick from its thread; the tests a fake sending and clock too.
 *
 * A database connection is held only to claim and to settle, never while sending. Many
 * senders on one database claim apart (bank_store_push_claim); a sender cut off mid-round
 * leaves its rows to the next claim after the lease (at least once). A failed claim or
 * settling leaves nothing half done: the settling is one transaction, and rows not settled
 * stay claimed until their lease ends. */
#ifndef BANK_PUSH_SENDER_H
#define BANK_PUSH_SENDER_H

#include <apr_pools.h>
#include <apr_time.h>
#include "bank_db.h"
#include "bank_idp.h"
#include "bank_log.h"
#include "bank_push.h"

/* How often a sender looks for due rows without being woken: retries coming due, rows of
 * other processes or servers whose lease ended. */
#define BANK_PUSH_POLL apr_time_from_sec(1)
/* Payment notices waiting for their commit at once, server-wide, from which the webhook is
 * busy: a flood's connections all wait there; at a steady 1,000 a second a few at most. */
#define BANK_PUSH_BUSY_NOTICES 8
/* Lean rounds (BANK_PUSH_BATCH_LEAN messages) come at most this often. */
#define BANK_PUSH_LEAN_GAP apr_time_from_msec(500)
/* How often the pending rows are counted while rounds are lean. */
#define BANK_PUSH_COUNT_BUSY apr_time_from_sec(10)
/* How long the CPUs are watched for BankPushSpareCPU before the sender looks again. */
#define BANK_PUSH_CPU_WINDOW apr_time_from_msec(500)

/* Rows pending longer than this (seconds) with some always pending: the sender is behind. */
#define BANK_PUSH_BACKLOG_AGE 60

/* What the sender needs from its host: settings, and callbacks with the host's baton. */
typedef struct {
    /* FCM's project, base URL (the circuit breaker's key too), BankPushTimeout (seconds per
     * call; the lease is 2 * timeout + 5 s) and the service account */
    bank_push_conf_t fcm;
    int attempts;                /* BankPushAttempts: calls a message gets before it is given up */
    int spare_cpu;               /* BankPushSpareCPU, percent idle for full rounds (0: always) */
    bank_idp_breaker_t *breaker; /* shared by the server's processes; NULL: none */
    /* shared too: when a count last found no pending row (seconds; NULL: not kept) */
    volatile apr_uint32_t *last_empty;
    const char *cpu_stat; /* the CPUs' ticks; NULL: /proc/stat */
    bank_log_where where; /* where the sender's messages go (bank_log.h) */
    void *baton;
    /* A connection for a claim, a settling or a count, lent until the sender destroys
     * *lease (a pool of parent's, or NULL); NULL if none could be had (the host logged why,
     * or none is expected yet). */
    bank_db_t *(*connect)(void *baton, apr_pool_t *parent, apr_pool_t **lease);
    /* 1 once connections are expected (NULL: always): until then none is no error. */
    int (*ready)(void *baton);
    /* SQLite's write turn across the processes (taken for the claim and the settling; never
     * on PostgreSQL): 1 if taken, then given back at once after the write. NULL: none. */
    int (*turn_take)(void *baton);
    void (*turn_give)(void *baton);
    /* Sends msgs[0..n) at once, out[i] msgs[i]'s outcome, as bank_push_send does: NULL, or
     * why no message could go (every out[i] RETRY). NULL: bank_push_send through the
     * sender's own client (bank_push_sender_start makes it from fcm). */
    const char *(*send)(void *baton, apr_pool_t *p, const bank_push_msg_t *msgs, int n,
                        bank_push_result_t *out);
    /* The clock (NULL: apr_time_now). */
    apr_time_t (*now)(void *baton);
} bank_push_sender_host;

typedef struct bank_push_sender_s bank_push_sender_t;

/* What the server's processes share, in memory the host makes before it forks: the circuit
 * breaker and when a count last found no pending row. */
apr_size_t bank_push_sender_shared_size(void);
/* Lays out mem (bank_push_sender_shared_size bytes) and points h->breaker and h->last_empty
 * there; rows pending from now count from now. */
void bank_push_sender_share(bank_push_sender_host *h, void *mem, apr_time_t now);
/* 1 if rows are pending (the backlog last counted, bank_metrics.h) and the outbox was last
 * seen empty more than BANK_PUSH_BACKLOG_AGE seconds before now: the sender is behind, or FCM
 * unreachable (GET /health). */
int bank_push_sender_behind(const bank_push_sender_host *h, apr_time_t now);

/* A sender in p (its state per process: made before httpd forks, each process has its own). */
bank_push_sender_t *bank_push_sender_create(apr_pool_t *p, const bank_push_sender_host *h);
/* In the sender's thread, before its first tick: its own root pool, its FCM client (unless
 * the host sends) and the first reading of the CPUs. Without a client no tick sends. */
void bank_push_sender_start(bank_push_sender_t *s);
/* One tick: nothing unless woken or BANK_PUSH_POLL has passed; then rounds while rows are due
 * and there is room (or a lean one under a flood), for up to two seconds, and the backlog
 * counted when due. */
void bank_push_sender_tick(bank_push_sender_t *s);
/* One round of at most max messages: claim, send, settle. The rows claimed (0: none was due,
 * the breaker is open, or the claim failed). p is cleared by the caller. */
int bank_push_sender_round(bank_push_sender_t *s, apr_pool_t *p, int max);
/* Rows were committed for sending in this process: the next tick looks at once. */
void bank_push_sender_wake(bank_push_sender_t *s);
/* The process exits: no round starts from now on; returns once the one under way has ended
 * (or after a lease's length: its rows are another sender's then). Any thread. */
void bank_push_sender_stop(bank_push_sender_t *s);
/* The thread ends: stops (bank_push_sender_stop), then the client and the pool go. */
void bank_push_sender_end(bank_push_sender_t *s);

#endif
