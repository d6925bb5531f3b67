/* The push sender's rounds (bank_push_sender.h, docs/push.md). Each tick returns at once
 * unless the sender was woken (rows committed in this process) or BANK_PUSH_POLL has passed;
 * then it claims due rows under a lease, sends them at once (its FCM client), settles each
 * and goes on while rows are due. */
#include <string.h>
#include <apr_atomic.h>
#include <apr_file_io.h>
#include "bank_metrics.h"
#include "bank_push_sender.h"
#include "bank_rand.h"
#include "bank_store.h"
#include "bank_time.h"

/* How long one tick may go on sending before it gives the thread back to its host (which
 * checks, between ticks, whether the process is stopping). */
#define PUSH_TICK_BUDGET apr_time_from_sec(2)
/* How often a process that exits looks whether its sender's round has ended. */
#define PUSH_STOP_WAIT apr_time_from_msec(10)

struct bank_push_sender_s {
    bank_push_sender_host h;
    apr_pool_t *pool;           /* the thread's, from start to end */
    bank_push_client_t *client; /* in pool; NULL: none (the host sends, or libcurl failed) */
    apr_time_t next_poll, next_count, next_lean;
    /* A process that exits (a graceful restart, fewer idle processes, a stop) does not join
     * the sender's thread: httpd 2.4 ends the process while the thread may be in the middle
     * of a round, and a round's messages sent and not recorded go out again after the lease.
     * So a tick marks itself ticking and does nothing once stopping is set; the exiting
     * process sets stopping and waits for the round to end (bank_push_sender_stop; each of
     * its calls is bounded by BankPushTimeout). Exchanges are full barriers. */
    volatile apr_uint32_t woken, ticking, stopping;
    /* The last reading of the CPUs' ticks, and whether they had room since the one before. */
    struct {
        apr_uint64_t total, idle;
        apr_time_t at;
        int room;
    } cpu;
};

/* What one round works on, for its settling. */
typedef struct {
    bank_push_sender_t *s;
    apr_pool_t *p;
    const char *lease;
    const char *until; /* the lease's end: where the claim put the rows' next_at */
    const bank_push_msg_t *msgs;
    const bank_push_result_t *out;
    int n;
    /* What the transaction wrote for each message, reported once it commits (it may run
     * twice: bank_db_transaction). */
    struct settled {
        bank_metric_t outcome;
        int settled;
        const char *next;
    } * done;
} settle_batch;

static apr_time_t now_of(const bank_push_sender_t *s)
{
    return s->h.now ? s->h.now(s->h.baton) : apr_time_now();
}

/* Gives a connection of the host's back (bank_push_sender_host.connect). */
static void give_back(apr_pool_t **lease)
{
    if (*lease) {
        apr_pool_destroy(*lease);
        *lease = NULL;
    }
}

static void push_count(bank_metric_t c)
{
    bank_metrics_t *m = bank_metrics_shared();
    if (m) {
        bank_metrics_count(m, c);
    }
}

bank_push_sender_t *bank_push_sender_create(apr_pool_t *p, const bank_push_sender_host *h)
{
    bank_push_sender_t *s = apr_pcalloc(p, sizeof(*s));

    s->h = *h;
    return s;
}

/* The memory the processes share: "last empty" first, the breaker after it. */
typedef struct {
    volatile apr_uint32_t last_empty;
} shared_t;

apr_size_t bank_push_sender_shared_size(void)
{
    return sizeof(shared_t) + bank_idp_breaker_size();
}

void bank_push_sender_share(bank_push_sender_host *h, void *mem, apr_time_t now)
{
    shared_t *sh = mem;

    memset(sh, 0, sizeof(*sh));
    sh->last_empty = (apr_uint32_t)apr_time_sec(now);
    h->last_empty = &sh->last_empty;
    h->breaker = bank_idp_breaker_at((char *)mem + sizeof(shared_t));
}

int bank_push_sender_behind(const bank_push_sender_host *h, apr_time_t now)
{
    bank_metrics_t *m = bank_metrics_shared();
    apr_uint64_t backlog = m ? apr_atomic_read64(&m->push_backlog) : 0;
    apr_uint32_t empty = h->last_empty ? apr_atomic_read32(h->last_empty) : 0;

    return backlog > 0 && apr_time_sec(now) - (apr_int64_t)empty > BANK_PUSH_BACKLOG_AGE;
}

void bank_push_sender_wake(bank_push_sender_t *s)
{
    apr_atomic_set32(&s->woken, 1);
}

/* 1 once `at` has come, or if it lies more than period ahead: the clock was set back since
 * it was set, and the poll, the count, the lean round or the CPUs' reading due then would
 * otherwise wait for the clock to catch up (an hour for an hour's step). */
static int due(apr_time_t now, apr_time_t at, apr_interval_time_t period)
{
    return now >= at || at - now > period;
}

/* A lease: random, so that two senders never hold the same one. NULL: no randomness. */
static const char *new_lease(apr_pool_t *p)
{
    return bank_random_string(p, 24, "0123456789abcdef");
}

/* The lease's length: long enough for a round (the bearer's fetch and the calls, each within
 * BankPushTimeout) and the settling, short enough that a dead sender's rows go out soon. */
static apr_interval_time_t lease_length(const bank_push_sender_t *s)
{
    return apr_time_from_sec(2 * s->h.fcm.timeout + 5);
}

/* On SQLite (one writer for the file) the sender's writes take the notices' commit turn;
 * PostgreSQL writes rows apart: no turn. 1 if taken (give it back). */
static int write_turn(const bank_push_sender_t *s, bank_db_t *db)
{
    return !bank_db_is_pgsql(db) && s->h.turn_take && s->h.turn_take(s->h.baton);
}

static void give_turn(const bank_push_sender_t *s, int turn)
{
    if (turn) {
        s->h.turn_give(s->h.baton);
    }
}

/* Claims up to max due rows: their messages in *msgs, 0 when none. */
static int claim(bank_push_sender_t *s, apr_pool_t *p, const char *lease, const char *until,
                 apr_time_t now, int max, bank_push_msg_t **msgs)
{
    apr_pool_t *conn = NULL;
    bank_db_t *db = s->h.connect(s->h.baton, p, &conn);
    apr_array_header_t *rows = NULL;
    bank_db_rc rc;
    int turn;

    if (!db) {
        if (!s->h.ready || s->h.ready(s->h.baton)) {
            bank_log(s->h.where, BANK_LOG_MARK, BANK_LOG_ERR,
                     BANKLOGNO(1802) "push: no database connection (see mod_dbd's messages)");
        }
        give_back(&conn);
        return 0;
    }
    turn = write_turn(s, db);
    rc = bank_store_push_claim(db, lease, until, bank_time_iso(p, now), max, &rows);
    give_turn(s, turn);
    if (rc != BANK_DB_OK) {
        bank_log(s->h.where, BANK_LOG_MARK, BANK_LOG_ERR, BANKLOGNO(1803) "push: claiming rows: %s",
                 bank_db_error(db));
        push_count(BANK_M_DB_ERRORS);
        give_back(&conn);
        return 0;
    }
    *msgs = (bank_push_msg_t *)rows->elts;
    give_back(&conn);
    return rows->nelts;
}

/* The row's state after a call that did not send it, and when it is due again (retries). */
static bank_metric_t outcome_of(const settle_batch *b, const bank_push_msg_t *m,
                                const bank_push_result_t *r, apr_time_t now, const char **state,
                                const char **next)
{
    double rnd = 0;
    apr_uint32_t u = 0;

    *state = "failed";
    *next = bank_time_iso(b->p, now);
    if (r->verdict == BANK_PUSH_UNREGISTERED) {
        *state = "unregistered";
        return BANK_M_PUSH_UNREGISTERED;
    }
    if (r->verdict == BANK_PUSH_RETRY && m->attempts + 1 < b->s->h.attempts) {
        *state = "pending";
        if (bank_random_bytes((unsigned char *)&u, sizeof(u)) == 0) {
            rnd = (double)u / 4294967296.0;
        }
        *next =
            bank_time_iso(b->p, now + bank_push_backoff((int)m->attempts + 1, r->retry_after, rnd));
        return BANK_M_PUSH_RETRIED;
    }
    return BANK_M_PUSH_FAILED;
}

/* What becomes of one message after its call, in the outbox (b->done[i]: what to report). */
static bank_db_rc settle_one(bank_db_t *db, const settle_batch *b, int i)
{
    const bank_push_msg_t *m = &b->msgs[i];
    const bank_push_result_t *r = &b->out[i];
    apr_time_t now = now_of(b->s);
    const char *at = bank_time_iso(b->p, now), *state;
    struct settled *d = &b->done[i];

    d->settled = 1;
    d->next = NULL;
    if (r->verdict == BANK_PUSH_SENT) {
        d->outcome = BANK_M_PUSH_SENT;
        return BANK_DB_OK; /* settled with the round's others (settle_all) */
    }
    d->outcome = outcome_of(b, m, r, now, &state, &d->next);
    d->settled = 0;
    return bank_store_push_settle(db, m->id, b->lease, state, d->next,
                                  strcmp(state, "pending") ? at : NULL, r->why, &d->settled);
}

/* The metrics and log lines of the outcomes the transaction committed. */
static void report(const settle_batch *b)
{
    const struct settled *d;
    const bank_push_msg_t *m;
    const bank_push_result_t *r;
    int i;

    for (i = 0; i < b->n; i++) {
        d = &b->done[i], m = &b->msgs[i], r = &b->out[i];
        push_count(d->outcome);
        if (d->outcome == BANK_M_PUSH_SENT) {
            continue;
        }
        bank_log(b->s->h.where, BANK_LOG_MARK,
                 d->outcome == BANK_M_PUSH_FAILED ? BANK_LOG_WARNING : BANK_LOG_INFO,
                 BANKLOGNO(1804) "push message %" APR_INT64_T_FMT " (attempt %" APR_INT64_T_FMT
                                 "): %s; %s%s",
                 m->id, m->attempts + 1, r->why ? r->why : "failed",
                 d->outcome == BANK_M_PUSH_RETRIED        ? "tried again at "
                 : d->outcome == BANK_M_PUSH_UNREGISTERED ? "the device is removed"
                                                          : "given up (bankctl push retry)",
                 d->outcome == BANK_M_PUSH_RETRIED ? d->next : "");
        /* an unregistered row is settled by its device's removal already (drops_first) */
        if (!d->settled && d->outcome != BANK_M_PUSH_UNREGISTERED) {
            bank_log(b->s->h.where, BANK_LOG_MARK, BANK_LOG_WARNING,
                     BANKLOGNO(1805) "push message %" APR_INT64_T_FMT ": its lease ended "
                                     "before the outcome was written (BankPushTimeout too "
                                     "short for the database?); another sender may send it "
                                     "again",
                     m->id);
        }
    }
}

/* The devices FCM no longer knows, removed before any outbox row of the round is touched:
 * the removal's trigger (012_device_owner.sql) marks the device's unsent rows, this round's
 * among them, unregistered. A sign-in or sign-out removing a device takes the device's row
 * first and the outbox rows after, so the round takes its locks in the same order and the
 * two never wait for each other. */
static bank_db_rc drops_first(bank_db_t *db, const settle_batch *b)
{
    bank_db_rc rc = BANK_DB_OK;
    int i;

    for (i = 0; rc == BANK_DB_OK && i < b->n; i++) {
        if (b->out[i].verdict == BANK_PUSH_UNREGISTERED) {
            rc = bank_store_push_device_drop(db, b->msgs[i].device_token);
        }
    }
    return rc;
}

static bank_db_rc settle_all(bank_db_t *db, void *baton)
{
    settle_batch *b = baton;
    bank_db_rc rc = drops_first(db, b);
    int i, sent = 0, marked = 0;

    for (i = 0; rc == BANK_DB_OK && i < b->n; i++) {
        rc = settle_one(db, b, i);
        sent += b->out[i].verdict == BANK_PUSH_SENT;
    }
    if (rc == BANK_DB_OK && sent) {
        rc = bank_store_push_sent(db, b->lease, b->until, bank_time_iso(b->p, now_of(b->s)),
                                  &marked);
    }
    if (rc == BANK_DB_OK && marked < sent) {
        bank_log(b->s->h.where, BANK_LOG_MARK, BANK_LOG_WARNING,
                 BANKLOGNO(1815) "push: %d of %d message(s) sent after their lease ended "
                                 "(BankPushTimeout too short for the database?); another "
                                 "sender may send them again",
                 sent - marked, sent);
    }
    return rc;
}

/* The outcomes, in one transaction (one commit for the round). A failure leaves the rows
 * claimed: they go out again after the lease. */
static void settle(settle_batch *b)
{
    bank_push_sender_t *s = b->s;
    apr_pool_t *conn = NULL;
    bank_db_t *db = s->h.connect(s->h.baton, b->p, &conn);
    bank_db_rc rc;
    int turn, i;

    if (!db) {
        bank_log(s->h.where, BANK_LOG_MARK, BANK_LOG_ERR,
                 BANKLOGNO(1806) "push: no database connection to record %d outcome(s); "
                                 "sent again after the lease",
                 b->n);
        give_back(&conn);
        return;
    }
    for (i = 0; i < b->n; i++) { /* the calls' durations, whatever is written */
        if (b->out[i].status && bank_metrics_shared()) {
            bank_metrics_push_call(bank_metrics_shared(), b->out[i].took);
        }
    }
    b->done = apr_pcalloc(b->p, sizeof(*b->done) * (apr_size_t)b->n);
    turn = write_turn(s, db);
    rc = bank_db_transaction(db, settle_all, b);
    give_turn(s, turn);
    if (rc == BANK_DB_OK) {
        report(b);
    } else {
        bank_log(s->h.where, BANK_LOG_MARK, BANK_LOG_ERR,
                 BANKLOGNO(1807) "push: recording %d outcome(s): %s; sent again after the "
                                 "lease",
                 b->n, bank_db_error(db));
        push_count(BANK_M_DB_ERRORS);
    }
    give_back(&conn);
}

/* Sends the claimed messages and records with the breaker whether FCM answered. */
static void send_all(settle_batch *b)
{
    bank_push_sender_t *s = b->s;
    bank_push_result_t *out = apr_pcalloc(b->p, sizeof(*out) * (apr_size_t)b->n);
    const char *why = s->h.send ? s->h.send(s->h.baton, b->p, b->msgs, b->n, out)
                                : bank_push_send(s->client, b->p, b->msgs, b->n, out);
    int i, answered = 0;

    if (why) {
        bank_log(s->h.where, BANK_LOG_MARK, BANK_LOG_ERR,
                 BANKLOGNO(1808) "push: no bearer from the service account's token_uri: %s", why);
    }
    for (i = 0; i < b->n; i++) {
        answered += out[i].verdict != BANK_PUSH_RETRY || (out[i].status && out[i].status < 500);
    }
    /* A round where FCM answered nothing usable counts one failure towards opening it. */
    if (bank_idp_breaker_record(s->h.breaker, s->h.fcm.base_url, answered > 0 && !why, now_of(s))) {
        bank_log(s->h.where, BANK_LOG_MARK, BANK_LOG_ERR,
                 BANKLOGNO(1809) "push: FCM at %s failed %d rounds in a row: circuit breaker "
                                 "open, no calls for %d seconds",
                 s->h.fcm.base_url, BANK_IDP_BREAKER_FAILURES, BANK_IDP_BREAKER_OPEN);
    }
    b->out = out;
}

int bank_push_sender_round(bank_push_sender_t *s, apr_pool_t *p, int max)
{
    bank_push_msg_t *msgs = NULL;
    const char *lease = new_lease(p);
    apr_time_t now = now_of(s);
    settle_batch b;

    if (bank_idp_breaker_allow(s->h.breaker, s->h.fcm.base_url, now) > 0) {
        return 0; /* rows wait in the outbox; no thread waits on FCM */
    }
    memset(&b, 0, sizeof(b));
    b.s = s;
    b.p = p;
    b.lease = lease;
    b.until = bank_time_iso(p, now + lease_length(s));
    if (!lease || (b.n = claim(s, p, lease, b.until, now, max, &msgs)) == 0) {
        return 0;
    }
    b.msgs = msgs;
    send_all(&b);
    settle(&b);
    return b.n;
}

/* Whether the server's CPUs have room for a full round (BankPushSpareCPU): at least that
 * share of their time idle since the previous reading, taken at most every
 * BANK_PUSH_CPU_WINDOW. No reading (no /proc/stat) counts as room. The sender's calls cost
 * the machine little of its own CPU, but each is a request FCM's side answers and, on a busy
 * server, TLS and libcurl's work beside the webhook's: under a flood the webhook's answers
 * come first and the outbox waits, its rows kept. */
static int cpu_room(bank_push_sender_t *s, apr_pool_t *p)
{
    apr_time_t now = now_of(s);
    apr_file_t *f = NULL;
    char buf[512];
    apr_size_t len = sizeof(buf) - 1;
    apr_uint64_t total = 0, idle = 0;
    apr_status_t rv;

    if (s->cpu.at && !due(now, s->cpu.at + BANK_PUSH_CPU_WINDOW, BANK_PUSH_CPU_WINDOW)) {
        return s->cpu.room;
    }
    if (apr_file_open(&f, s->h.cpu_stat ? s->h.cpu_stat : "/proc/stat", APR_FOPEN_READ,
                      APR_FPROT_OS_DEFAULT, p) != APR_SUCCESS) {
        return 1;
    }
    rv = apr_file_read(f, buf, &len);
    apr_file_close(f);
    if (rv != APR_SUCCESS) {
        return 1;
    }
    buf[len] = '\0';
    if (!bank_push_cpu_ticks(buf, &total, &idle)) {
        return 1;
    }
    s->cpu.room =
        !s->cpu.at || bank_push_cpu_spare(s->cpu.total, s->cpu.idle, total, idle, s->h.spare_cpu);
    s->cpu.total = total;
    s->cpu.idle = idle;
    s->cpu.at = now;
    return s->cpu.room;
}

/* 1 while the webhook is busy (BANK_PUSH_BUSY_NOTICES notices or more waiting for their
 * commit across the server): a webhook flood on SQLite is held by its commits, not by the
 * CPUs, and the sender's work beside it slows each commit's turn. */
static int webhook_busy(void)
{
    bank_metrics_t *m = bank_metrics_shared();
    return m && apr_atomic_read64(&m->notices_committing) >= BANK_PUSH_BUSY_NOTICES;
}

/* The pending rows, for the gauge and /health. */
static void count_backlog(bank_push_sender_t *s, apr_pool_t *p)
{
    apr_pool_t *conn = NULL;
    bank_db_t *db = s->h.connect(s->h.baton, p, &conn);
    apr_int64_t n = 0;

    if (db && bank_store_push_backlog(db, &n) == BANK_DB_OK) {
        if (bank_metrics_shared()) {
            bank_metrics_push_backlog(bank_metrics_shared(), (apr_uint64_t)n);
        }
        if (n == 0 && s->h.last_empty) {
            apr_atomic_set32(s->h.last_empty, (apr_uint32_t)apr_time_sec(now_of(s)));
        }
    }
    give_back(&conn);
}

void bank_push_sender_start(bank_push_sender_t *s)
{
    /* a root pool of the thread's own, as long as the thread lives: its allocator, its
     * connections to FCM, the bearer (a host such as mod_watchdog clears its own pool after
     * each call) */
    apr_pool_create(&s->pool, NULL);
    cpu_room(s, s->pool); /* the first reading: the first round's has one to compare */
    if (!s->h.send && !(s->client = bank_push_client_create(s->pool, &s->h.fcm))) {
        bank_log(s->h.where, BANK_LOG_MARK, BANK_LOG_CRIT,
                 BANKLOGNO(1810) "push: libcurl could not make its handles: no push "
                                 "messages from this process");
    }
}

/* Round after round while there is room, looked at again before each: a flood that starts
 * meanwhile makes the next round a lean one, and the tick's last; lean rounds come
 * BANK_PUSH_LEAN_GAP apart (each one's claim and settling are commits beside the webhook's).
 * 1 if the rounds had room. */
static int rounds(bank_push_sender_t *s, apr_pool_t *p, apr_time_t start)
{
    int n = 0, room = 1, max = BANK_PUSH_BATCH;

    do {
        apr_pool_clear(p);
        room = !s->h.spare_cpu || (cpu_room(s, p) && !webhook_busy());
        max = room ? BANK_PUSH_BATCH : BANK_PUSH_BATCH_LEAN;
        if (!room && !due(now_of(s), s->next_lean, BANK_PUSH_LEAN_GAP)) {
            n = max; /* not yet: the next tick looks again */
            break;
        }
        n = bank_push_sender_round(s, p, max);
        if (!room && n > 0) {
            push_count(BANK_M_PUSH_LEAN);
            s->next_lean = now_of(s) + BANK_PUSH_LEAN_GAP;
        }
    } while (room && n == max && now_of(s) - start < PUSH_TICK_BUDGET &&
             !apr_atomic_read32(&s->stopping));
    if (n == max) {
        bank_push_sender_wake(s); /* more is due: the next tick goes on */
    }
    apr_pool_clear(p);
    return room;
}

void bank_push_sender_tick(bank_push_sender_t *s)
{
    apr_time_t start = now_of(s);
    apr_pool_t *p;
    int room;

    apr_atomic_xchg32(&s->ticking, 1);
    if (apr_atomic_read32(&s->stopping) || (!s->h.send && !s->client) ||
        (!apr_atomic_xchg32(&s->woken, 0) && !due(start, s->next_poll, BANK_PUSH_POLL))) {
        apr_atomic_xchg32(&s->ticking, 0);
        return;
    }
    s->next_poll = start + BANK_PUSH_POLL;
    apr_pool_create(&p, s->pool);
    room = rounds(s, p, start);
    if (due(now_of(s), s->next_count, BANK_PUSH_COUNT_BUSY)) {
        /* a statement that reads every pending row: once a second is enough, and while
         * the webhook is flooded (its backlog growing fast) every BANK_PUSH_COUNT_BUSY */
        s->next_count = now_of(s) + (room ? BANK_PUSH_POLL : BANK_PUSH_COUNT_BUSY);
        count_backlog(s, p);
    }
    apr_pool_destroy(p);
    apr_atomic_xchg32(&s->ticking, 0);
}

void bank_push_sender_stop(bank_push_sender_t *s)
{
    /* a wait in real time, whatever the host's clock says */
    apr_time_t until = apr_time_now() + lease_length(s);

    apr_atomic_xchg32(&s->stopping, 1);
    while (apr_atomic_read32(&s->ticking) && apr_time_now() < until) {
        apr_sleep(PUSH_STOP_WAIT);
    }
}

void bank_push_sender_end(bank_push_sender_t *s)
{
    bank_push_sender_stop(s);
    if (s->pool) {
        apr_pool_destroy(s->pool);
        s->pool = NULL;
        s->client = NULL;
    }
}
