/* The push sender's rounds (bank_push_sender.c) against a real SQLite database (a fresh one per
 * test), with a fake sending (no network: each device token says what FCM answers), a clock
 * of the test's own and fresh connections from the fake host: claims under a lease (two
 * senders never hold one row; a lease that ended is taken over and the late outcome does not
 * count), each verdict's settling (sent, retried with backoff, given up when the attempts are
 * used, the device dropped), a claim or a settling that fails (nothing half done), a round
 * cut off by an exiting process, the exiting process's wait, the lean rounds under a flood,
 * the clock set back and the circuit breaker. */
#include <string.h>
#include <unistd.h>
#include <apr_atomic.h>
#include <apr_file_io.h>
#include <apr_thread_mutex.h>
#include <apr_thread_proc.h>
#include "unit.h"
#include "db_fixture.h"
#include "bank_metrics.h"
#include "bank_push_sender.h"
#include "bank_sql.h"

/* The rows' time of arrival (every row is due from then), and the lease of a sender whose
 * BankPushTimeout is 10 s. */
#define T0 apr_time_from_sec(APR_INT64_C(946684800)) /* 2000-01-01T00:00:00Z */
#define RECEIVED "2000-01-01T00:00:00.000Z"
#define LEASE apr_time_from_sec(25)
#define MAX_IDS 512

typedef struct fake_s {
    apr_thread_mutex_t *lock; /* the counts', for the threads */
    apr_thread_mutex_t *turn; /* the write turn, shared by the fakes of one test */
    apr_time_t clock;
    int no_db;     /* connect gives none */
    int not_ready; /* and connections are not expected yet */
    int fail_read; /* the claim's read fails on the connections made from now on */
    int connects, turns, gives, sends;
    int batch[64], nbatch; /* the sizes of the sends */
    apr_int64_t ids[MAX_IDS], attempts[MAX_IDS];
    int nids;
    const char *why;                  /* every send fails whole with this (no bearer) */
    int sleep_ms;                     /* each send takes this long */
    void (*during)(struct fake_s *f); /* runs in the middle of a send */
    void *data;                       /* for during */
    volatile apr_uint32_t in_send;    /* a send has begun */
} fake_t;

static bank_metrics_t metrics;

/* A fake at T0 + 1 s; turn: the write turn it shares, or NULL for one of its own. */
static void fake_init(apr_pool_t *p, fake_t *f, apr_thread_mutex_t *turn)
{
    memset(f, 0, sizeof(*f));
    apr_thread_mutex_create(&f->lock, APR_THREAD_MUTEX_DEFAULT, p);
    if (!turn) {
        apr_thread_mutex_create(&turn, APR_THREAD_MUTEX_DEFAULT, p);
    }
    f->turn = turn;
    f->clock = T0 + apr_time_from_sec(1);
}

static void bump(fake_t *f, int *n)
{
    apr_thread_mutex_lock(f->lock);
    (*n)++;
    apr_thread_mutex_unlock(f->lock);
}

/* The claim's read, made to fail at run time on a row (an integer overflow in SQLite). */
static void claimed_fails(bank_db_t *db)
{
    const bank_stmt_t *st = bank_stmt_find("bank_push_claimed");
    const char *sql =
        apr_pstrcat(bank_db_pool(db), bank_stmt_expand(bank_db_pool(db), st->sql, 0),
                    " AND abs(o.id - o.id - 9223372036854775807 - 1) > 0", (char *)NULL);

    CHECK(bank_db_prepare(db, "bank_push_claimed", sql, 1) == NULL);
}

/* A connection of its own each time, in parent (as mod_dbd's, the handle and what it reads
 * outlive the lease; here the connection too). */
static bank_db_t *f_connect(void *baton, apr_pool_t *parent, apr_pool_t **lease)
{
    fake_t *f = baton;
    const char *err = NULL;
    bank_db_t *db;

    bump(f, &f->connects);
    *lease = NULL;
    if (f->no_db) {
        return NULL;
    }
    apr_pool_create(lease, parent);
    db = bank_db_open(parent, fixture_driver, fixture_params, &err);
    CHECK(db != NULL && bank_db_prepare_all(db) == NULL);
    if (db && f->fail_read) {
        claimed_fails(db);
    }
    return db;
}

static int f_ready(void *baton)
{
    return !((fake_t *)baton)->not_ready;
}

static int f_turn_take(void *baton)
{
    fake_t *f = baton;

    apr_thread_mutex_lock(f->turn);
    bump(f, &f->turns);
    return 1;
}

static void f_turn_give(void *baton)
{
    fake_t *f = baton;

    bump(f, &f->gives);
    apr_thread_mutex_unlock(f->turn);
}

/* What FCM answers a device: its token says. */
static void judge(const char *token, bank_push_result_t *r)
{
    memset(r, 0, sizeof(*r));
    r->took = apr_time_from_msec(5);
    r->status = 200;
    if (strstr(token, "gone")) {
        r->status = 404;
        r->verdict = BANK_PUSH_UNREGISTERED;
    } else if (strstr(token, "retry")) {
        r->status = 503;
        r->verdict = BANK_PUSH_RETRY;
        r->retry_after = strstr(token, "after") ? 120 : 0;
    } else if (strstr(token, "refused")) {
        r->status = 400;
        r->verdict = BANK_PUSH_REJECTED;
    }
    if (r->verdict != BANK_PUSH_SENT) {
        r->why = r->status == 404   ? "FCM answered HTTP 404"
                 : r->status == 503 ? "FCM answered HTTP 503"
                                    : "FCM answered HTTP 400";
    }
}

static const char *f_send(void *baton, apr_pool_t *p, const bank_push_msg_t *msgs, int n,
                          bank_push_result_t *out)
{
    fake_t *f = baton;
    int i;

    (void)p;
    apr_thread_mutex_lock(f->lock);
    f->sends++;
    if (f->nbatch < 64) {
        f->batch[f->nbatch++] = n;
    }
    for (i = 0; i < n; i++) {
        if (f->nids < MAX_IDS) {
            f->attempts[f->nids] = msgs[i].attempts;
            f->ids[f->nids++] = msgs[i].id;
        }
        judge(msgs[i].device_token, &out[i]);
        if (f->why) {
            memset(&out[i], 0, sizeof(out[i]));
            out[i].verdict = BANK_PUSH_RETRY;
            out[i].why = f->why;
        }
    }
    apr_thread_mutex_unlock(f->lock);
    apr_atomic_set32(&f->in_send, 1);
    if (f->sleep_ms) {
        apr_sleep(apr_time_from_msec(f->sleep_ms));
    }
    if (f->during) {
        f->during(f);
    }
    return f->why;
}

static apr_time_t f_now(void *baton)
{
    return ((fake_t *)baton)->clock;
}

/* A sender on f, started: 3 attempts, full rounds always (BankPushSpareCPU 0). */
static void host_init(bank_push_sender_host *h, fake_t *f)
{
    memset(h, 0, sizeof(*h));
    h->fcm.project = "unit";
    h->fcm.base_url = "http://127.0.0.1:9";
    h->fcm.timeout = 10;
    h->attempts = 3;
    h->baton = f;
    h->connect = f_connect;
    h->ready = f_ready;
    h->turn_take = f_turn_take;
    h->turn_give = f_turn_give;
    h->send = f_send;
    h->now = f_now;
}

static bank_push_sender_t *sender_of(apr_pool_t *p, const bank_push_sender_host *h)
{
    bank_push_sender_t *s = bank_push_sender_create(p, h);

    bank_push_sender_start(s);
    return s;
}

/* A fresh database: a customer whose account is W1 with these devices, and n notices to W1
 * (one outbox row per device each), due from T0. NULL if it cannot be made. */
static bank_db_t *setup(apr_pool_t *p, const char *const *tokens, int ndev, int n)
{
    bank_db_t *db = fixture_sqlite(p);
    bank_customer_t c;
    int i;

    CHECK(db != NULL);
    if (!db) {
        return NULL;
    }
    fixture_customer(db, "Ada", "Obi", "pw", &c);
    fixture_account(db, &c, "W1");
    for (i = 0; i < ndev; i++) {
        CHECK(bank_store_device_upsert(db, c.id, tokens[i], NULL, RECEIVED) == BANK_DB_OK);
    }
    for (i = 0; i < n; i++) {
        bank_notice_put_t *put = fixture_notice(db, apr_psprintf(p, "REF-%d", i), "W1", RECEIVED);
        CHECK(bank_store_notice_put(db, put) == BANK_DB_OK && put->added);
    }
    memset(&metrics, 0, sizeof(metrics));
    bank_metrics_share(&metrics);
    unit_log_clear();
    return db;
}

static long count(bank_db_t *db, const char *sql)
{
    const char *v = NULL;

    CHECK(bank_db_query_value(db, sql, &v) == 0);
    return v ? atol(v) : -1;
}

/* "state attempts leased|-" of the device's outbox rows, oldest first, comma-separated. */
static const char *rows_of(bank_db_t *db, const char *token)
{
    const char *v = NULL;

    CHECK(bank_db_query_value(
              db,
              apr_psprintf(bank_db_pool(db),
                           "SELECT group_concat(x, ',') FROM (SELECT state || ' ' || attempts || "
                           "' ' || CASE WHEN lease IS NULL THEN '-' ELSE 'leased' END AS x FROM "
                           "push_outbox WHERE device_token = '%s' ORDER BY id)",
                           token),
              &v) == 0);
    return v ? v : "(none)";
}

/* A row's column (its device's only row). */
static const char *column_of(bank_db_t *db, const char *token, const char *col)
{
    const char *v = NULL;

    CHECK(bank_db_query_value(db,
                              apr_psprintf(bank_db_pool(db),
                                           "SELECT %s FROM push_outbox WHERE device_token = '%s'",
                                           col, token),
                              &v) == 0);
    return v;
}

static apr_time_t next_at(bank_db_t *db, const char *token)
{
    apr_time_t t = 0;

    CHECK(bank_time_parse(column_of(db, token, "next_at"), &t) == 0);
    return t;
}

static apr_uint64_t calls_observed(void)
{
    apr_uint64_t n = 0;
    int i;

    for (i = 0; i <= BANK_METRICS_BOUNDS; i++) {
        n += metrics.push_calls.slot[i];
    }
    return n;
}

/* One test's database, fake host and sender. */
typedef struct {
    bank_db_t *db;
    fake_t f;
    bank_push_sender_host h; /* its baton: f */
    bank_push_sender_t *s;   /* made by rig_start, once h is as the test wants it */
} rig_t;

/* A fresh database (setup) and a fake host on it. 0 if the database could not be made. */
static int rig(apr_pool_t *p, rig_t *r, const char *const *tokens, int ndev, int n)
{
    r->db = setup(p, tokens, ndev, n);
    fake_init(p, &r->f, NULL);
    host_init(&r->h, &r->f);
    r->s = NULL;
    return r->db != NULL;
}

static void rig_start(apr_pool_t *p, rig_t *r)
{
    r->s = sender_of(p, &r->h);
}

/* A round claims what is due up to its size, sends it at once and marks it sent in one
 * transaction; on SQLite the claim and the settling each take the write turn. */
static void test_round_sent(apr_pool_t *p)
{
    static const char *const tokens[] = {"tok-a", "tok-b"};
    apr_pool_t *rp;
    rig_t r;

    if (!rig(p, &r, tokens, 2, 3)) {
        return;
    }
    rig_start(p, &r);
    apr_pool_create(&rp, p);
    CHECK(bank_push_sender_round(r.s, rp, 4) == 4);
    CHECK(r.f.sends == 1 && r.f.batch[0] == 4 && r.f.connects == 2);
    CHECK(r.f.turns == 2 && r.f.gives == 2);
    apr_pool_clear(rp);
    CHECK(bank_push_sender_round(r.s, rp, 100) == 2);
    CHECK(count(r.db, "SELECT count(*) FROM push_outbox WHERE state = 'sent' AND attempts = 1 AND "
                      "lease IS NULL AND last_error IS NULL AND "
                      "done_at = '2000-01-01T00:00:01.000Z'") == 6);
    CHECK(metrics.counter[BANK_M_PUSH_SENT] == 6 && calls_observed() == 6);
    apr_pool_clear(rp);
    CHECK(bank_push_sender_round(r.s, rp, 100) == 0 && r.f.sends == 2); /* nothing left */
    CHECK(!unit_logged("BANK18"));
    bank_push_sender_end(r.s);
}

/* Each verdict's outcome: sent; retried later with backoff (at least Retry-After); the
 * device FCM no longer knows removed, its row unregistered; refused for good; and a retry
 * whose attempts are used up is given up. No device token in the log. */
static void test_verdicts(apr_pool_t *p)
{
    static const char *const tokens[] = {"tok-ok", "tok-retry", "tok-retry-after", "tok-gone",
                                         "tok-refused"};
    apr_time_t now = T0 + apr_time_from_sec(1), at;
    rig_t r;

    if (!rig(p, &r, tokens, 5, 1)) {
        return;
    }
    r.h.attempts = 2;
    rig_start(p, &r);
    CHECK(bank_push_sender_round(r.s, p, 100) == 5);
    CHECK_STR(rows_of(r.db, "tok-ok"), "sent 1 -");
    CHECK_STR(rows_of(r.db, "tok-retry"), "pending 1 -");
    at = next_at(r.db, "tok-retry"); /* 2 s, jittered down to half */
    CHECK(at >= now + apr_time_from_sec(1) && at <= now + apr_time_from_sec(2));
    CHECK(column_of(r.db, "tok-retry", "done_at") == NULL);
    CHECK_STR(rows_of(r.db, "tok-retry-after"), "pending 1 -");
    CHECK(next_at(r.db, "tok-retry-after") == now + apr_time_from_sec(120));
    CHECK_STR(rows_of(r.db, "tok-gone"), "unregistered 0 -");
    CHECK(count(r.db, "SELECT count(*) FROM devices WHERE device_token = 'tok-gone'") == 0);
    CHECK(count(r.db, "SELECT count(*) FROM devices") == 4);
    CHECK_STR(rows_of(r.db, "tok-refused"), "failed 1 -");
    CHECK_STR(column_of(r.db, "tok-refused", "last_error"), "FCM answered HTTP 400");
    CHECK_STR(column_of(r.db, "tok-refused", "done_at"), "2000-01-01T00:00:01.000Z");
    CHECK(metrics.counter[BANK_M_PUSH_SENT] == 1 && metrics.counter[BANK_M_PUSH_RETRIED] == 2 &&
          metrics.counter[BANK_M_PUSH_UNREGISTERED] == 1 &&
          metrics.counter[BANK_M_PUSH_FAILED] == 1);
    CHECK(unit_logged("(attempt 1): FCM answered HTTP 503; tried again at 2000-01-01T00:02:01"));
    CHECK(unit_logged("(attempt 1): FCM answered HTTP 404; the device is removed"));
    CHECK(unit_logged("(attempt 1): FCM answered HTTP 400; given up (bankctl push retry)"));
    /* both retries come due and fail again: their second attempt was the last */
    r.f.clock = now + apr_time_from_sec(200);
    CHECK(bank_push_sender_round(r.s, p, 100) == 2);
    CHECK_STR(rows_of(r.db, "tok-retry"), "failed 2 -");
    CHECK_STR(rows_of(r.db, "tok-retry-after"), "failed 2 -");
    CHECK(metrics.counter[BANK_M_PUSH_FAILED] == 3);
    CHECK(unit_logged("(attempt 2): FCM answered HTTP 503; given up (bankctl push retry)"));
    CHECK(!unit_logged("tok-") && !unit_logged("BANK1805") && !unit_logged("BANK1815"));
    bank_push_sender_end(r.s);
}

typedef struct {
    bank_push_sender_t *s;
    apr_pool_t *pool;
    int claimed;
} claimant_t;

static void *APR_THREAD_FUNC claimant(apr_thread_t *t, void *data)
{
    claimant_t *c = data;
    int n, rounds = 0;

    (void)t; /* returns rather than apr_thread_exit: pthread_exit's unwinding upsets ASan */
    do {
        apr_pool_clear(c->pool);
        n = bank_push_sender_round(c->s, c->pool, 5);
        c->claimed += n;
    } while (n > 0 && ++rounds < 100);
    return NULL;
}

/* 1 if no id is in both lists and each list holds each of its ids once. */
static int apart(const fake_t *a, const fake_t *b)
{
    int i, j;

    for (i = 0; i < a->nids + b->nids; i++) {
        apr_int64_t x = i < a->nids ? a->ids[i] : b->ids[i - a->nids];
        for (j = i + 1; j < a->nids + b->nids; j++) {
            if (x == (j < a->nids ? a->ids[j] : b->ids[j - a->nids])) {
                return 0;
            }
        }
    }
    return 1;
}

/* Two senders (two processes: connections of their own, one write turn) claiming at once:
 * every row is sent once, by one of them, and each one's outcome is written under its own
 * lease (none finds its rows settled by the other). */
static void test_two_claimants(apr_pool_t *p)
{
    static const char *const tokens[] = {"tok-a", "tok-b"};
    bank_db_t *db = setup(p, tokens, 2, 30);
    bank_push_sender_host h[2];
    apr_thread_mutex_t *turn;
    apr_thread_t *t[2];
    claimant_t c[2];
    fake_t f[2];
    apr_status_t rv;
    int i;

    if (!db) {
        return;
    }
    apr_thread_mutex_create(&turn, APR_THREAD_MUTEX_DEFAULT, p);
    for (i = 0; i < 2; i++) {
        fake_init(p, &f[i], turn);
        f[i].sleep_ms = 3;
        host_init(&h[i], &f[i]);
        c[i].s = sender_of(p, &h[i]);
        c[i].claimed = 0;
        apr_pool_create(&c[i].pool, NULL);
    }
    for (i = 0; i < 2; i++) {
        CHECK(apr_thread_create(&t[i], NULL, claimant, &c[i], p) == APR_SUCCESS);
    }
    for (i = 0; i < 2; i++) {
        apr_thread_join(&rv, t[i]);
        apr_pool_destroy(c[i].pool);
        bank_push_sender_end(c[i].s);
    }
    CHECK(c[0].claimed + c[1].claimed == 60 && f[0].nids + f[1].nids == 60);
    CHECK(apart(&f[0], &f[1]));
    CHECK(count(db, "SELECT count(*) FROM push_outbox WHERE state = 'sent' AND attempts = 1") ==
          60);
    CHECK(metrics.counter[BANK_M_PUSH_SENT] == 60);
    CHECK(!unit_logged("BANK1805") && !unit_logged("BANK1815"));
}

/* rig with two devices and one notice, started, and a second sender (another process) on
 * its database with the fake f, sharing r's write turn: returned, NULL if no database. */
static bank_push_sender_t *rig_two(apr_pool_t *p, rig_t *r, const char *const *tokens, fake_t *f,
                                   bank_push_sender_host *h)
{
    if (!rig(p, r, tokens, 2, 1)) {
        return NULL;
    }
    rig_start(p, r);
    fake_init(p, f, r->f.turn);
    host_init(h, f);
    return sender_of(p, h);
}

/* The other sender of test_takeover, and what it claimed. */
typedef struct {
    bank_push_sender_t *s;
    fake_t *f;
    apr_pool_t *pool;
    int claimed;
} other_t;

/* During the first sender's send, its lease ends (a call slower than BankPushTimeout, say):
 * the other sender, whose clock is past the lease, takes its rows. */
static void take_over(fake_t *f)
{
    other_t *o = f->data;

    o->f->clock = f->clock + LEASE + apr_time_from_sec(1);
    o->claimed = bank_push_sender_round(o->s, o->pool, 100);
}

/* A lease that ended is another sender's to take; the first sender's late outcome then
 * counts for nothing (logged), and the row's attempts are counted once. */
static void test_takeover(apr_pool_t *p)
{
    static const char *const tokens[] = {"tok-a", "tok-retry"};
    bank_push_sender_host hb;
    fake_t fb;
    other_t o;
    rig_t r;

    if (!(o.s = rig_two(p, &r, tokens, &fb, &hb))) {
        return;
    }
    o.f = &fb;
    o.pool = p;
    o.claimed = 0;
    r.f.during = take_over;
    r.f.data = &o;
    CHECK(bank_push_sender_round(r.s, p, 100) == 2);
    CHECK(o.claimed == 2 && fb.nids == 2 && fb.attempts[0] == 0 && fb.attempts[1] == 0);
    CHECK((fb.ids[0] == r.f.ids[0] && fb.ids[1] == r.f.ids[1]) ||
          (fb.ids[0] == r.f.ids[1] && fb.ids[1] == r.f.ids[0]));
    /* the second sender's outcomes stand */
    CHECK_STR(rows_of(r.db, "tok-a"), "sent 1 -");
    CHECK_STR(rows_of(r.db, "tok-retry"), "pending 1 -");
    CHECK(next_at(r.db, "tok-retry") > fb.clock);
    CHECK(unit_logged("BANK1805: push message") && unit_logged("its lease ended before"));
    CHECK(unit_logged("BANK1815: push: 1 of 1 message(s) sent after their lease ended"));
    bank_push_sender_end(o.s);
    bank_push_sender_end(r.s);
}

/* The exiting process's connections are gone before its round settles. */
static void pools_gone(fake_t *f)
{
    f->no_db = 1;
}

/* A round cut off by its process's exit records nothing: its rows stay claimed until the
 * lease ends, then the next sender takes them, no attempt counted. After the exit's stop no
 * tick of that process starts a round. */
static void test_cut_off(apr_pool_t *p)
{
    static const char *const tokens[] = {"tok-a", "tok-b"};
    bank_push_sender_host hb;
    bank_push_sender_t *b;
    fake_t fb;
    rig_t r;

    if (!(b = rig_two(p, &r, tokens, &fb, &hb))) {
        return;
    }
    r.f.during = pools_gone;
    CHECK(bank_push_sender_round(r.s, p, 100) == 2);
    CHECK(unit_logged("BANK1806: push: no database connection to record 2 outcome(s); sent "
                      "again after the lease"));
    CHECK_STR(rows_of(r.db, "tok-a"), "pending 0 leased");
    CHECK_STR(rows_of(r.db, "tok-b"), "pending 0 leased");
    bank_push_sender_stop(r.s);
    r.f.no_db = 0;
    bank_push_sender_wake(r.s);
    bank_push_sender_tick(r.s);
    CHECK(r.f.sends == 1 && r.f.connects == 2); /* the tick did nothing */
    /* the lease has a second to go: nothing for the other sender yet; then both */
    fb.clock = r.f.clock + LEASE - apr_time_from_sec(1);
    CHECK(bank_push_sender_round(b, p, 100) == 0);
    fb.clock = r.f.clock + LEASE;
    CHECK(bank_push_sender_round(b, p, 100) == 2);
    CHECK(fb.attempts[0] == 0 && fb.attempts[1] == 0);
    CHECK_STR(rows_of(r.db, "tok-a"), "sent 1 -");
    CHECK_STR(rows_of(r.db, "tok-b"), "sent 1 -");
    bank_push_sender_end(b);
    bank_push_sender_end(r.s);
}

static void *APR_THREAD_FUNC ticker(apr_thread_t *t, void *data)
{
    bank_push_sender_t *s = data;

    (void)t;
    bank_push_sender_tick(s);
    return NULL;
}

/* A process that exits while its sender's round is under way waits for the round to end
 * (its outcomes recorded), and no round starts after it, though more rows are due. */
static void test_stop_waits(apr_pool_t *p)
{
    static const char *const tokens[] = {"tok-a", "tok-b", "tok-c"};
    apr_thread_t *t;
    apr_status_t rv;
    int i;
    rig_t r;

    if (!rig(p, &r, tokens, 3, 50)) {
        return;
    }
    r.f.sleep_ms = 300;
    rig_start(p, &r);
    bank_push_sender_wake(r.s);
    CHECK(apr_thread_create(&t, NULL, ticker, r.s, p) == APR_SUCCESS);
    for (i = 0; i < 500 && !apr_atomic_read32(&r.f.in_send); i++) {
        apr_sleep(apr_time_from_msec(10));
    }
    bank_push_sender_stop(r.s);
    /* the round under way was recorded by then; the rest was left for later */
    CHECK(count(r.db, "SELECT count(*) FROM push_outbox WHERE state = 'sent'") == BANK_PUSH_BATCH);
    CHECK(
        count(r.db, "SELECT count(*) FROM push_outbox WHERE state = 'pending' AND lease IS NULL") ==
        150 - BANK_PUSH_BATCH);
    apr_thread_join(&rv, t);
    CHECK(r.f.sends == 1);
    bank_push_sender_end(r.s);
}

/* rig with one notice, and a trigger (unit_refuse) that refuses the outbox's updates of col
 * where cond holds ("unit: refused"); the sender started. */
static int rig_refusing(apr_pool_t *p, rig_t *r, const char *const *tokens, int ndev,
                        const char *col, const char *cond)
{
    if (!rig(p, r, tokens, ndev, 1)) {
        return 0;
    }
    CHECK(bank_db_query(r->db, apr_psprintf(p,
                                            "CREATE TRIGGER unit_refuse BEFORE UPDATE OF %s ON "
                                            "push_outbox WHEN %s BEGIN SELECT RAISE(ABORT, "
                                            "'unit: refused'); END",
                                            col, cond)) == 0);
    rig_start(p, r);
    return 1;
}

/* The settling's transaction fails at its end (marking the sent row): nothing of it stays,
 * neither the device's removal nor the retry's schedule; the rows stay claimed, and after the
 * lease they are claimed again, no attempt counted, and settled. */
static void test_settle_fails(apr_pool_t *p)
{
    static const char *const tokens[] = {"tok-a", "tok-gone", "tok-retry"};
    rig_t r;

    if (!rig_refusing(p, &r, tokens, 3, "state", "NEW.state = 'sent'")) {
        return;
    }
    CHECK(bank_push_sender_round(r.s, p, 100) == 3);
    CHECK(unit_logged("BANK1807: push: recording 3 outcome(s): unit: refused"));
    CHECK(metrics.counter[BANK_M_DB_ERRORS] == 1);
    /* outcomes are counted and logged once written: none here (a transaction run twice,
     * bank_db_transaction, reports once) */
    CHECK(metrics.counter[BANK_M_PUSH_SENT] == 0 && metrics.counter[BANK_M_PUSH_RETRIED] == 0 &&
          metrics.counter[BANK_M_PUSH_UNREGISTERED] == 0);
    CHECK(!unit_logged("BANK1804"));
    CHECK(r.f.turns == 2 && r.f.gives == 2);
    CHECK_STR(rows_of(r.db, "tok-a"), "pending 0 leased");
    CHECK_STR(rows_of(r.db, "tok-gone"), "pending 0 leased");
    CHECK_STR(rows_of(r.db, "tok-retry"), "pending 0 leased");
    CHECK(count(r.db, "SELECT count(*) FROM devices") == 3);
    CHECK(bank_db_query(r.db, "DROP TRIGGER unit_refuse") == 0);
    r.f.clock += LEASE;
    CHECK(bank_push_sender_round(r.s, p, 100) == 3);
    CHECK(r.f.attempts[3] == 0 && r.f.attempts[4] == 0 && r.f.attempts[5] == 0);
    CHECK_STR(rows_of(r.db, "tok-a"), "sent 1 -");
    CHECK_STR(rows_of(r.db, "tok-gone"), "unregistered 0 -");
    CHECK_STR(rows_of(r.db, "tok-retry"), "pending 1 -");
    CHECK(count(r.db, "SELECT count(*) FROM devices") == 2);
    CHECK(metrics.counter[BANK_M_PUSH_SENT] == 1 && metrics.counter[BANK_M_PUSH_RETRIED] == 1 &&
          metrics.counter[BANK_M_PUSH_UNREGISTERED] == 1);
    bank_push_sender_end(r.s);
}

/* A claim whose write fails takes nothing (the rows stay due); one whose read fails sends
 * nothing, and the rows it marked are claimed again after the lease. No connection: logged
 * once connections are expected, quietly before. */
static void test_claim_fails(apr_pool_t *p)
{
    static const char *const tokens[] = {"tok-a", "tok-b"};
    rig_t r;

    if (!rig_refusing(p, &r, tokens, 2, "lease", "NEW.lease IS NOT NULL")) {
        return;
    }
    CHECK(bank_push_sender_round(r.s, p, 100) == 0 && r.f.sends == 0);
    CHECK(unit_logged("BANK1803: push: claiming rows: unit: refused"));
    CHECK(metrics.counter[BANK_M_DB_ERRORS] == 1);
    CHECK_STR(rows_of(r.db, "tok-a"), "pending 0 -");
    CHECK(bank_db_query(r.db, "DROP TRIGGER unit_refuse") == 0);
    unit_log_clear();
    r.f.fail_read = 1;
    CHECK(bank_push_sender_round(r.s, p, 100) == 0 && r.f.sends == 0);
    CHECK(unit_logged("BANK1803: push: claiming rows: ") && unit_logged("integer overflow"));
    CHECK_STR(rows_of(r.db, "tok-a"), "pending 0 leased");
    r.f.fail_read = 0;
    CHECK(bank_push_sender_round(r.s, p, 100) == 0); /* still leased */
    r.f.clock += LEASE;
    CHECK(bank_push_sender_round(r.s, p, 100) == 2 && r.f.attempts[0] == 0);
    CHECK_STR(rows_of(r.db, "tok-a"), "sent 1 -");
    unit_log_clear();
    r.f.no_db = r.f.not_ready = 1;
    CHECK(bank_push_sender_round(r.s, p, 100) == 0 && !unit_logged("BANK1802"));
    r.f.not_ready = 0;
    CHECK(bank_push_sender_round(r.s, p, 100) == 0 && unit_logged("BANK1802"));
    bank_push_sender_end(r.s);
}

/* Writes the CPUs' ticks the sender reads: user and idle. */
static void cpu_write(apr_pool_t *p, const char *path, int user, int idle)
{
    apr_file_t *f = NULL;

    CHECK(apr_file_open(&f, path, APR_FOPEN_WRITE | APR_FOPEN_CREATE | APR_FOPEN_TRUNCATE,
                        APR_FPROT_OS_DEFAULT, p) == APR_SUCCESS);
    if (f) {
        apr_file_printf(f, "cpu  %d 0 0 %d 0 0 0 0 0 0\n", user, idle);
        apr_file_close(f);
    }
}

/* 120 due rows, and the CPUs' ticks read from a file of the test's (100 900). */
static int gated(apr_pool_t *p, rig_t *r, int spare_cpu)
{
    static const char *const tokens[] = {"tok-a", "tok-b", "tok-c"};

    if (!rig(p, r, tokens, 3, 40)) {
        return 0;
    }
    r->h.spare_cpu = spare_cpu;
    r->h.cpu_stat = apr_pstrcat(p, fixture_params, ".cpu", (char *)NULL);
    cpu_write(p, r->h.cpu_stat, 100, 900);
    return 1;
}

/* A tick at the fake's clock (woken first: wake): the sizes of its rounds, as "50,50". */
static const char *tick(apr_pool_t *p, rig_t *r, int wake)
{
    const char *out = "";
    int i, from = r->f.nbatch;

    if (wake) {
        bank_push_sender_wake(r->s);
    }
    bank_push_sender_tick(r->s);
    for (i = from; i < r->f.nbatch; i++) {
        out = apr_psprintf(p, "%s%s%d", out, i > from ? "," : "", r->f.batch[i]);
    }
    return out;
}

/* The end of a test of gated's. */
static void ungated(apr_pool_t *p, rig_t *r)
{
    bank_push_sender_end(r->s);
    apr_file_remove(r->h.cpu_stat, p);
}

/* BankPushSpareCPU 0: full rounds whatever the webhook's commits; the tick goes on while
 * rounds come full, and counts the backlog after. */
static void test_full_rounds(apr_pool_t *p)
{
    apr_uint32_t empty = 0;
    rig_t r;

    if (!gated(p, &r, 0)) {
        return;
    }
    r.h.last_empty = &empty;
    rig_start(p, &r);
    metrics.notices_committing = BANK_PUSH_BUSY_NOTICES;
    CHECK_STR(tick(p, &r, 1), "100,20");
    CHECK(metrics.counter[BANK_M_PUSH_LEAN] == 0);
    CHECK(metrics.push_backlog == 0 && empty == (apr_uint32_t)apr_time_sec(r.f.clock));
    /* not woken, and the poll's second not passed: nothing, not even a look */
    CHECK_STR(tick(p, &r, 0), "");
    CHECK(r.f.connects == 5);
    r.f.clock += BANK_PUSH_POLL;
    CHECK_STR(tick(p, &r, 0), "");
    CHECK(r.f.connects == 7); /* a claim that found nothing, and the count */
    ungated(p, &r);
}

/* The webhook busy (BANK_PUSH_BUSY_NOTICES notices waiting for their commit): lean rounds,
 * BANK_PUSH_LEAN_GAP apart, one a tick; full rounds again once it is not. */
static void test_webhook_busy(apr_pool_t *p)
{
    rig_t r;

    if (!gated(p, &r, 10)) {
        return;
    }
    rig_start(p, &r);
    metrics.notices_committing = BANK_PUSH_BUSY_NOTICES;
    CHECK_STR(tick(p, &r, 1), "50");
    CHECK(metrics.counter[BANK_M_PUSH_LEAN] == 1 && metrics.push_backlog == 70);
    CHECK_STR(tick(p, &r, 1), ""); /* within the gap */
    r.f.clock += BANK_PUSH_LEAN_GAP;
    CHECK_STR(tick(p, &r, 0), "50"); /* woken by the last: more was due */
    CHECK(metrics.counter[BANK_M_PUSH_LEAN] == 2);
    metrics.notices_committing = BANK_PUSH_BUSY_NOTICES - 1;
    r.f.clock += BANK_PUSH_LEAN_GAP;
    CHECK_STR(tick(p, &r, 0), "20");
    CHECK(metrics.counter[BANK_M_PUSH_LEAN] == 2);
    ungated(p, &r);
}

/* The CPUs busier than BankPushSpareCPU allows since the last reading: a lean round; idle
 * enough at the next reading (BANK_PUSH_CPU_WINDOW later): full rounds. */
static void test_cpu_busy(apr_pool_t *p)
{
    rig_t r;

    if (!gated(p, &r, 10)) {
        return;
    }
    rig_start(p, &r); /* the first reading: 100 900 */
    cpu_write(p, r.h.cpu_stat, 1100, 905);
    CHECK_STR(tick(p, &r, 1), "100,20"); /* within the window: the first reading's room */
    ungated(p, &r);

    if (!gated(p, &r, 10)) {
        return;
    }
    rig_start(p, &r);
    cpu_write(p, r.h.cpu_stat, 1100, 905); /* 0.5% idle */
    r.f.clock += BANK_PUSH_CPU_WINDOW;
    CHECK_STR(tick(p, &r, 1), "50");
    CHECK(metrics.counter[BANK_M_PUSH_LEAN] == 1);
    cpu_write(p, r.h.cpu_stat, 1200, 1805); /* 90% idle */
    r.f.clock += BANK_PUSH_CPU_WINDOW;
    CHECK_STR(tick(p, &r, 0), "70");
    CHECK(metrics.counter[BANK_M_PUSH_LEAN] == 1);
    ungated(p, &r);
}

/* The clock set back an hour (a step of NTP's) after a tick: the sender does not wait for it
 * to catch up. Not woken, it polls at once and counts the backlog; the lean rounds' gap has
 * passed; the CPUs are read again. */
static void test_clock_back(apr_pool_t *p)
{
    apr_time_t later = T0 + apr_time_from_sec(7200), back = T0 + apr_time_from_sec(3600);
    bank_notice_put_t *put;
    apr_uint32_t empty = 0;
    rig_t r;

    if (!gated(p, &r, 0)) {
        return;
    }
    r.h.last_empty = &empty;
    r.f.clock = later;
    rig_start(p, &r);
    CHECK_STR(tick(p, &r, 1), "100,20");
    put = fixture_notice(r.db, "REF-late", "W1", RECEIVED);
    CHECK(bank_store_notice_put(r.db, put) == BANK_DB_OK && put->added);
    r.f.clock = back;
    CHECK_STR(tick(p, &r, 0), "3");
    CHECK(empty == (apr_uint32_t)apr_time_sec(back));
    ungated(p, &r);

    if (!gated(p, &r, 10)) { /* the webhook busy: lean rounds */
        return;
    }
    r.f.clock = later;
    rig_start(p, &r);
    metrics.notices_committing = BANK_PUSH_BUSY_NOTICES;
    CHECK_STR(tick(p, &r, 1), "50");
    r.f.clock = back;
    CHECK_STR(tick(p, &r, 1), "50");
    ungated(p, &r);

    if (!gated(p, &r, 10)) { /* the CPUs idle at the reading before the step, busy after */
        return;
    }
    r.f.clock = later;
    rig_start(p, &r);
    r.f.clock = back;
    cpu_write(p, r.h.cpu_stat, 1100, 905);
    CHECK_STR(tick(p, &r, 1), "50");
    ungated(p, &r);
}

/* FCM answers nothing usable five rounds in a row: the breaker opens and rounds claim
 * nothing while it is; GET /health's "behind" from the shared block. */
static void test_breaker(apr_pool_t *p)
{
    static const char *const tokens[] = {"tok-retry"};
    void *mem = apr_pcalloc(p, bank_push_sender_shared_size());
    bank_notice_put_t *put;
    int i;
    rig_t r;

    if (!rig(p, &r, tokens, 1, 1)) {
        return;
    }
    r.h.attempts = 100;
    bank_push_sender_share(&r.h, mem, T0);
    rig_start(p, &r);
    for (i = 0; i < BANK_IDP_BREAKER_FAILURES; i++) {
        CHECK(!unit_logged("BANK1809"));
        CHECK(bank_push_sender_round(r.s, p, 100) == 1);
        r.f.clock += apr_time_from_sec(BANK_PUSH_BACKOFF_MAX);
    }
    CHECK(unit_logged("BANK1809: push: FCM at http://127.0.0.1:9 failed 5 rounds in a row"));
    put = fixture_notice(r.db, "REF-late", "W1", RECEIVED);
    CHECK(bank_store_notice_put(r.db, put) == BANK_DB_OK && put->added);
    r.f.clock = r.f.clock - apr_time_from_sec(BANK_PUSH_BACKOFF_MAX) + apr_time_from_sec(1);
    i = r.f.connects;
    CHECK(bank_push_sender_round(r.s, p, 100) == 0 && r.f.connects == i && r.f.sends == 5);
    /* the backlog as last counted, and when the outbox was last seen empty (T0) */
    metrics.push_backlog = 2;
    CHECK(!bank_push_sender_behind(&r.h, T0 + apr_time_from_sec(BANK_PUSH_BACKLOG_AGE)));
    CHECK(bank_push_sender_behind(&r.h, T0 + apr_time_from_sec(BANK_PUSH_BACKLOG_AGE + 1)));
    metrics.push_backlog = 0;
    CHECK(!bank_push_sender_behind(&r.h, T0 + apr_time_from_sec(BANK_PUSH_BACKLOG_AGE + 1)));
    bank_push_sender_end(r.s);
}

static void run_tests(apr_pool_t *p)
{
    apr_pool_t *each;

    fixture_keys(p);
    apr_pool_create(&each, p);
    test_round_sent(each);
    test_verdicts(each);
    test_two_claimants(each);
    test_takeover(each);
    test_cut_off(each);
    test_stop_waits(each);
    test_settle_fails(each);
    test_claim_fails(each);
    test_full_rounds(each);
    test_webhook_busy(each);
    test_cpu_busy(each);
    test_clock_back(each);
    test_breaker(each);
    bank_metrics_share(NULL);
    apr_pool_destroy(each);
}
