/* The BVN onboarding rule (bank_onboard.c) against a real SQLite database, and PostgreSQL
 * under DB=pgsql: each verdict, the account opened once, the identity record's checks. */
#include "unit.h"
#include "db_fixture.h"
#include "bank_nuban.h"
#include "bank_onboard.h"

static const bank_onboard_bank_t bank = {"Unit Bank", "999"};

static bank_onboard_verdict run(bank_db_t *db, bank_onboard_t *st, const char *customer,
                                const char *bvn, const char *dob)
{
    memset(st, 0, sizeof(*st));
    st->customer_id = customer;
    st->bvn = bvn;
    st->attempts = 3;
    st->window = 86400;
    CHECK(bank_onboard(db, st, dob, &bank) == BANK_DB_OK);
    return st->verdict;
}

static void test_open_and_repeat(bank_db_t *db)
{
    bank_customer_t c;
    bank_onboard_t st;
    const char *bvn, *account;

    bvn = fixture_verifiable(db, "Ada", "Obi", "1990-01-31", &c);
    CHECK(run(db, &st, c.id, bvn, "1990-01-31") == BANK_ONBOARD_DONE);
    CHECK(st.record == BANK_RECORD_OK && st.opening && st.opened);
    CHECK_STR(st.customer.bvn, bvn);
    CHECK(st.customer.referral_code && strlen(st.customer.referral_code) == 8);
    CHECK_STR(st.account.account_name, "ADA OBI");
    CHECK_STR(st.account.bank_name, "Unit Bank");
    CHECK(st.account.account_number && strlen(st.account.account_number) == 10);
    CHECK(st.account.verified && st.account.balance_minor == 0);
    CHECK_STR(st.account.currency, "NGN");
    account = st.account.id;

    /* Again: the same account, not opened now. */
    CHECK(run(db, &st, c.id, bvn, "1990-01-31") == BANK_ONBOARD_DONE);
    CHECK(!st.opened && !st.opening);
    CHECK_STR(st.account.id, account);

    /* Another BVN for this customer: told so before any record is looked at. */
    CHECK(run(db, &st, c.id, "00000000000", "2000-01-01") == BANK_ONBOARD_OTHER);
    CHECK(st.record == BANK_RECORD_OK);

    /* The same BVN for another customer with matching names. */
    fixture_customer(db, "Obi", "Ada", "pw", &c);
    CHECK(run(db, &st, c.id, bvn, "1990-01-31") == BANK_ONBOARD_TAKEN);
    CHECK(!st.opening);
}

static void test_record(bank_db_t *db)
{
    bank_customer_t c;
    bank_onboard_t st;
    const char *bvn;

    bvn = fixture_verifiable(db, "Ngozi", "Eze", "1985-06-15", &c);
    run(db, &st, c.id, "99999999999", "1985-06-15");
    CHECK(st.record == BANK_RECORD_UNKNOWN && !st.opening);
    run(db, &st, c.id, bvn, "1985-06-16");
    CHECK(st.record == BANK_RECORD_DOB && !st.opening);
    fixture_customer(db, "Ngozi", "Okafor", "pw", &c);
    run(db, &st, c.id, bvn, "1985-06-15");
    CHECK(st.record == BANK_RECORD_NAMES && !st.opening);
    /* nothing was written by the refusals */
    CHECK(bank_onboard_state(db, &st) == BANK_DB_OK && st.verdict == BANK_ONBOARD_OPEN);
}

static void test_odd_states(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_customer_t c;
    bank_onboard_t st;
    const char *bvn;
    int changed = 0;

    CHECK(run(db, &st, bank_uuid4(p), "12345678901", "1990-01-01") == BANK_ONBOARD_NO_CUSTOMER);
    /* Verified with this BVN but no account: data to repair, never a second opening. */
    bvn = fixture_verifiable(db, "Tunde", "Bello", "1970-03-03", &c);
    CHECK(bank_store_customer_set_bvn(db, c.id, bvn, "ABCDEFGH", bank_time_iso(p, apr_time_now()),
                                      &changed) == BANK_DB_OK &&
          changed == 1);
    CHECK(run(db, &st, c.id, bvn, "1970-03-03") == BANK_ONBOARD_NO_ACCOUNT);
    CHECK(!st.opening);
}

/* The next account serial, as the database will hand it out. */
static apr_int64_t next_serial(bank_db_t *db)
{
    const char *v = NULL;

    bank_db_query_value(db,
                        bank_db_is_pgsql(db)
                            ? "SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence("
                              "'account_serials', 'serial')::regclass), 0) + 1"
                            : "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = "
                              "'account_serials'), 0) + 1",
                        &v);
    return v ? apr_atoi64(v) : 0;
}

/* A failure halfway (the account number the next serial gives is held by another account):
 * the transaction rolls back whole, the failure names its step, and a write that is not the
 * referral code's is not tried again. */
static void test_halfway(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_customer_t c, holder;
    bank_account_t obstacle;
    bank_onboard_t st;
    const char *bvn;

    fixture_customer(db, "Halima", "Musa", "pw", &c);
    fixture_customer(db, "Holder", "Other", "pw", &holder);
    bvn = fixture_bvn(db, "Halima", "Musa", "1999-09-09");
    memset(&obstacle, 0, sizeof(obstacle));
    obstacle.id = bank_uuid4(p);
    obstacle.customer_id = holder.id;
    obstacle.bank_name = "x";
    obstacle.bank_account_id = apr_pstrcat(p, "obstacle-", obstacle.id, (char *)NULL);
    obstacle.account_name = "OBSTACLE";
    obstacle.account_number = bank_nuban_account(p, "999", next_serial(db));
    obstacle.created_at = obstacle.updated_at = bank_time_iso(p, apr_time_now());
    CHECK(bank_store_account_insert(db, &obstacle) == BANK_DB_OK);

    memset(&st, 0, sizeof(st));
    st.customer_id = c.id;
    st.bvn = bvn;
    st.attempts = 3;
    st.window = 86400;
    CHECK(bank_onboard(db, &st, "1999-09-09", &bank) != BANK_DB_OK);
    CHECK(st.opening && !st.opened && st.retries == 0);
    CHECK(st.failed_at && strstr(st.failed_at, "(account)") != NULL);
    CHECK(!bank_db_in_txn(db));
    CHECK(bank_onboard_state(db, &st) == BANK_DB_OK && st.verdict == BANK_ONBOARD_OPEN);
    CHECK(st.customer.bvn == NULL && st.customer.referral_code == NULL);

    CHECK(bank_db_query(db, apr_pstrcat(p, "DELETE FROM accounts WHERE id = '", obstacle.id, "'",
                                        (char *)NULL)) == 0);
    CHECK(run(db, &st, c.id, bvn, "1999-09-09") == BANK_ONBOARD_DONE && st.opened);
}

/* Mismatches are counted per customer (3 allowed here); past the limit every attempt is
 * refused unchecked, right or wrong, and a match clears the count. */
static void test_throttle(bank_db_t *db)
{
    bank_customer_t c;
    bank_onboard_t st;
    const char *bvn;

    bvn = fixture_verifiable(db, "Musa", "Bala", "1980-08-08", &c);
    run(db, &st, c.id, bvn, "1980-08-09");
    CHECK(st.record == BANK_RECORD_DOB && !st.throttled && st.count.remaining == 2);
    run(db, &st, c.id, bvn, "1980-08-08");
    CHECK(st.verdict == BANK_ONBOARD_DONE && st.opened && !st.throttled);
    /* the match cleared the count: three more mismatches are each answered as such */
    run(db, &st, c.id, bvn, "1980-08-10");
    run(db, &st, c.id, bvn, "1980-08-10");
    run(db, &st, c.id, bvn, "1980-08-10");
    CHECK(st.record == BANK_RECORD_DOB && !st.throttled && st.count.remaining == 0);
    run(db, &st, c.id, bvn, "1980-08-10");
    CHECK(st.throttled && st.count.failures == 3 && st.count.retry_after >= 1);
    run(db, &st, c.id, bvn, "1980-08-08");
    CHECK(st.throttled && st.record == BANK_RECORD_OK && !st.opened);
}

static void all(bank_db_t *db)
{
    test_open_and_repeat(db);
    test_record(db);
    test_odd_states(db);
    test_halfway(db);
    test_throttle(db);
}

static void run_tests(apr_pool_t *p)
{
    fixture_each(p, all);
}
