/* The bearer rules (bank_bearer.c) against a migrated SQLite database and a fake host (its
 * connection counted, a clock that can be moved, a set of token uses or none): a valid token
 * accepted and kept, a wrong secret refused, expiry, a missing ability, a token revoked while
 * kept, a stale change feed (the kept rows do not answer, the row is read), a feed whose read
 * fails (nothing answered from the kept rows), a clock set back (nothing kept), the last use
 * noted at most once per interval, and the kept BVN answers: put, get, forget, the epoch. */
#include "unit.h"

#include <apr_strings.h>
#include "bank_bearer.h"
#include "bank_token.h"
#include "db_fixture.h"

#define INTERVAL apr_time_from_sec(1) /* the feed current for a second after a read */

static const int scope = 1;

/* The fake host's clock: the real one moved by offset. */
static apr_time_t offset;

static apr_time_t fake_now(void)
{
    return apr_time_now() + offset;
}

typedef struct {
    bank_db_t *db; /* NULL: no connection to be had */
    int asked;     /* times the connection was asked for */
    bank_token_uses_t *uses;
} fake_t;

static bank_db_t *fake_db(void *baton)
{
    fake_t *f = baton;
    f->asked++;
    return f->db;
}

static int fake_held(void *baton)
{
    (void)baton;
    return 0;
}

static bank_token_uses_t *fake_uses(void *baton)
{
    return ((fake_t *)baton)->uses;
}

static bank_log_where fake_where(void *baton)
{
    (void)baton;
    return NULL;
}

static const void *fake_scope(void *baton)
{
    (void)baton;
    return &scope;
}

static const bank_bearer_host host = {fake_db,   fake_held,  fake_now,
                                      fake_uses, fake_where, fake_scope};

static bank_customer_t customer;

/* A token of the fixture's customer with these abilities, expiring at expires (0: never): its
 * plaintext; its id in *id. */
static const char *token(bank_db_t *db, const char *abilities, apr_time_t expires, const char **id)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *secret, *hash;

    CHECK(bank_token_secret_new(p, &secret, &hash) == 0);
    CHECK(bank_store_token_insert(db, customer.id, hash, abilities,
                                  bank_time_iso(p, apr_time_now()),
                                  expires ? bank_time_iso(p, expires) : NULL, id) == BANK_DB_OK);
    return bank_token_encode(p, *id, secret);
}

/* The same token id with another secret. */
static const char *forged(apr_pool_t *p, const char *id)
{
    const char *secret, *hash;

    CHECK(bank_token_secret_new(p, &secret, &hash) == 0);
    return bank_token_encode(p, id, secret);
}

static bank_bearer_t *bearer(apr_pool_t *p, apr_time_t interval)
{
    bank_bearer_t *b = bank_bearer_create(p, apr_time_from_sec(60));

    bank_bearer_add_scope(b, p, &scope, interval);
    CHECK(bank_bearer_feed(b, &scope) != NULL);
    return b;
}

static bank_bearer_verdict kept(bank_bearer_t *b, fake_t *f, apr_pool_t *p, const char *plain,
                                const char *ability, bank_principal_t **pr)
{
    return bank_bearer_kept(b, &host, f, p, plain, apr_time_from_sec(60), ability, pr);
}

static bank_bearer_verdict check(bank_bearer_t *b, fake_t *f, apr_pool_t *p, const char *plain,
                                 const char *ability, bank_principal_t **pr)
{
    bank_db_rc rc = BANK_DB_OK;
    return bank_bearer_check(b, &host, f, p, plain, 60, ability, pr, &rc);
}

/* Kept: the token verified through the database while the feed is current (the check
 * before reads it ahead when due: the first read only learns where it stands), then answered
 * from the kept rows without a connection. */
static void keep(bank_bearer_t *b, fake_t *f, apr_pool_t *p, const char *plain)
{
    bank_principal_t *pr = NULL;
    bank_db_t *db = f->db;

    CHECK(check(b, f, p, plain, "banks:read", &pr) == BANK_BEARER_OK); /* the feed read ahead */
    CHECK(check(b, f, p, plain, "banks:read", &pr) == BANK_BEARER_OK);
    f->db = NULL;
    CHECK(kept(b, f, p, plain, "banks:read", &pr) == BANK_BEARER_OK);
    f->db = db;
}

static void test_tokens(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_bearer_t *b = bearer(p, INTERVAL), *slow;
    fake_t f = {db, 0, NULL};
    bank_principal_t *pr = NULL;
    const char *id, *id2, *plain = token(db, "[\"banks:read\"]", 0, &id);
    const char *other = token(db, "[\"banks:read\"]", apr_time_now() + apr_time_from_sec(10), &id2);
    int asked;

    /* valid: accepted through the database, with its customer and token */
    offset = 0;
    CHECK(check(b, &f, p, plain, "banks:read", &pr) == BANK_BEARER_OK);
    CHECK(pr && strcmp(pr->customer_id, customer.id) == 0 && strcmp(pr->token_id, id) == 0);
    CHECK(check(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK);
    /* no token, not a token, unknown */
    CHECK(check(b, &f, p, NULL, NULL, &pr) == BANK_BEARER_NONE);
    CHECK(check(b, &f, p, "oat_nonsense", NULL, &pr) == BANK_BEARER_MALFORMED);
    CHECK(check(b, &f, p, forged(p, "999999"), NULL, &pr) == BANK_BEARER_UNKNOWN);
    /* no connection: a database error, not a refusal */
    f.db = NULL;
    CHECK(check(b, &f, p, plain, NULL, &pr) == BANK_BEARER_DB_ERROR);
    f.db = db;

    /* a wrong secret: refused, from the database and from the kept rows alike */
    CHECK(check(b, &f, p, forged(p, id), "banks:read", &pr) == BANK_BEARER_UNKNOWN);
    keep(b, &f, p, plain);
    CHECK(kept(b, &f, p, forged(p, id), "banks:read", &pr) == BANK_BEARER_MISS);

    /* a missing ability: forbidden, from the kept rows and from the database */
    CHECK(kept(b, &f, p, plain, "onboarding:bvn", &pr) == BANK_BEARER_FORBIDDEN);
    CHECK(check(b, &f, p, plain, "onboarding:bvn", &pr) == BANK_BEARER_FORBIDDEN);

    /* expiry, by the host's clock: from the database, and from the kept rows (their feed
     * current for 5 s) */
    CHECK(check(b, &f, p, other, "banks:read", &pr) == BANK_BEARER_OK);
    offset = apr_time_from_sec(11);
    CHECK(check(b, &f, p, other, "banks:read", &pr) == BANK_BEARER_EXPIRED);
    offset = 0;
    slow = bearer(p, apr_time_from_sec(5));
    other = token(db, "[\"banks:read\"]", apr_time_now() + apr_time_from_sec(1), &id2);
    keep(slow, &f, p, other);
    offset = apr_time_from_msec(1500);
    f.db = NULL;
    CHECK(kept(slow, &f, p, other, "banks:read", &pr) == BANK_BEARER_EXPIRED);
    f.db = db;
    offset = 0;

    /* revoked while kept: the feed's next read drops it, the database refuses it */
    keep(b, &f, p, plain);
    CHECK(bank_db_query(db, apr_psprintf(p, "DELETE FROM auth_access_tokens WHERE id = %s", id)) ==
          0);
    apr_sleep(INTERVAL + apr_time_from_msec(100));
    CHECK(kept(b, &f, p, plain, "banks:read", &pr) == BANK_BEARER_MISS);
    CHECK(check(b, &f, p, plain, "banks:read", &pr) == BANK_BEARER_UNKNOWN);

    /* the feed stale (older than its interval) and no connection to read it: the kept row
     * does not answer; the row is read */
    plain = token(db, "[\"banks:read\"]", 0, &id);
    keep(b, &f, p, plain);
    apr_sleep(INTERVAL + apr_time_from_msec(100));
    f.db = NULL;
    asked = f.asked;
    CHECK(kept(b, &f, p, plain, "banks:read", &pr) == BANK_BEARER_MISS);
    CHECK(f.asked == asked + 1); /* the feed's read asked for one */
    f.db = db;
    CHECK(check(b, &f, p, plain, "banks:read", &pr) == BANK_BEARER_OK);
    CHECK(f.asked == asked + 3); /* the read above, its row, the feed read ahead */

    /* a token nothing is kept for: missed at once, the feed neither read nor waited for
     * (even stale, with no connection to read it on) */
    plain = token(db, "[\"banks:read\"]", 0, &id);
    apr_sleep(INTERVAL + apr_time_from_msec(100));
    f.db = NULL;
    asked = f.asked;
    CHECK(kept(b, &f, p, plain, "banks:read", &pr) == BANK_BEARER_MISS);
    CHECK(f.asked == asked);
    f.db = db;
    /* its check reads the feed ahead, on its own connection: the next check keeps */
    CHECK(check(b, &f, p, plain, "banks:read", &pr) == BANK_BEARER_OK);
    CHECK(f.asked == asked + 3); /* its row, its use written (no writer here), the feed */
    CHECK(bank_change_feed_current(bank_bearer_feed(b, &scope), fake_now()));

    /* the host's clock set back past the feed's last read: nothing read is kept */
    plain = token(db, "[\"banks:read\"]", 0, &id);
    offset = -apr_time_from_sec(3600);
    CHECK(check(b, &f, p, plain, "banks:read", &pr) == BANK_BEARER_OK);
    offset = 0;
    f.db = NULL;
    CHECK(kept(b, &f, p, plain, "banks:read", &pr) == BANK_BEARER_MISS);
    f.db = db;
}

/* A feed whose read fails: the kept rows answer nothing, and the failure is logged. */
static void test_feed_failing(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_bearer_t *b = bearer(p, INTERVAL);
    fake_t f = {db, 0, NULL};
    bank_principal_t *pr = NULL;
    const char *id, *plain = token(db, "[\"*\"]", 0, &id);

    offset = 0;
    keep(b, &f, p, plain);
    unit_log_clear();
    CHECK(bank_db_query(db, "ALTER TABLE auth_token_revocations RENAME TO gone") == 0);
    apr_sleep(INTERVAL + apr_time_from_msec(100));
    CHECK(kept(b, &f, p, plain, "banks:read", &pr) == BANK_BEARER_MISS);
    CHECK(bank_kept_distrusted(bank_bearer_tokens(b)));
    CHECK(unit_logged("BANK2101"));
    CHECK(!unit_logged(plain));
    /* read on a later request, the table back: the kept rows answer again once kept again */
    CHECK(bank_db_query(db, "ALTER TABLE gone RENAME TO auth_token_revocations") == 0);
    keep(b, &f, p, plain);
}

static const char *last_used(bank_db_t *db, const char *id)
{
    bank_token_row_t row;

    CHECK(bank_store_token_find(db, id, &row) == BANK_DB_OK);
    return row.last_used_at;
}

/* The last use: noted for the writer at most once per interval (the kept row told), or
 * written on the way without one. */
static void test_last_use(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_bearer_t *b = bearer(p, INTERVAL);
    const char *err = NULL, *ids[4], *times[4], *id, *plain = token(db, "[\"*\"]", 0, &id), *t1;
    fake_t f = {db, 0, bank_token_uses_create(p, 16, &err)};
    bank_principal_t *pr = NULL;

    offset = 0;
    CHECK(f.uses != NULL);
    CHECK(kept(b, &f, p, plain, NULL, &pr) == BANK_BEARER_MISS);
    CHECK(check(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK); /* the feed read ahead */
    CHECK(check(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK); /* kept */
    CHECK(bank_token_uses_take(f.uses, p, 4, ids, times) == 1);
    CHECK_STR(ids[0], id);
    CHECK(kept(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK);
    CHECK(kept(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK);
    CHECK(bank_token_uses_pending(f.uses) == 0);
    /* a minute later (the feed current for 5 minutes): noted once more, the kept row told */
    b = bearer(p, apr_time_from_sec(300));
    plain = token(db, "[\"*\"]", 0, &id);
    keep(b, &f, p, plain);
    CHECK(bank_token_uses_take(f.uses, p, 4, ids, times) == 1);
    offset = apr_time_from_sec(61);
    CHECK(kept(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK);
    CHECK(bank_token_uses_take(f.uses, p, 4, ids, times) == 1);
    CHECK_STR(ids[0], id);
    CHECK(kept(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK);
    CHECK(bank_token_uses_pending(f.uses) == 0);
    offset = 0;

    /* no writer: written on the way, then not again within the interval */
    f.uses = NULL;
    plain = token(db, "[\"*\"]", 0, &id);
    CHECK(last_used(db, id) == NULL);
    CHECK(check(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK);
    t1 = last_used(db, id);
    CHECK(t1 != NULL);
    offset = apr_time_from_sec(30);
    CHECK(check(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK);
    CHECK_STR(last_used(db, id), t1);
    /* the clock set back: a last use in the future is not written again */
    offset = -apr_time_from_sec(3600);
    CHECK(check(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK);
    CHECK_STR(last_used(db, id), t1);
    offset = apr_time_from_sec(61);
    CHECK(check(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK);
    CHECK(last_used(db, id) && strcmp(last_used(db, id), t1) > 0);
    offset = 0;
}

/* The kept BVN answers: given for the same question only, dropped on another, forgotten,
 * kept only with an epoch taken while the feed was current and unmoved since. */
static void test_answers(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_bearer_t *b = bearer(p, INTERVAL);
    fake_t f = {db, 0, NULL};
    bank_bvn_question_t q = {"22212345678", "1990-05-14", "rule-a"};
    bank_bvn_question_t dob = {"22212345678", "1990-05-15", "rule-a"};
    bank_bvn_question_t rule = {"22212345678", "1990-05-14", "rule-b"};
    bank_bvn_question_t bvn = {"22212345679", "1990-05-14", "rule-a"};
    apr_time_t max_age = apr_time_from_sec(60);
    const char *text = NULL;
    apr_uint64_t epoch = 0;
    bank_principal_t *pr = NULL;
    const char *id, *plain = token(db, "[\"*\"]", 0, &id);

    offset = 0;
    /* before the feed's first read: no epoch, no answer */
    CHECK(!bank_bearer_answer_epoch(b, &host, &f, 60, &epoch));
    CHECK(check(b, &f, p, plain, NULL, &pr) == BANK_BEARER_OK); /* the feed read ahead */
    CHECK(!bank_bearer_answer_epoch(b, &host, &f, 0, &epoch));  /* BankBvnCacheSeconds 0 */
    CHECK(bank_bearer_answer_epoch(b, &host, &f, 60, &epoch));
    bank_bearer_answer_put(b, &scope, "c1", &q, "{\"a\":1}", fake_now(), epoch);
    CHECK(bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &q, &text));
    CHECK_STR(text, "{\"a\":1}");
    CHECK(!bank_bearer_answer_get(b, &host, &f, p, 0, "c1", &q, &text));
    /* another rule: not given, and the kept answer dropped */
    CHECK(!bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &rule, &text));
    CHECK(!bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &q, &text));
    /* another date of birth: the same */
    CHECK(bank_bearer_answer_epoch(b, &host, &f, 60, &epoch));
    /* another BVN of the same length, differing in its last digit: not answered, and gone */
    bank_bearer_answer_put(b, &scope, "c1", &q, "{\"a\":1}", fake_now(), epoch);
    CHECK(!bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &bvn, &text));
    CHECK(!bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &q, &text));
    bank_bearer_answer_put(b, &scope, "c1", &q, "{\"a\":2}", fake_now(), epoch);
    CHECK(!bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &dob, &text));
    CHECK(!bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &q, &text));
    /* forgotten */
    CHECK(bank_bearer_answer_epoch(b, &host, &f, 60, &epoch));
    bank_bearer_answer_put(b, &scope, "c1", &q, "{\"a\":3}", fake_now(), epoch);
    bank_bearer_answer_forget(b, "c1");
    CHECK(!bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &q, &text));
    /* the epoch: an answer read before a forget is not kept after it */
    CHECK(bank_bearer_answer_epoch(b, &host, &f, 60, &epoch));
    bank_bearer_answer_forget(b, "c2");
    bank_bearer_answer_put(b, &scope, "c1", &q, "{\"a\":4}", fake_now(), epoch);
    CHECK(!bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &q, &text));
    /* the feed stale: no epoch, and a kept answer not given without a read */
    CHECK(bank_bearer_answer_epoch(b, &host, &f, 60, &epoch));
    bank_bearer_answer_put(b, &scope, "c1", &q, "{\"a\":5}", fake_now(), epoch);
    CHECK(bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &q, &text));
    apr_sleep(INTERVAL + apr_time_from_msec(100));
    CHECK(!bank_bearer_answer_epoch(b, &host, &f, 60, &epoch));
    f.db = NULL;
    CHECK(!bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &q, &text));
    f.db = db;
    CHECK(bank_bearer_answer_get(b, &host, &f, p, max_age, "c1", &q, &text)); /* read again */
    CHECK_STR(text, "{\"a\":5}");
}

/* SQLite only (the failing feed is made by renaming its table, which the suite's PostgreSQL
 * database must never see). */
static void run(bank_db_t *db)
{
    if (strcmp(fixture_driver, "sqlite3") != 0) {
        return;
    }
    fixture_customer(db, "Ada", "Obi", "pw", &customer);
    test_tokens(db);
    test_last_use(db);
    test_answers(db);
    test_feed_failing(db); /* last: it renames the feed's table for a while */
}

static void run_tests(apr_pool_t *p)
{
    fixture_each(p, run);
}
