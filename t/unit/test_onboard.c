/* The BVN onboarding rule (bank_onboard.c) against a real SQLite database, and PostgreSQL
 * under DB=pgsql: each verdict, the account opened once, the identity record's checks. */
#include "unit.h"
#include "db_fixture.h"
#include "bank_onboard.h"

static const bank_onboard_bank_t bank = {"Unit Bank", "999"};

static bank_onboard_verdict run(bank_db_t *db, bank_onboard_t *st, const char *customer,
                                const char *bvn, const char *dob)
{
    memset(st, 0, sizeof(*st));
    st->customer_id = customer;
    st->bvn = bvn;
    CHECK(bank_onboard(db, st, dob, &bank) == BANK_DB_OK);
    return st->verdict;
}

static void test_open_and_repeat(bank_db_t *db)
{
    bank_customer_t c;
    bank_onboard_t st;
    const char *bvn, *account;

    fixture_customer(db, "Ada", "Obi", "pw", &c);
    bvn = fixture_bvn(db, "ADA", " obi ", "1990-01-31");
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

    fixture_customer(db, "Ngozi", "Eze", "pw", &c);
    bvn = fixture_bvn(db, "Ngozi", "Eze", "1985-06-15");
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
    fixture_customer(db, "Tunde", "Bello", "pw", &c);
    bvn = fixture_bvn(db, "Tunde", "Bello", "1970-03-03");
    CHECK(bank_store_customer_set_bvn(db, c.id, bvn, "ABCDEFGH", bank_time_iso(p, apr_time_now()),
                                      &changed) == BANK_DB_OK &&
          changed == 1);
    CHECK(run(db, &st, c.id, bvn, "1970-03-03") == BANK_ONBOARD_NO_ACCOUNT);
    CHECK(!st.opening);
}

static void all(bank_db_t *db)
{
    test_open_and_repeat(db);
    test_record(db);
    test_odd_states(db);
}

static void run_tests(apr_pool_t *p)
{
    fixture_each(p, all);
}
