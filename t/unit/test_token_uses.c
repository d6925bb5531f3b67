/* Token uses waiting to be recorded (bank_token_uses.c): one entry per token holding its
 * latest use, the bound, takes in ascending id order that empty the set, threads noting at
 * once; and the uses written to real token rows (SQLite, and PostgreSQL with
 * BANK_TEST_PG_PARAMS) in statements of 1 to 64 rows, a later use never overwritten by an
 * earlier one. */
#include "unit.h"

#include <apr_strings.h>
#include <apr_thread_proc.h>
#include "bank_token_uses.h"
#include "bank_time.h"
#include "db_fixture.h"

static bank_token_uses_t *uses(apr_pool_t *p, int max)
{
    const char *err = NULL;
    bank_token_uses_t *u = bank_token_uses_create(p, max, &err);

    CHECK(u != NULL && err == NULL);
    return u;
}

static void test_note_and_take(apr_pool_t *p)
{
    bank_token_uses_t *u = uses(p, 3);
    const char *ids[8], *times[8];
    int n;

    if (!u) {
        return;
    }
    CHECK(bank_token_uses_pending(u) == 0);
    CHECK(bank_token_uses_note(u, "12", "2026-11-28T10:00:01.000Z"));
    CHECK(bank_token_uses_note(u, "9", "2026-11-28T10:00:02.000Z"));
    /* the same token again: one entry, the later time kept, an earlier one ignored */
    CHECK(bank_token_uses_note(u, "12", "2026-11-28T10:00:03.000Z"));
    CHECK(bank_token_uses_note(u, "12", "2026-11-28T10:00:00.000Z"));
    CHECK(bank_token_uses_pending(u) == 2);
    CHECK(bank_token_uses_note(u, "100", "2026-11-28T10:00:04.000Z"));
    /* full: a fourth token is refused (its request writes it itself); a noted one still moves */
    CHECK(!bank_token_uses_note(u, "7", "2026-11-28T10:00:05.000Z"));
    CHECK(bank_token_uses_note(u, "9", "2026-11-28T10:00:06.000Z"));
    CHECK(bank_token_uses_pending(u) == 3);

    /* taken in ascending order of the number, not of the text ("100" after "12") */
    n = bank_token_uses_take(u, p, 2, ids, times);
    CHECK(n == 2);
    CHECK(bank_token_uses_pending(u) == 1);
    n += bank_token_uses_take(u, p, 8, ids + 2, times + 2);
    CHECK(n == 3);
    if (n == 3) {
        /* each take is sorted by itself; together they hold every token once */
        int seen9 = 0, seen12 = 0, seen100 = 0, i;
        for (i = 0; i < 3; i++) {
            seen9 += strcmp(ids[i], "9") == 0 && strcmp(times[i], "2026-11-28T10:00:06.000Z") == 0;
            seen12 +=
                strcmp(ids[i], "12") == 0 && strcmp(times[i], "2026-11-28T10:00:03.000Z") == 0;
            seen100 += strcmp(ids[i], "100") == 0;
        }
        CHECK(seen9 == 1 && seen12 == 1 && seen100 == 1);
        if (strcmp(ids[0], "9") == 0 || strcmp(ids[0], "12") == 0) {
            CHECK(strcmp(ids[1], ids[0]) != 0);
        }
    }
    CHECK(bank_token_uses_pending(u) == 0);
    /* emptied: room again */
    CHECK(bank_token_uses_note(u, "7", "2026-11-28T10:00:07.000Z"));
    CHECK(bank_token_uses_take(u, p, 8, ids, times) == 1);
    CHECK_STR(ids[0], "7");
    CHECK(bank_token_uses_take(u, p, 8, ids, times) == 0);
}

static void test_order(apr_pool_t *p)
{
    bank_token_uses_t *u = uses(p, 100);
    static const char *const noted[] = {"1000", "2", "30", "11", "999", "1", "20"};
    static const char *const sorted[] = {"1", "2", "11", "20", "30", "999", "1000"};
    const char *ids[16], *times[16];
    size_t i;

    if (!u) {
        return;
    }
    for (i = 0; i < sizeof(noted) / sizeof(noted[0]); i++) {
        CHECK(bank_token_uses_note(u, noted[i], "2026-11-28T10:00:00.000Z"));
    }
    CHECK(bank_token_uses_take(u, p, 16, ids, times) == 7);
    for (i = 0; i < sizeof(sorted) / sizeof(sorted[0]); i++) {
        CHECK_STR(ids[i], sorted[i]);
    }
}

typedef struct {
    bank_token_uses_t *u;
    int base;
} noter_t;

static void *APR_THREAD_FUNC noter(apr_thread_t *t, void *data)
{
    noter_t *n = data;
    char id[32];
    int i;

    for (i = 0; i < 2000; i++) {
        snprintf(id, sizeof(id), "%d", n->base + i % 500);
        bank_token_uses_note(n->u, id, "2026-11-28T10:00:00.000Z");
    }
    (void)t; /* returns rather than apr_thread_exit: pthread_exit's unwinding upsets ASan */
    return NULL;
}

/* Four threads noting 500 tokens each, 4 times over: 2,000 entries, none lost or doubled. */
static void test_threads(apr_pool_t *p)
{
    bank_token_uses_t *u = uses(p, 100000);
    apr_thread_t *t[4];
    noter_t n[4];
    apr_status_t rv;
    const char **ids = apr_palloc(p, sizeof(*ids) * 4000), **times;
    int i;

    if (!u) {
        return;
    }
    times = apr_palloc(p, sizeof(*times) * 4000);
    for (i = 0; i < 4; i++) {
        n[i].u = u;
        n[i].base = 1 + i * 1000;
        CHECK(apr_thread_create(&t[i], NULL, noter, &n[i], p) == APR_SUCCESS);
    }
    for (i = 0; i < 4; i++) {
        apr_thread_join(&rv, t[i]);
    }
    CHECK(bank_token_uses_pending(u) == 2000);
    CHECK(bank_token_uses_take(u, p, 4000, ids, times) == 2000);
    CHECK_STR(ids[0], "1");
    CHECK_STR(ids[1999], "3500");
}

static const char *token(bank_db_t *db, const char *customer)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *id = NULL;
    static int seq;
    bank_db_rc rc = bank_store_token_insert(
        db, customer, apr_psprintf(p, "hash-%" APR_TIME_T_FMT "-%d", apr_time_now(), ++seq),
        "[\"*\"]", bank_time_iso(p, apr_time_now()), NULL, &id);

    CHECK(rc == BANK_DB_OK);
    if (rc != BANK_DB_OK) {
        fprintf(stderr, "token insert: %s\n", bank_db_error(db));
    }
    return id ? id : "0";
}

/* Token id's last_used_at as an instant (each driver prints it its own way), 0 if none. */
static apr_time_t used(bank_db_t *db, const char *id)
{
    bank_token_row_t row = {0};
    apr_time_t t = 0;

    CHECK(bank_store_token_find(db, id, &row) == BANK_DB_OK);
    CHECK(row.last_used_at && bank_time_parse(row.last_used_at, &t) == 0);
    return t;
}

/* Written: 70 tokens (a statement of 64 rows, then one of 8 for the other 6),
 * each with its own time, and a later use kept over an earlier one written after it. */
static void test_with_db(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_token_uses_t *u = uses(p, 1000);
    bank_customer_t cust;
    const char *ids[70], *at[70];
    /* whole milliseconds: what the database keeps */
    apr_time_t when[70], base = apr_time_now() / 1000 * 1000 - apr_time_from_sec(3600);
    int i, written = -1;

    if (!u) {
        return;
    }
    fixture_customer(db, "Ada", "Obi", NULL, &cust);
    for (i = 0; i < 70; i++) {
        ids[i] = token(db, cust.id);
        when[i] = base + apr_time_from_sec(i);
        at[i] = bank_time_iso(p, when[i]);
        CHECK(bank_token_uses_note(u, ids[i], at[i]));
    }
    CHECK(bank_token_uses_write(u, db, p, NULL, &written) == BANK_DB_OK);
    CHECK(written == 70);
    CHECK(bank_token_uses_pending(u) == 0);
    for (i = 0; i < 70; i++) {
        CHECK(used(db, ids[i]) == when[i]);
    }
    /* an earlier use of token 0 (another process's, written late) does not move it back */
    CHECK(bank_token_uses_note(u, ids[0], bank_time_iso(p, base - apr_time_from_sec(60))));
    CHECK(bank_token_uses_write(u, db, p, NULL, &written) == BANK_DB_OK && written == 1);
    CHECK(used(db, ids[0]) == when[0]);
    /* a later one does */
    CHECK(bank_token_uses_note(u, ids[0], at[69]));
    CHECK(bank_token_uses_write(u, db, p, NULL, &written) == BANK_DB_OK && written == 1);
    CHECK(used(db, ids[0]) == when[69]);
    /* nothing noted: nothing written, no statement */
    CHECK(bank_token_uses_write(u, db, p, NULL, &written) == BANK_DB_OK && written == 0);
    /* a token gone meanwhile: the others are written all the same */
    {
        int count = 0;
        CHECK(bank_store_token_delete(db, ids[1], &count) == BANK_DB_OK && count == 1);
        CHECK(bank_token_uses_note(u, ids[1], at[69]));
        CHECK(bank_token_uses_note(u, ids[2], at[69]));
        CHECK(bank_token_uses_write(u, db, p, NULL, &written) == BANK_DB_OK && written == 2);
        CHECK(used(db, ids[2]) == when[69]);
    }
    /* more than one statement holds: refused before any database work */
    CHECK(bank_store_token_uses(db, 65, ids, at) != BANK_DB_OK);
    CHECK(bank_store_token_uses(db, 0, ids, at) != BANK_DB_OK);
}

/* The database busy (another session holds the write lock on SQLite, the row on
 * PostgreSQL): nothing written, the use kept for the next write, which records it once the
 * other session is done. */
static void test_busy(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_token_uses_t *u = uses(p, 10);
    const char *err = NULL, *id, *at = bank_time_iso(p, apr_time_now() / 1000 * 1000);
    bank_db_t *other = bank_db_open(p, fixture_driver, fixture_params, &err);
    bank_customer_t cust;
    apr_time_t want = 0;
    int written = -1, pg = bank_db_is_pgsql(db);

    CHECK(other != NULL);
    if (!u || !other) {
        return;
    }
    fixture_customer(db, "Bola", "Ade", NULL, &cust);
    id = token(db, cust.id);
    CHECK(bank_db_query(other, pg ? apr_psprintf(p,
                                                 "BEGIN; SELECT 1 FROM auth_access_tokens"
                                                 " WHERE id = %s FOR UPDATE",
                                                 id)
                                  : "BEGIN IMMEDIATE") == 0);
    CHECK(bank_token_uses_note(u, id, at));
    if (!pg) {
        bank_db_query(db, "PRAGMA busy_timeout = 0"); /* the driver's own retries only */
    }
    CHECK(bank_token_uses_write(u, db, p, NULL, &written) == BANK_DB_BUSY);
    CHECK(written == 0);
    CHECK(bank_token_uses_pending(u) == 1);
    CHECK(bank_db_query(other, "COMMIT") == 0);
    CHECK(bank_token_uses_write(u, db, p, NULL, &written) == BANK_DB_OK && written == 1);
    CHECK(bank_token_uses_pending(u) == 0);
    CHECK(bank_time_parse(at, &want) == 0 && used(db, id) == want);
}

typedef struct {
    int taken, given;
} turns_t;
static int turn_take(void *baton)
{
    ((turns_t *)baton)->taken++;
    return 1;
}
static void turn_give(void *baton)
{
    ((turns_t *)baton)->given++;
}

/* The turn is taken around each statement, not around the whole write: 70 uses, two
 * statements, two turns; uses noted after the write began wait for the next one. */
static void test_turns(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_token_uses_t *u = uses(p, 1000);
    turns_t t = {0, 0};
    bank_token_uses_turn_t turn = {turn_take, turn_give, &t};
    bank_customer_t cust;
    const char *at = bank_time_iso(p, apr_time_now());
    int i, written = 0;

    if (!u) {
        return;
    }
    fixture_customer(db, "Chidi", "Eze", NULL, &cust);
    for (i = 0; i < 70; i++) {
        CHECK(bank_token_uses_note(u, token(db, cust.id), at));
    }
    CHECK(bank_token_uses_write(u, db, p, &turn, &written) == BANK_DB_OK && written == 70);
    CHECK(t.taken == 2 && t.given == 2);
    CHECK(bank_token_uses_pending(u) == 0);
    /* the set is usable again after the swap, and again after a second one */
    CHECK(bank_token_uses_note(u, token(db, cust.id), at));
    CHECK(bank_token_uses_write(u, db, p, &turn, &written) == BANK_DB_OK && written == 1);
    CHECK(bank_token_uses_note(u, token(db, cust.id), at));
    CHECK(bank_token_uses_write(u, db, p, &turn, &written) == BANK_DB_OK && written == 1);
    CHECK(t.taken == 4 && t.given == 4);
}

static void run_tests(apr_pool_t *p)
{
    test_note_and_take(p);
    test_order(p);
    test_threads(p);
    fixture_each(p, test_with_db);
    fixture_each(p, test_busy);
    fixture_each(p, test_turns);
}
