/* Push notifications, httpd side (docs/push.md): the server-wide BankPush* settings, and the
 * sender. The sender is a callback of a mod_watchdog instance of its own in every child
 * process, as mod_md and mod_proxy_hcheck run their background work: httpd starts and stops
 * the thread with the process. Each tick (AP_WD_TM_SLICE) it returns at once unless the
 * webhook committed outbox rows in this process (bank_push_wake) or PUSH_POLL has passed;
 * then it claims due rows under a lease, sends them to FCM at once (one libcurl multi
 * handle), settles each and goes on while rows are due. A database connection is held only
 * to claim and to settle, never during a call to FCM. Many processes and servers on one
 * database claim apart (bank_store_push_claim); a process that dies mid-send leaves its rows
 * to the next claim after the lease (at least once). */
#include <httpd.h>
#include <http_config.h>

#include <string.h>
#include <apr_atomic.h>
#include <apr_shm.h>
#include <apr_strings.h>
#include <apr_optional.h>
#include <http_log.h>
#include <mod_watchdog.h>
#include "mod_bank.h"
#include "mod_bank_push.h"
#include "mod_bank_db.h"
#include "bank_metrics.h"
#include "bank_idp.h"
#include "bank_push.h"
#include "bank_rand.h"
#include "bank_store.h"
#include "bank_time.h"

APLOG_USE_MODULE(bank);

#define PUSH_WATCHDOG "bank-push"
/* How often a sender looks for due rows without being woken: retries coming due, rows of
 * other processes or servers whose lease ended. */
#define PUSH_POLL apr_time_from_sec(1)
/* How long one tick may go on sending before it gives the thread back to mod_watchdog (which
 * checks, between ticks, whether the process is stopping). */
#define PUSH_TICK_BUDGET apr_time_from_sec(2)
/* Rows pending longer than this with some always pending: /health says "backlog". */
#define PUSH_BACKLOG_AGE 60
/* How long the sender waits for the write turn on SQLite before it writes without it. */
#define PUSH_TURN_WAIT apr_time_from_sec(1)
/* Payment notices waiting for their commit at once, server-wide, from which the webhook is
 * busy: a flood's connections all wait there; at a steady 1,000 a second a few at most. */
#define PUSH_BUSY_NOTICES 8
/* Lean rounds (BANK_PUSH_BATCH_LEAN messages) come at most this often. */
#define PUSH_LEAN_GAP apr_time_from_msec(500)
/* How often the pending rows are counted while rounds are lean. */
#define PUSH_COUNT_BUSY apr_time_from_sec(10)
/* How long the CPUs are watched for BankPushSpareCPU before the sender looks again. */
#define PUSH_CPU_WINDOW apr_time_from_msec(500)
/* How often a process that exits looks whether its sender's round has ended. */
#define PUSH_STOP_WAIT apr_time_from_msec(10)

static struct {
    int on;
    const char *project;
    const char *base_url;
    const char *credentials; /* the file, for the start-up line */
    bank_push_account_t account;
    int have_account;
    int attempts;
    int timeout;
    int spare_cpu; /* percent; 0: always the full batch */
} conf;

/* Shared by the processes (made before the fork): the breaker, and when a sender last
 * counted no pending row (seconds). */
typedef struct {
    volatile apr_uint32_t last_empty;
} push_shared_t;
static push_shared_t *shared = NULL;
static bank_idp_breaker_t *breaker = NULL;

/* This process's sender. */
static volatile apr_uint32_t woken = 0;
static apr_time_t next_poll = 0;
static apr_time_t next_count = 0;
static apr_time_t next_lean = 0;
static bank_push_client_t *client = NULL;
static apr_pool_t *sender_pool = NULL;
/* A process that exits (a graceful restart, fewer idle processes, a stop) does not join
 * mod_watchdog's thread: httpd 2.4 ends the process while the thread may be in the middle of
 * a round, and a round's messages sent and not recorded go out again after the lease. So a
 * tick marks itself ticking and does nothing once stopping is set; the child pool's first
 * cleanup sets stopping and waits for the round to end (each of its calls is bounded by
 * BankPushTimeout). Exchanges are full barriers. */
static volatile apr_uint32_t ticking = 0, stopping = 0;
/* The last reading of the CPUs' ticks, and whether they had room since the one before. */
static struct {
    apr_uint64_t total, idle;
    apr_time_t at;
    int room;
} cpu;

void bank_push_pre_config(void)
{
    memset(&conf, 0, sizeof(conf));
    conf.attempts = BANK_PUSH_ATTEMPTS_DEFAULT;
    conf.timeout = BANK_PUSH_TIMEOUT_DEFAULT;
    conf.spare_cpu = BANK_PUSH_SPARE_CPU_DEFAULT;
}

const char *bank_push_set_fcm(cmd_parms *cmd, const char *kind, const char *project,
                              const char *url)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY), *why;

    if (err) {
        return err;
    }
    if (strcasecmp(kind, "fcm") != 0) {
        return apr_psprintf(cmd->pool, "%s: expected fcm, got '%s'", cmd->cmd->name, kind);
    }
    /* Firebase project ids: 6 to 30 lower-case letters, digits and hyphens. */
    if (strlen(project) < 1 || strlen(project) > 64 ||
        strspn(project, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(project)) {
        return apr_psprintf(cmd->pool,
                            "%s: the project id holds lower-case letters, digits and hyphens "
                            "only (1 to 64), got '%s'",
                            cmd->cmd->name, project);
    }
    conf.base_url = BANK_PUSH_BASE_DEFAULT;
    if (url && (why = bank_push_url_check(cmd->pool, url, &conf.base_url)) != NULL) {
        return apr_psprintf(cmd->pool, "%s: %s, got '%s'", cmd->cmd->name, why, url);
    }
    conf.on = 1;
    conf.project = apr_pstrdup(cmd->pool, project);
    return NULL;
}

/* Read now, as the user httpd starts as; the key is never repeated in a message. */
const char *bank_push_set_credentials(cmd_parms *cmd, const char *path)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY), *full, *why;

    if (err) {
        return err;
    }
    full = ap_server_root_relative(cmd->pool, path);
    if (!full || (why = bank_push_account_file(cmd->pool, full, &conf.account)) != NULL) {
        return apr_psprintf(cmd->pool, "%s: the file %s: %s", cmd->cmd->name, path,
                            full ? why : "bad path");
    }
    conf.credentials = full;
    conf.have_account = 1;
    return NULL;
}

void bank_push_set_attempts(int n)
{
    conf.attempts = n;
}

void bank_push_set_timeout(int seconds)
{
    conf.timeout = seconds;
}

void bank_push_set_spare_cpu(int percent)
{
    conf.spare_cpu = percent;
}

int bank_push_check_config(apr_pool_t *pconf, server_rec *s)
{
    (void)pconf;
    if (conf.on && !conf.have_account) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, s,
                     BANKLOGNO(1801) "BankPush fcm %s needs BankPushCredentials (the Google "
                                     "service account's key file)",
                     conf.project);
        return !OK;
    }
    return OK;
}

void bank_push_wake(void)
{
    apr_atomic_set32(&woken, 1);
}

const char *bank_push_status(void)
{
    apr_uint64_t backlog;
    apr_uint32_t empty;

    if (!conf.on) {
        return "none";
    }
    backlog = bank_metrics_shared() ? apr_atomic_read64(&bank_metrics_shared()->push_backlog) : 0;
    empty = shared ? apr_atomic_read32(&shared->last_empty) : 0;
    return backlog > 0 && apr_time_sec(apr_time_now()) - (apr_int64_t)empty > PUSH_BACKLOG_AGE
               ? "backlog"
               : "ok";
}

/* ---- the sender ---- */

static void push_count(bank_metric_t c)
{
    bank_metrics_t *m = bank_metrics_shared();
    if (m) {
        bank_metrics_count(m, c);
    }
}

/* A lease: random, so that two senders never hold the same one. NULL: no randomness. */
static const char *new_lease(apr_pool_t *p)
{
    return bank_random_string(p, 24, "0123456789abcdef");
}

/* The lease's length: long enough for a round (the bearer's fetch and the calls, each within
 * BankPushTimeout) and the settling, short enough that a dead sender's rows go out soon. */
static apr_interval_time_t lease_length(void)
{
    return apr_time_from_sec(2 * conf.timeout + 5);
}

/* On SQLite (one writer for the file) the sender's writes take the notices' commit turn
 * (bank_db_turn_take); PostgreSQL writes rows apart: no turn. 1 if taken (give it back). */
static int write_turn(server_rec *s, bank_db_t *db)
{
    apr_interval_time_t waited = 0;
    apr_status_t rv;

    if (bank_db_is_pgsql(db) || (rv = bank_db_turn_take(PUSH_TURN_WAIT, &waited)) == APR_ENOLOCK) {
        return 0;
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s,
                     BANKLOGNO(1817) "push: no write turn after %" APR_TIME_T_FMT
                                     " ms; writing without it",
                     apr_time_as_msec(waited));
        return 0;
    }
    return 1;
}

/* Claims up to max due rows: their messages in *msgs, 0 when none. */
static int claim(server_rec *s, apr_pool_t *p, const char *lease, const char *until, apr_time_t now,
                 int max, bank_push_msg_t **msgs)
{
    apr_pool_t *conn = NULL;
    bank_db_t *db = bank_db_background(s, p, &conn);
    apr_array_header_t *rows = NULL;
    bank_db_rc rc;
    int turn;

    if (!db) {
        if (bank_db_background_ready()) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                         BANKLOGNO(1802) "push: no database connection (see mod_dbd's messages)");
        }
        return 0;
    }
    turn = write_turn(s, db);
    rc = bank_store_push_claim(db, lease, until, bank_time_iso(p, now), max, &rows);
    if (turn) {
        bank_db_turn_give();
    }
    if (rc != BANK_DB_OK) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, BANKLOGNO(1803) "push: claiming rows: %s",
                     bank_db_error(db));
        push_count(BANK_M_DB_ERRORS);
        bank_db_give_back(&conn);
        return 0;
    }
    *msgs = (bank_push_msg_t *)rows->elts;
    bank_db_give_back(&conn);
    return rows->nelts;
}

/* What becomes of one message after its call, in the outbox and the metrics. */
static bank_db_rc settle_one(server_rec *s, bank_db_t *db, apr_pool_t *p, const char *lease,
                             const bank_push_msg_t *m, const bank_push_result_t *r)
{
    apr_time_t now = apr_time_now();
    const char *at = bank_time_iso(p, now), *state = "failed", *next = at;
    bank_metric_t outcome = BANK_M_PUSH_FAILED;
    double rnd = 0;
    apr_uint32_t u = 0;
    bank_db_rc rc;
    int settled = 0;

    if (r->status && bank_metrics_shared()) {
        bank_metrics_push_call(bank_metrics_shared(), r->took);
    }
    if (r->verdict == BANK_PUSH_SENT) {
        push_count(BANK_M_PUSH_SENT);
        return BANK_DB_OK; /* settled with the round's others (settle_all) */
    } else if (r->verdict == BANK_PUSH_UNREGISTERED) {
        state = "unregistered";
        outcome = BANK_M_PUSH_UNREGISTERED;
    } else if (r->verdict == BANK_PUSH_RETRY && m->attempts + 1 < conf.attempts) {
        state = "pending";
        outcome = BANK_M_PUSH_RETRIED;
        if (bank_random_bytes((unsigned char *)&u, sizeof(u)) == 0) {
            rnd = (double)u / 4294967296.0;
        }
        next = bank_time_iso(p, now + bank_push_backoff((int)m->attempts + 1, r->retry_after, rnd));
    }
    rc = bank_store_push_settle(db, m->id, lease, state, next, strcmp(state, "pending") ? at : NULL,
                                r->why, &settled);
    if (rc != BANK_DB_OK) {
        return rc;
    }
    push_count(outcome);
    if (outcome != BANK_M_PUSH_SENT) {
        ap_log_error(APLOG_MARK, outcome == BANK_M_PUSH_FAILED ? APLOG_WARNING : APLOG_INFO, 0, s,
                     BANKLOGNO(1804) "push message %" APR_INT64_T_FMT " (attempt %" APR_INT64_T_FMT
                                     "): %s; %s%s",
                     m->id, m->attempts + 1, r->why ? r->why : "failed",
                     outcome == BANK_M_PUSH_RETRIED        ? "tried again at "
                     : outcome == BANK_M_PUSH_UNREGISTERED ? "the device is removed"
                                                           : "given up (bankctl push retry)",
                     outcome == BANK_M_PUSH_RETRIED ? next : "");
    }
    /* an unregistered row is settled by its device's removal already (drops_first) */
    if (!settled && outcome != BANK_M_PUSH_UNREGISTERED) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     BANKLOGNO(1805) "push message %" APR_INT64_T_FMT ": its lease ended before "
                                     "the outcome was written (BankPushTimeout too short for "
                                     "the database?); another sender may send it again",
                     m->id);
    }
    return BANK_DB_OK;
}

typedef struct {
    server_rec *s;
    apr_pool_t *p;
    const char *lease;
    const char *until; /* the lease's end: where the claim put the rows' next_at */
    const bank_push_msg_t *msgs;
    const bank_push_result_t *out;
    int n;
} settle_batch;

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
        rc = settle_one(b->s, db, b->p, b->lease, &b->msgs[i], &b->out[i]);
        sent += b->out[i].verdict == BANK_PUSH_SENT;
    }
    if (rc == BANK_DB_OK && sent) {
        rc = bank_store_push_sent(db, b->lease, b->until, bank_time_iso(b->p, apr_time_now()),
                                  &marked);
    }
    if (rc == BANK_DB_OK && marked < sent) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, b->s,
                     BANKLOGNO(1815) "push: %d of %d message(s) sent after their lease ended "
                                     "(BankPushTimeout too short for the database?); another "
                                     "sender may send them again",
                     sent - marked, sent);
    }
    return rc;
}

/* The outcomes, in one transaction (one commit for the round). A failure leaves the rows
 * claimed: they go out again after the lease. */
static void settle(server_rec *s, apr_pool_t *p, settle_batch *b)
{
    apr_pool_t *conn = NULL;
    bank_db_t *db = bank_db_background(s, p, &conn);
    bank_db_rc rc;
    int turn;

    if (!db) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(1806) "push: no database connection to record %d outcome(s); "
                                     "sent again after the lease",
                     b->n);
        return;
    }
    turn = write_turn(s, db);
    rc = bank_db_transaction(db, settle_all, b);
    if (turn) {
        bank_db_turn_give();
    }
    if (rc != BANK_DB_OK) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(1807) "push: recording %d outcome(s): %s; sent again after the "
                                     "lease",
                     b->n, bank_db_error(db));
        push_count(BANK_M_DB_ERRORS);
    }
    bank_db_give_back(&conn);
}

/* Whether the server's CPUs have room for a full round (BankPushSpareCPU): at least that
 * share of their time idle since the previous reading, taken at most every PUSH_CPU_WINDOW.
 * No reading (no /proc/stat) counts as room. The sender's calls cost the machine little of
 * its own CPU, but each is a request FCM's side answers and, on a busy server, TLS and
 * libcurl's work beside the webhook's: under a flood the webhook's answers come first and
 * the outbox waits, its rows kept. */
static int cpu_room(apr_pool_t *p)
{
    apr_time_t now = apr_time_now();
    apr_file_t *f = NULL;
    char buf[512];
    apr_size_t len = sizeof(buf) - 1;
    apr_uint64_t total = 0, idle = 0;
    apr_status_t rv;

    if (cpu.at && now - cpu.at < PUSH_CPU_WINDOW) {
        return cpu.room;
    }
    if (apr_file_open(&f, "/proc/stat", APR_FOPEN_READ, APR_FPROT_OS_DEFAULT, p) != APR_SUCCESS) {
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
    cpu.room = !cpu.at || bank_push_cpu_spare(cpu.total, cpu.idle, total, idle, conf.spare_cpu);
    cpu.total = total;
    cpu.idle = idle;
    cpu.at = now;
    return cpu.room;
}

/* 1 while the webhook is busy (PUSH_BUSY_NOTICES notices or more waiting for their commit
 * across the server): a webhook flood on SQLite is held by its commits, not by the CPUs,
 * and the sender's work beside it slows each commit's turn. */
static int webhook_busy(void)
{
    bank_metrics_t *m = bank_metrics_shared();
    return m && apr_atomic_read64(&m->notices_committing) >= PUSH_BUSY_NOTICES;
}

/* The pending rows, for the gauge and /health. */
static void count_backlog(server_rec *s, apr_pool_t *p)
{
    apr_pool_t *conn = NULL;
    bank_db_t *db = bank_db_background(s, p, &conn);
    apr_int64_t n = 0;

    if (db && bank_store_push_backlog(db, &n) == BANK_DB_OK) {
        if (bank_metrics_shared()) {
            bank_metrics_push_backlog(bank_metrics_shared(), (apr_uint64_t)n);
        }
        if (n == 0 && shared) {
            apr_atomic_set32(&shared->last_empty, (apr_uint32_t)apr_time_sec(apr_time_now()));
        }
    }
    bank_db_give_back(&conn);
}

/* One round of at most max messages: claim, send, settle. The number of rows claimed (0:
 * nothing was due, or the breaker is open). */
static int round_once(server_rec *s, apr_pool_t *p, int max)
{
    bank_push_msg_t *msgs = NULL;
    bank_push_result_t *out;
    const char *lease = new_lease(p), *why, *until;
    apr_time_t now = apr_time_now();
    settle_batch b;
    int n, i, answered = 0, wait;

    if ((wait = bank_idp_breaker_allow(breaker, conf.base_url, now)) > 0) {
        return 0; /* rows wait in the outbox; no thread waits on FCM */
    }
    until = bank_time_iso(p, now + lease_length());
    if (!lease || (n = claim(s, p, lease, until, now, max, &msgs)) == 0) {
        return 0;
    }
    out = apr_pcalloc(p, sizeof(*out) * (apr_size_t)n);
    if ((why = bank_push_send(client, p, msgs, n, out)) != NULL) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(1808) "push: no bearer from the service account's token_uri: %s",
                     why);
    }
    for (i = 0; i < n; i++) {
        answered += out[i].verdict != BANK_PUSH_RETRY || (out[i].status && out[i].status < 500);
    }
    /* A round where FCM answered nothing usable counts one failure towards opening it. */
    if (bank_idp_breaker_record(breaker, conf.base_url, answered > 0 && !why, apr_time_now())) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(1809) "push: FCM at %s failed %d rounds in a row: circuit breaker "
                                     "open, no calls for %d seconds",
                     conf.base_url, BANK_IDP_BREAKER_FAILURES, BANK_IDP_BREAKER_OPEN);
    }
    b.s = s;
    b.p = p;
    b.lease = lease;
    b.until = until;
    b.msgs = msgs;
    b.out = out;
    b.n = n;
    settle(s, p, &b);
    return n;
}

/* No round starts from now on; returns once the one under way has ended (or after a lease's
 * length: its rows are another sender's then). */
static apr_status_t round_end(void *data)
{
    apr_time_t until = apr_time_now() + lease_length();

    (void)data;
    apr_atomic_xchg32(&stopping, 1);
    while (apr_atomic_read32(&ticking) && apr_time_now() < until) {
        apr_sleep(PUSH_STOP_WAIT);
    }
    return APR_SUCCESS;
}

void bank_push_child_init(apr_pool_t *pchild, server_rec *s)
{
    (void)s;
    if (conf.on) {
        /* a pre-cleanup: before mod_dbd's connections (in a sub-pool) are closed */
        apr_pool_pre_cleanup_register(pchild, NULL, round_end);
    }
}

static apr_status_t sender_tick(int state, void *data, apr_pool_t *pool)
{
    server_rec *s = data;
    apr_time_t start = apr_time_now();
    apr_pool_t *p;
    int n, room, max;

    if (state == AP_WATCHDOG_STATE_STARTING) {
        bank_push_conf_t c = {conf.project, conf.base_url, conf.timeout, &conf.account};
        /* mod_watchdog clears `pool` after each call: the sender's own root pool lives as
         * long as the thread (its allocator, its connections to FCM, the bearer). */
        (void)pool;
        apr_pool_create(&sender_pool, NULL);
        cpu_room(sender_pool); /* the first reading: the first round's has one to compare */
        client = bank_push_client_create(sender_pool, &c);
        if (!client) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                         BANKLOGNO(1810) "push: libcurl could not make its handles: no push "
                                         "messages from this process");
        }
        return APR_SUCCESS;
    }
    if (state == AP_WATCHDOG_STATE_STOPPING) {
        round_end(NULL);
        if (sender_pool) {
            apr_pool_destroy(sender_pool);
            sender_pool = NULL;
            client = NULL;
        }
        return APR_SUCCESS;
    }
    apr_atomic_xchg32(&ticking, 1);
    if (apr_atomic_read32(&stopping) || !client ||
        (!apr_atomic_xchg32(&woken, 0) && start < next_poll)) {
        apr_atomic_xchg32(&ticking, 0);
        return APR_SUCCESS;
    }
    next_poll = start + PUSH_POLL;
    apr_pool_create(&p, sender_pool);
    /* round after round while there is room, looked at again before each: a flood that
     * starts meanwhile makes the next round a lean one, and the tick's last; lean rounds
     * come PUSH_LEAN_GAP apart (each one's claim and settling are commits beside the
     * webhook's) */
    do {
        apr_pool_clear(p);
        room = !conf.spare_cpu || (cpu_room(p) && !webhook_busy());
        max = room ? BANK_PUSH_BATCH : BANK_PUSH_BATCH_LEAN;
        if (!room && apr_time_now() < next_lean) {
            n = max; /* not yet: the next tick looks again */
            break;
        }
        n = round_once(s, p, max);
        if (!room && n > 0) {
            push_count(BANK_M_PUSH_LEAN);
            next_lean = apr_time_now() + PUSH_LEAN_GAP;
        }
    } while (room && n == max && apr_time_now() - start < PUSH_TICK_BUDGET &&
             !apr_atomic_read32(&stopping));
    if (n == max) {
        bank_push_wake(); /* more is due: the next tick goes on */
    }
    apr_pool_clear(p);
    if (apr_time_now() >= next_count) {
        /* a statement that reads every pending row: once a second is enough, and while
         * the webhook is flooded (its backlog growing by thousands a second) every
         * PUSH_COUNT_BUSY */
        next_count = apr_time_now() + (room ? PUSH_POLL : PUSH_COUNT_BUSY);
        count_backlog(s, p);
    }
    apr_pool_destroy(p);
    apr_atomic_xchg32(&ticking, 0);
    return APR_SUCCESS;
}

int bank_push_post_config(apr_pool_t *pconf, server_rec *s)
{
    APR_OPTIONAL_FN_TYPE(ap_watchdog_get_instance) * get_instance;
    APR_OPTIONAL_FN_TYPE(ap_watchdog_register_callback) * register_callback;
    ap_watchdog_t *wd = NULL;
    apr_shm_t *shm = NULL;
    apr_status_t rv;

    if (!conf.on) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s,
                     BANKLOGNO(1811) "push notifications are off (no BankPush)");
        return OK;
    }
    get_instance = APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_get_instance);
    register_callback = APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_register_callback);
    if (!get_instance || !register_callback) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
                     BANKLOGNO(1812) "BankPush needs mod_watchdog (LoadModule watchdog_module, "
                                     "unless it is compiled in)");
        return !OK;
    }
    /* One breaker and one "last empty" for all the processes: anonymous shared memory made
     * before the fork, gone with pconf. */
    if (apr_shm_create(&shm, sizeof(push_shared_t) + bank_idp_breaker_size(), NULL, pconf) ==
        APR_SUCCESS) {
        shared = apr_shm_baseaddr_get(shm);
        memset(shared, 0, sizeof(*shared));
        /* rows pending since start-up count from start-up */
        shared->last_empty = (apr_uint32_t)apr_time_sec(apr_time_now());
        breaker = bank_idp_breaker_at((char *)shared + sizeof(push_shared_t));
    } else {
        shared = NULL;
        breaker = NULL;
    }
    bank_idp_global_init();
    /* parent 0: a thread in every child process; not a singleton: each process sends what its
     * webhook wrote at once, and the claims keep the senders apart. */
    if ((rv = get_instance(&wd, PUSH_WATCHDOG, 0, 0, pconf)) != APR_SUCCESS ||
        (rv = register_callback(wd, AP_WD_TM_SLICE, s, sender_tick)) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv, s,
                     BANKLOGNO(1813) "push: cannot start the sender's watchdog");
        return !OK;
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                 BANKLOGNO(1814) "push notifications on: FCM project %s at %s, service account "
                                 "%s (token_uri %s), %d attempts, %d s per call",
                 conf.project, conf.base_url, conf.account.client_email, conf.account.token_uri,
                 conf.attempts, conf.timeout);
    return OK;
}
