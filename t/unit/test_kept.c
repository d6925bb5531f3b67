/* The per-process token cache (bank_kept.c): hits within the caller's max age and
 * never past the cache's bound, scopes apart, invalidation in every scope and of a read in
 * flight, distrust until trusted again, the bound on entries, threads at once; and a real
 * token row (SQLite, and PostgreSQL with BANK_TEST_PG_PARAMS) kept, then revoked. */
#include "unit.h"

#include <apr_atomic.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>
#include "bank_kept.h"
#include "bank_time.h"
#include "bank_uuid.h"
#include "db_fixture.h"

static const int scope_a = 1, scope_b = 2;

static bank_token_row_t row_of(const char *customer)
{
    bank_token_row_t r = {customer, "hash-of-secret", "[\"*\"]", NULL, NULL};
    return r;
}

static bank_kept_t *cache(apr_pool_t *p, int max_entries, int max_age_sec)
{
    const char *err = NULL;
    bank_kept_t *c = bank_kept_create(p, max_entries, apr_time_from_sec(max_age_sec), &err);

    CHECK(c != NULL);
    return c;
}

static void test_hits_and_age(apr_pool_t *p)
{
    bank_kept_t *c = cache(p, 100, 10);
    bank_token_row_t row = row_of("cust-1"), got;
    apr_time_t now = apr_time_now();

    if (!c) {
        return;
    }
    CHECK(!bank_kept_get(c, p, &scope_a, "t1", apr_time_from_sec(5), &got));
    CHECK(!bank_kept_holds(c, p, &scope_a, "t1", apr_time_from_sec(5)));
    bank_kept_put(c, &scope_a, "t1", &row, now, bank_kept_epoch(c));
    CHECK(bank_kept_holds(c, p, &scope_a, "t1", apr_time_from_sec(5)));
    CHECK(bank_kept_get(c, p, &scope_a, "t1", apr_time_from_sec(5), &got));
    CHECK_STR(got.customer_id, "cust-1");
    CHECK_STR(got.hash, "hash-of-secret");
    /* another scope (another database) does not see it */
    CHECK(!bank_kept_get(c, p, &scope_b, "t1", apr_time_from_sec(5), &got));
    CHECK(!bank_kept_holds(c, p, &scope_b, "t1", apr_time_from_sec(5)));
    /* a max age of 0 trusts nothing */
    CHECK(!bank_kept_get(c, p, &scope_a, "t1", 0, &got));
    CHECK(!bank_kept_holds(c, p, &scope_a, "t1", 0));

    /* read 3 s ago: a hit for a 5 s max age, a miss for 2 s */
    bank_kept_put(c, &scope_a, "t2", &row, now - apr_time_from_sec(3), bank_kept_epoch(c));
    CHECK(bank_kept_get(c, p, &scope_a, "t2", apr_time_from_sec(5), &got));
    CHECK(!bank_kept_get(c, p, &scope_a, "t2", apr_time_from_sec(2), &got));
    CHECK(!bank_kept_holds(c, p, &scope_a, "t2", apr_time_from_sec(2)));
    /* read 11 s ago: past the cache's 10 s bound, whatever the caller allows */
    bank_kept_put(c, &scope_a, "t3", &row, now - apr_time_from_sec(11), bank_kept_epoch(c));
    CHECK(!bank_kept_get(c, p, &scope_a, "t3", apr_time_from_sec(60), &got));

    /* a recorded use is seen by the next hit */
    bank_kept_touched(c, &scope_a, "t1", "2026-01-01T00:00:00Z");
    CHECK(bank_kept_get(c, p, &scope_a, "t1", apr_time_from_sec(5), &got));
    CHECK_STR(got.last_used_at, "2026-01-01T00:00:00Z");
}

static void test_invalidate(apr_pool_t *p)
{
    bank_kept_t *c = cache(p, 100, 60);
    bank_token_row_t row = row_of("cust-2"), got;
    apr_uint64_t epoch;

    if (!c) {
        return;
    }
    bank_kept_put(c, &scope_a, "gone", &row, apr_time_now(), bank_kept_epoch(c));
    bank_kept_put(c, &scope_b, "gone", &row, apr_time_now(), bank_kept_epoch(c));
    bank_kept_put(c, &scope_a, "kept", &row, apr_time_now(), bank_kept_epoch(c));
    CHECK(bank_kept_count(c) == 3);
    bank_kept_invalidate(c, "gone");
    CHECK(!bank_kept_holds(c, p, &scope_a, "gone", apr_time_from_sec(60)));
    CHECK(!bank_kept_get(c, p, &scope_a, "gone", apr_time_from_sec(60), &got));
    CHECK(!bank_kept_get(c, p, &scope_b, "gone", apr_time_from_sec(60), &got));
    CHECK(bank_kept_get(c, p, &scope_a, "kept", apr_time_from_sec(60), &got));
    CHECK(bank_kept_count(c) == 1);

    /* a row read before an invalidation (of any token) is not kept after it */
    epoch = bank_kept_epoch(c);
    bank_kept_invalidate(c, "other");
    bank_kept_put(c, &scope_a, "late", &row, apr_time_now(), epoch);
    CHECK(!bank_kept_get(c, p, &scope_a, "late", apr_time_from_sec(60), &got));
    bank_kept_put(c, &scope_a, "late", &row, apr_time_now(), bank_kept_epoch(c));
    CHECK(bank_kept_get(c, p, &scope_a, "late", apr_time_from_sec(60), &got));
}

static void test_distrust(apr_pool_t *p)
{
    bank_kept_t *c = cache(p, 100, 60);
    bank_token_row_t row = row_of("cust-3"), got;
    apr_uint64_t epoch;

    if (!c) {
        return;
    }
    bank_kept_put(c, &scope_a, "t", &row, apr_time_now(), bank_kept_epoch(c));
    epoch = bank_kept_epoch(c);
    bank_kept_distrust(c);
    CHECK(bank_kept_distrusted(c));
    CHECK(!bank_kept_holds(c, p, &scope_a, "t", apr_time_from_sec(60)));
    CHECK(!bank_kept_get(c, p, &scope_a, "t", apr_time_from_sec(60), &got));
    /* nothing is kept while distrusted */
    bank_kept_put(c, &scope_a, "t", &row, apr_time_now(), bank_kept_epoch(c));
    CHECK(bank_kept_count(c) == 0);
    bank_kept_trust(c);
    CHECK(!bank_kept_distrusted(c));
    /* what was kept before is gone for good; a read from before the distrust is not kept */
    CHECK(!bank_kept_get(c, p, &scope_a, "t", apr_time_from_sec(60), &got));
    bank_kept_put(c, &scope_a, "t", &row, apr_time_now(), epoch);
    CHECK(!bank_kept_get(c, p, &scope_a, "t", apr_time_from_sec(60), &got));
    bank_kept_put(c, &scope_a, "t", &row, apr_time_now(), bank_kept_epoch(c));
    CHECK(bank_kept_get(c, p, &scope_a, "t", apr_time_from_sec(60), &got));
}

static void test_bounded(apr_pool_t *p)
{
    bank_kept_t *c = cache(p, 3, 60);
    bank_token_row_t row = row_of("cust-4"), got;
    int i;

    if (!c) {
        return;
    }
    for (i = 0; i < 3; i++) {
        bank_kept_put(c, &scope_a, apr_itoa(p, i), &row, apr_time_now(), bank_kept_epoch(c));
    }
    CHECK(bank_kept_count(c) == 3);
    /* full: everything is dropped and the new one kept */
    bank_kept_put(c, &scope_a, "3", &row, apr_time_now(), bank_kept_epoch(c));
    CHECK(bank_kept_count(c) == 1);
    CHECK(bank_kept_get(c, p, &scope_a, "3", apr_time_from_sec(60), &got));
    CHECK(!bank_kept_get(c, p, &scope_a, "0", apr_time_from_sec(60), &got));
    /* a key put again leaves the old bytes in the pool: puts count, not entries, so one
     * token put over and over is dropped with the rest after max_entries puts */
    bank_kept_put(c, &scope_a, "4", &row, apr_time_now(), bank_kept_epoch(c));
    bank_kept_put(c, &scope_a, "4", &row, apr_time_now(), bank_kept_epoch(c));
    CHECK(bank_kept_count(c) == 2);
    bank_kept_put(c, &scope_a, "4", &row, apr_time_now(), bank_kept_epoch(c));
    CHECK(bank_kept_count(c) == 1);
    CHECK(!bank_kept_get(c, p, &scope_a, "3", apr_time_from_sec(60), &got));
    CHECK(bank_kept_get(c, p, &scope_a, "4", apr_time_from_sec(60), &got));
}

/* ---- threads at once ---- */
#define THREADS 4
#define ROUNDS 3000

typedef struct {
    bank_kept_t *c;
    int n;
    int torn; /* a hit whose row was not its token's */
    int hits;
    volatile apr_uint32_t *go;
} worker_t;

static void *APR_THREAD_FUNC worker(apr_thread_t *t, void *data)
{
    worker_t *w = data;
    apr_pool_t *p;
    int i;

    apr_pool_create(&p, NULL);
    while (!apr_atomic_read32(w->go)) { /* all start together, so that the rounds overlap */
        apr_thread_yield();
    }
    for (i = 0; i < ROUNDS; i++) {
        const char *id = apr_itoa(p, (i * 7 + w->n) % 50);
        bank_token_row_t row = row_of(apr_pstrcat(p, "cust-", id, (char *)NULL)), got;
        apr_uint64_t epoch = bank_kept_epoch(w->c);

        if (bank_kept_get(w->c, p, &scope_a, id, apr_time_from_sec(60), &got)) {
            w->hits++;
            w->torn += strcmp(got.customer_id, row.customer_id) != 0;
        }
        bank_kept_put(w->c, &scope_a, id, &row, apr_time_now(), epoch);
        /* read back at once: a hit unless another thread's invalidation or drop came between,
         * so hits never depend on how the scheduler interleaves the threads */
        if (bank_kept_get(w->c, p, &scope_a, id, apr_time_from_sec(60), &got)) {
            w->hits++;
            w->torn += strcmp(got.customer_id, row.customer_id) != 0;
        }
        if (i % 97 == w->n) {
            bank_kept_invalidate(w->c, id);
        }
        if (i % 500 == 499 && w->n == 0) {
            bank_kept_distrust(w->c);
            bank_kept_trust(w->c);
        }
        if (i % 100 == 0) {
            apr_pool_clear(p);
        }
    }
    (void)t; /* returns rather than apr_thread_exit: pthread_exit's unwinding upsets ASan */
    apr_pool_destroy(p);
    return NULL;
}

static void test_threads(apr_pool_t *p)
{
    bank_kept_t *c = cache(p, 40, 60); /* fewer slots than ids: drops under way too */
    apr_thread_t *t[THREADS];
    worker_t w[THREADS];
    volatile apr_uint32_t go = 0;
    int i, hits = 0, torn = 0;

    if (!c) {
        return;
    }
    for (i = 0; i < THREADS; i++) {
        w[i].c = c;
        w[i].n = i;
        w[i].torn = w[i].hits = 0;
        w[i].go = &go;
        CHECK(apr_thread_create(&t[i], NULL, worker, &w[i], p) == APR_SUCCESS);
    }
    apr_atomic_set32(&go, 1);
    for (i = 0; i < THREADS; i++) {
        apr_status_t rv;
        apr_thread_join(&rv, t[i]);
        hits += w[i].hits;
        torn += w[i].torn;
    }
    CHECK(hits > 0);
    CHECK(torn == 0);
    CHECK(bank_kept_count(c) <= 40);
}

/* ---- a real token row ---- */
static void test_with_db(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_kept_t *c = cache(p, 100, 60);
    bank_customer_t cust;
    bank_token_row_t row, got;
    apr_uint64_t epoch;
    const char *id = NULL;
    int count = 0;

    if (!c) {
        return;
    }
    fixture_customer(db, "Ada", "Obi", NULL, &cust);
    CHECK(bank_store_token_insert(db, cust.id, "abc123", "[\"*\"]",
                                  bank_time_iso(p, apr_time_now()), NULL, &id) == BANK_DB_OK);
    if (!id) {
        return;
    }
    epoch = bank_kept_epoch(c);
    CHECK(bank_store_token_find(db, id, &row) == BANK_DB_OK);
    bank_kept_put(c, db, id, &row, apr_time_now(), epoch);
    CHECK(bank_kept_get(c, p, db, id, apr_time_from_sec(5), &got));
    CHECK_STR(got.customer_id, cust.id);
    CHECK_STR(got.hash, "abc123");
    /* revoked: gone from the database and, once told, from the cache */
    CHECK(bank_store_token_delete(db, id, &count) == BANK_DB_OK && count == 1);
    CHECK(bank_kept_get(c, p, db, id, apr_time_from_sec(5), &got));
    bank_kept_invalidate(c, id);
    CHECK(!bank_kept_get(c, p, db, id, apr_time_from_sec(5), &got));
    CHECK(bank_store_token_find(db, id, &row) == BANK_DB_NOT_FOUND);
}

static void run_tests(apr_pool_t *p)
{
    test_hits_and_age(p);
    test_invalidate(p);
    test_distrust(p);
    test_bounded(p);
    test_threads(p);
    fixture_each(p, test_with_db);
}
