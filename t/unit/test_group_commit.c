/* The webhook's group commit (bank_group_commit.c) with threads against a real database
 * (SQLite, and PostgreSQL with BANK_TEST_PG_PARAMS): notices queued together form one batch
 * and one transaction; a repeat within a batch is written once; a batch the database refuses
 * falls back to one notice per transaction, so only the refused one fails; without a
 * connection every notice fails as worth retrying; the notices queued behind a batch that
 * failed as worth retrying fail with it, without another commit; and no caller returns stored
 * before its notice is committed (another connection sees it). */
#include <string.h>
#include <unistd.h>
#include <apr_thread_proc.h>
#include <apr_thread_mutex.h>
#include "unit.h"
#include "db_fixture.h"
#include "bank_group_commit.h"
#include "bank_notice.h"

#define MAX_THREADS 8

typedef struct {
    apr_thread_mutex_t *lock;
    bank_group_t *g;
    int expect; /* the leader's turn waits until this many are queued (0: no wait) */
    int no_db;  /* connect gives none */
    int connects, turns, reports, transient;
    int hold_failed;  /* a failure is reported worth retrying once this many are queued behind */
    int failing;      /* a failure is being reported */
    int retry_all;    /* every failure is reported worth retrying */
    int hold_connect; /* connect waits while this is set (the test clears it) */
    int slow;         /* a failure is reported only after BANK_GROUP_SLOW_FAILURE */
} host_t;

typedef struct {
    host_t *h;
    apr_pool_t *pool;
    const char *ref, *status;
    bank_group_item_t q;
    int behind;   /* queues only while a failure is being reported */
    long visible; /* rows of its reference another connection saw when it returned (-1: none) */
} worker_t;

static void count(host_t *h, int *n)
{
    apr_thread_mutex_lock(h->lock);
    (*n)++;
    apr_thread_mutex_unlock(h->lock);
}

static int failing(host_t *h)
{
    int n;

    apr_thread_mutex_lock(h->lock);
    n = h->failing;
    apr_thread_mutex_unlock(h->lock);
    return n;
}

static int held(host_t *h)
{
    int n;

    apr_thread_mutex_lock(h->lock);
    n = h->hold_connect;
    apr_thread_mutex_unlock(h->lock);
    return n;
}

static bank_db_t *h_connect(void *baton)
{
    worker_t *w = baton;
    const char *err = NULL;
    bank_db_t *db;
    int i;

    count(w->h, &w->h->connects);
    for (i = 0; i < 400 && held(w->h); i++) { /* 2 s at most */
        usleep(5000);
    }
    if (w->h->no_db) {
        return NULL;
    }
    db = bank_db_open(w->pool, fixture_driver, fixture_params, &err);
    return db && !bank_db_prepare_all(db) ? db : NULL;
}

static int h_turn(void *baton)
{
    worker_t *w = baton;
    int i;

    count(w->h, &w->h->turns);
    for (i = 0; i < 500 && bank_group_queued(w->h->g) < w->h->expect; i++) {
        usleep(10000);
    }
    return 1;
}

static void h_give(void *baton)
{
    (void)baton;
}

static int h_failed(void *baton, bank_db_t *db, bank_db_rc rc, const char *what)
{
    worker_t *w = baton;
    int transient = bank_db_transient(db, rc);

    (void)what;
    count(w->h, &w->h->reports);
    if (w->h->slow) {
        apr_sleep(BANK_GROUP_SLOW_FAILURE + apr_time_from_msec(20));
    }
    if (w->h->hold_failed) {
        int i;
        count(w->h, &w->h->failing);
        for (i = 0; i < 500 && bank_group_queued(w->h->g) < w->h->hold_failed; i++) {
            usleep(10000);
        }
        return 1;
    }
    if (w->h->retry_all) {
        return 1;
    }
    if (transient) {
        count(w->h, &w->h->transient);
    }
    return transient;
}

static const bank_group_host host = {h_connect, h_turn, h_give, h_failed};

static void *APR_THREAD_FUNC worker(apr_thread_t *t, void *data)
{
    worker_t *w = data;
    bank_notice_t *n = apr_pcalloc(w->pool, sizeof(*n));
    const char *err = NULL;
    bank_db_t *other;

    (void)t; /* returns rather than apr_thread_exit: pthread_exit's unwinding upsets ASan */
    n->service = "payments";
    n->type = "fund_transfer";
    n->status = "received";
    n->amount = "5000";
    n->status_code = w->status;
    n->transaction_reference = w->ref;
    w->q.put.n = n;
    w->q.put.id = bank_uuid4(w->pool);
    w->q.put.partner = "unit";
    w->q.put.raw = "{}";
    w->q.put.now = "2026-11-23T10:00:00.000Z";
    w->visible = -1;
    if (bank_group_item_init(&w->q, w->pool) != APR_SUCCESS) {
        return NULL;
    }
    while (w->behind && !failing(w->h)) {
        usleep(5000);
    }
    bank_group_commit(w->h->g, &w->q, &host, w, w->pool);
    /* what another connection sees the moment the caller would answer */
    other = bank_db_open(w->pool, fixture_driver, fixture_params, &err);
    w->visible = other ? fixture_notices(other, w->ref) : -1;
    return NULL;
}

/* n threads, each queueing one notice (refs[i], status code T100); those from behind on
 * queue only while a failure is being reported (n: none). */
static void run_behind(apr_pool_t *p, host_t *h, worker_t *w, int n, const char *const *refs,
                       int behind)
{
    apr_thread_t *t[MAX_THREADS];
    const char *err = NULL;
    int i;

    if (!h->g) { /* a group of the test's own, or a new one */
        apr_thread_mutex_create(&h->lock, APR_THREAD_MUTEX_DEFAULT, p);
        h->g = bank_group_create(p, 64, &err);
    }
    CHECK(h->g != NULL);
    for (i = 0; i < n; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].h = h;
        apr_pool_create(&w[i].pool, p);
        w[i].ref = refs[i];
        w[i].status = "T100";
        w[i].behind = i >= behind;
        CHECK(apr_thread_create(&t[i], NULL, worker, &w[i], p) == APR_SUCCESS);
    }
    for (i = 0; i < n; i++) {
        apr_status_t rv;
        apr_thread_join(&rv, t[i]);
    }
}

static void run(apr_pool_t *p, host_t *h, worker_t *w, int n, const char *const *refs)
{
    run_behind(p, h, w, n, refs, n);
}

static int seq;

static const char *ref(apr_pool_t *p, const char *kind, int i)
{
    return apr_psprintf(p, "%s-%d-%d-%d", kind, (int)getpid(), seq, i);
}

/* Eight at once, two with the same key: one batch, one connection, one turn; the repeat
 * written once; each caller sees its notice stored when it returns. */
static void test_batch(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *refs[8];
    worker_t w[8];
    host_t h = {0};
    int i, added = 0;

    seq++;
    for (i = 0; i < 8; i++) {
        refs[i] = ref(p, "GROUP", i < 7 ? i : 0);
    }
    h.expect = 8;
    unit_log_clear();
    run(p, &h, w, 8, refs);
    CHECK(h.connects == 1 && h.turns == 1 && h.reports == 0);
    CHECK(unit_logged("BANK0708: 8 payment notice(s) committed in one transaction"));
    for (i = 0; i < 8; i++) {
        CHECK(w[i].q.rc == BANK_DB_OK && !w[i].q.retry);
        CHECK(w[i].visible == 1);
        added += w[i].q.put.added;
    }
    CHECK(added == 7);
}

/* on: the database refuses every notice whose reference starts REFUSED- (a trigger); off:
 * no more. */
static void refuse(bank_db_t *db, int on)
{
    int pg = bank_db_is_pgsql(db);

    if (on) {
        CHECK(bank_db_query(db,
                            pg ? "CREATE OR REPLACE FUNCTION unit_refuse_gc() RETURNS trigger "
                                 "LANGUAGE plpgsql AS $$ BEGIN IF NEW.transaction_reference "
                                 "LIKE 'REFUSED-%' THEN RAISE EXCEPTION 'refused'; END IF; "
                                 "RETURN NEW; END $$; CREATE TRIGGER unit_refuse_gc BEFORE INSERT "
                                 "ON payment_notices FOR EACH ROW EXECUTE FUNCTION "
                                 "unit_refuse_gc()"
                               : "CREATE TRIGGER unit_refuse_gc BEFORE INSERT ON payment_notices "
                                 "WHEN NEW.transaction_reference LIKE 'REFUSED-%' "
                                 "BEGIN SELECT RAISE(ABORT, 'refused'); END") == 0);
    } else {
        CHECK(bank_db_query(db, pg ? "DROP TRIGGER unit_refuse_gc ON payment_notices"
                                   : "DROP TRIGGER unit_refuse_gc") == 0);
        CHECK(pg || bank_db_prepare_all(db) == NULL);
    }
}

/* A new run's references: refs[refused] one the database refuses (refuse on), the others
 * kind-<i>. */
static void refused_batch(bank_db_t *db, const char **refs, int n, int refused, const char *kind)
{
    int i;

    seq++;
    refuse(db, 1);
    for (i = 0; i < n; i++) {
        refs[i] = ref(bank_db_pool(db), i == refused ? "REFUSED" : kind, i);
    }
}

/* One notice the database refuses: the batch fails whole, then each notice is tried alone;
 * only the refused one fails (not worth retrying) and the others are stored. */
static void test_fallback(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    int i;
    const char *refs[6];
    worker_t w[6];
    host_t h = {0};

    refused_batch(db, refs, 6, 3, "FALLBACK");
    h.expect = 6;
    run(p, &h, w, 6, refs);
    CHECK(h.connects == 1);
    /* the batch, then the refused notice alone: both reported, neither worth retrying */
    CHECK(h.reports == 2 && h.transient == 0);
    for (i = 0; i < 6; i++) {
        if (i == 3) {
            CHECK(w[i].q.rc == BANK_DB_ERROR && !w[i].q.retry && !w[i].q.put.added);
            CHECK(w[i].visible == 0);
        } else {
            CHECK(w[i].q.rc == BANK_DB_OK && w[i].q.put.added);
            CHECK(w[i].visible == 1);
        }
    }
    refuse(db, 0);
}

/* No connection for the leader: every notice of its batch fails, worth retrying, none stored. */
static void test_no_connection(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *refs[3];
    worker_t w[3];
    host_t h = {0};
    int i;

    seq++;
    for (i = 0; i < 3; i++) {
        refs[i] = ref(p, "NODB", i);
    }
    h.expect = 3;
    h.no_db = 1;
    run(p, &h, w, 3, refs);
    for (i = 0; i < 3; i++) {
        CHECK(w[i].q.rc != BANK_DB_OK && w[i].q.retry && w[i].visible == 0);
    }
}

/* A batch that fails as worth retrying (the host says so, as for a commit that waited past
 * the bound for a standby) while three more queue behind it: they fail with it, worth
 * retrying, at once, with no other connection or commit; none stored. */
static void test_behind_failure(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    int i;
    const char *refs[4];
    worker_t w[4];
    host_t h = {0};

    refused_batch(db, refs, 4, 0, "BEHIND");
    h.hold_failed = 3;
    h.slow = 1;
    run_behind(p, &h, w, 4, refs, 1);
    CHECK(h.connects == 1 && h.turns == 1 && h.reports == 1);
    for (i = 0; i < 4; i++) {
        CHECK(w[i].q.rc != BANK_DB_OK && w[i].q.retry && !w[i].q.put.added);
        CHECK(w[i].visible == 0);
    }
    refuse(db, 0);
}

/* One worker on a thread of its own, queueing ref (status code T100). */
static apr_thread_t *spawn(apr_pool_t *p, host_t *h, worker_t *w, const char *ref)
{
    apr_thread_t *t = NULL;

    memset(w, 0, sizeof(*w));
    w->h = h;
    apr_pool_create(&w->pool, p);
    w->ref = ref;
    w->status = "T100";
    CHECK(apr_thread_create(&t, NULL, worker, w, p) == APR_SUCCESS);
    return t;
}

/* Until the leader of the next commit is connecting (held there). */
static void wait_connects(host_t *h, int n)
{
    int i;

    for (i = 0; i < 500 && h->connects < n; i++) {
        usleep(10000);
    }
}

static void release_connect(host_t *h)
{
    apr_thread_mutex_lock(h->lock);
    h->hold_connect = 0;
    apr_thread_mutex_unlock(h->lock);
}

/* A batch refused at once (a read-only file) leaves nothing to fail fast on: once the database
 * takes writes again, a notice that arrives while the next commit runs waits for it and then
 * commits, rather than failing for a refusal the database is past. */
static void test_after_quick_failure(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *err = NULL;
    worker_t w[3];
    host_t h = {0};
    apr_thread_t *t1, *t2;
    apr_status_t rv;
    int i;

    seq++;
    refuse(db, 1);
    apr_thread_mutex_create(&h.lock, APR_THREAD_MUTEX_DEFAULT, p);
    h.g = bank_group_create(p, 64, &err);
    h.retry_all = 1;
    {
        const char *quick = ref(p, "REFUSED", 0);
        run(p, &h, &w[0], 1, &quick); /* refused at once, worth retrying */
    }
    CHECK(w[0].q.rc != BANK_DB_OK && w[0].q.retry && h.connects == 1);

    refuse(db, 0);
    h.hold_connect = 1;
    t1 = spawn(p, &h, &w[1], ref(p, "PAST", 1));
    wait_connects(&h, 2);
    t2 = spawn(p, &h, &w[2], ref(p, "PAST", 2)); /* arrives while it runs */
    for (i = 0; i < 300 && bank_group_queued(h.g) < 2; i++) {
        usleep(10000);
    }
    CHECK(bank_group_queued(h.g) == 2); /* both queued (the leader takes them once connected) */
    release_connect(&h);
    apr_thread_join(&rv, t1);
    apr_thread_join(&rv, t2);
    for (i = 1; i < 3; i++) {
        CHECK(w[i].q.rc == BANK_DB_OK && w[i].q.put.added && w[i].visible == 1);
    }
    CHECK(h.reports == 1);
}

/* After a batch failed as worth retrying after a long wait, the next one tries the database
 * (its leader waits here for its connection) and a notice that arrives meanwhile fails at once,
 * worth retrying, with no connection of its own; once a batch commits again, notices queue as
 * before. */
static void test_while_failing(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *err = NULL;
    const char *refs[4];
    worker_t w[4];
    host_t h = {0};
    apr_thread_t *t;
    apr_status_t rv;
    apr_time_t took;
    int i;

    seq++;
    refuse(db, 1);
    for (i = 0; i < 4; i++) {
        refs[i] = ref(p, i < 2 ? "REFUSED" : "LATER", i);
    }
    apr_thread_mutex_create(&h.lock, APR_THREAD_MUTEX_DEFAULT, p);
    h.g = bank_group_create(p, 64, &err);
    h.retry_all = 1;
    h.slow = 1;
    run(p, &h, &w[0], 1, &refs[0]); /* fails, worth retrying */
    CHECK(w[0].q.rc != BANK_DB_OK && w[0].q.retry && h.connects == 1);

    h.hold_connect = 1;
    t = spawn(p, &h, &w[1], refs[1]);
    wait_connects(&h, 2); /* its leader is connecting */
    took = apr_time_now();
    run(p, &h, &w[2], 1, &refs[2]); /* arrives while it runs */
    took = apr_time_now() - took;
    CHECK(w[2].q.rc != BANK_DB_OK && w[2].q.retry && w[2].visible == 0);
    CHECK(took < apr_time_from_msec(1000)); /* not after the running one (held 2 s) */
    CHECK(h.connects == 2);                 /* no commit of its own */
    release_connect(&h);
    apr_thread_join(&rv, t);
    CHECK(w[1].q.rc != BANK_DB_OK && w[1].q.retry);

    refuse(db, 0);
    run(p, &h, &w[3], 1, &refs[3]); /* the database takes it: stored */
    CHECK(w[3].q.rc == BANK_DB_OK && w[3].q.put.added && w[3].visible == 1);
    CHECK(h.connects == 3);
}

/* Without a queue (g NULL) a notice commits alone. */
static void test_alone(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    host_t h = {0};
    worker_t w;

    seq++;
    memset(&w, 0, sizeof(w));
    w.h = &h;
    w.pool = p;
    w.ref = ref(p, "ALONE", 0);
    w.status = "T100";
    apr_thread_mutex_create(&h.lock, APR_THREAD_MUTEX_DEFAULT, p);
    worker(NULL, &w);
    CHECK(w.q.rc == BANK_DB_OK && w.q.put.added && w.visible == 1);
    CHECK(h.connects == 1 && h.turns == 0);
}

static void each(bank_db_t *db)
{
    test_batch(db);
    test_fallback(db);
    test_no_connection(db);
    test_behind_failure(db);
    test_while_failing(db);
    test_after_quick_failure(db);
    test_alone(db);
}

static void run_tests(apr_pool_t *p)
{
    fixture_each(p, each);
}
