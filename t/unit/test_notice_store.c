/* Payment notices stored in batches (bank_store_notices_put, the webhook's group commit)
 * against a real SQLite database, and PostgreSQL under DB=pgsql: one transaction for many,
 * a key twice in one batch written once, and a batch the database refuses stores nothing. */
#include <string.h>
#include "unit.h"
#include "db_fixture.h"
#include "bank_notice.h"
#include "bank_store.h"
#include "bank_uuid.h"

static int seq;

static bank_notice_put_t *put_of(bank_db_t *db, const char *ref)
{
    return fixture_notice(db, ref, "no-such-wallet", "2026-11-23T10:00:00.000Z");
}

static long stored(bank_db_t *db, const char *prefix)
{
    long n = fixture_notices(db, apr_pstrcat(bank_db_pool(db), prefix, "%", (char *)NULL));

    CHECK(n >= 0);
    return n;
}

static void test_batch(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "BATCH-%d-%d-", getpid(), ++seq);
    bank_notice_put_t *puts[4];

    puts[0] = put_of(db, apr_pstrcat(p, pre, "b", (char *)NULL));
    puts[1] = put_of(db, apr_pstrcat(p, pre, "a", (char *)NULL));
    puts[2] = put_of(db, apr_pstrcat(p, pre, "b", (char *)NULL)); /* the same key again */
    puts[3] = put_of(db, apr_pstrcat(p, pre, "c", (char *)NULL));
    CHECK(bank_store_notices_put(db, puts, 4) == BANK_DB_OK);
    CHECK(stored(db, pre) == 3);
    /* in key order: a, b, b, c; the second b is the repeat */
    CHECK(puts[0]->added && puts[1]->added && !puts[2]->added && puts[3]->added);
    CHECK(!puts[0]->matched);
    /* a later batch with a stored key: that one a repeat, the new one written */
    puts[0] = put_of(db, apr_pstrcat(p, pre, "a", (char *)NULL));
    puts[1] = put_of(db, apr_pstrcat(p, pre, "d", (char *)NULL));
    CHECK(bank_store_notices_put(db, puts, 2) == BANK_DB_OK);
    CHECK(!puts[0]->added && puts[1]->added && stored(db, pre) == 4);
}

/* Seventy notices (more than one statement holds: a transaction of two, 64 and 6 rows),
 * three keys twice, one naming an account by its bank-side id. */
static void test_big_batch(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "BIG-%d-%d-", getpid(), ++seq);
    bank_notice_put_t *puts[70];
    bank_customer_t c;
    bank_account_t a;
    int i, added = 0, matched = 0;

    fixture_customer(db, "Ada", "Obi", "pw", &c);
    memset(&a, 0, sizeof(a));
    a.id = bank_uuid4(p);
    a.customer_id = c.id;
    a.bank_name = "Unit Bank";
    a.bank_account_id = apr_pstrcat(p, pre, "wallet", (char *)NULL);
    a.account_name = "ADA OBI";
    a.account_number = apr_psprintf(p, "%010d", (getpid() * 100 + seq) % 1000000000);
    a.created_at = a.updated_at = "2026-11-23T10:00:00.000Z";
    CHECK(bank_store_account_insert(db, &a, NULL) == BANK_DB_OK);
    for (i = 0; i < 70; i++) {
        puts[i] = put_of(db, apr_psprintf(p, "%s%02d", pre, i < 67 ? i : i - 67));
    }
    puts[5]->n = apr_pmemdup(p, puts[5]->n, sizeof(bank_notice_t));
    ((bank_notice_t *)puts[5]->n)->wallet_id = a.bank_account_id;
    CHECK(bank_store_notices_put(db, puts, 70) == BANK_DB_OK);
    CHECK(stored(db, pre) == 67);
    for (i = 0; i < 70; i++) {
        added += puts[i]->added;
        matched += puts[i]->matched;
    }
    CHECK(added == 67 && matched == 1);
}

/* A trigger refuses one reference: the whole batch holding it is rolled back. */
static void test_refused(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "REFUSE-%d-%d-", getpid(), ++seq);
    bank_notice_put_t *puts[3];
    int pg = bank_db_is_pgsql(db);

    CHECK(bank_db_query(db, pg ? "CREATE OR REPLACE FUNCTION unit_refuse() RETURNS trigger "
                                 "LANGUAGE plpgsql AS $$ BEGIN IF NEW.transaction_reference "
                                 "LIKE 'REFUSE-%-x' THEN RAISE EXCEPTION 'refused'; END IF; "
                                 "RETURN NEW; END $$; CREATE TRIGGER unit_refuse BEFORE INSERT "
                                 "ON payment_notices FOR EACH ROW EXECUTE FUNCTION unit_refuse()"
                               : "CREATE TRIGGER unit_refuse BEFORE INSERT ON payment_notices "
                                 "WHEN NEW.transaction_reference LIKE 'REFUSE-%-x' "
                                 "BEGIN SELECT RAISE(ABORT, 'refused'); END") == 0);
    /* SQLite's statements prepared before a schema change fail until prepared again */
    CHECK(pg || bank_db_prepare_all(db) == NULL);
    puts[0] = put_of(db, apr_pstrcat(p, pre, "a", (char *)NULL));
    puts[1] = put_of(db, apr_pstrcat(p, pre, "x", (char *)NULL));
    puts[2] = put_of(db, apr_pstrcat(p, pre, "z", (char *)NULL));
    CHECK(bank_store_notices_put(db, puts, 3) == BANK_DB_ERROR);
    CHECK(strstr(bank_db_error(db), "refused") != NULL);
    CHECK(!bank_db_in_txn(db));
    CHECK(!puts[0]->added && !puts[1]->added && !puts[2]->added);
    CHECK(stored(db, pre) == 0);
    CHECK(bank_db_query(db, pg ? "DROP TRIGGER unit_refuse ON payment_notices"
                               : "DROP TRIGGER unit_refuse") == 0);
    /* the connection goes on: the same batch stores now */
    CHECK(pg || bank_db_prepare_all(db) == NULL);
    CHECK(bank_store_notices_put(db, puts, 3) == BANK_DB_OK && stored(db, pre) == 3);
}

static void all(bank_db_t *db)
{
    test_batch(db);
    test_big_batch(db);
    test_refused(db);
}

static void run_tests(apr_pool_t *p)
{
    fixture_each(p, all);
}
