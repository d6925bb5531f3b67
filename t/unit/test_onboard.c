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

    /* The customer's own verification seen by the lookup of the BVN's holder but not by the
     * read before it (a concurrent request of the same customer committed in between): the
     * customer is not "another customer" holding it. Staged as the row between the two
     * reads: the hash set, the BVN not yet. */
    bvn = fixture_verifiable(db, "Kemi", "Ade", "1980-08-08", &c);
    CHECK(bank_db_query(db, apr_psprintf(p, "UPDATE customers SET bvn_hash = '%s' WHERE id = '%s'",
                                         bank_store_bvn_hash(db, bvn), c.id)) == 0);
    memset(&st, 0, sizeof(st));
    st.customer_id = c.id;
    st.bvn = bvn;
    st.attempts = 3;
    st.window = 86400;
    CHECK(bank_onboard_state(db, &st) == BANK_DB_OK);
    CHECK(st.verdict == BANK_ONBOARD_OPEN && st.owner == NULL);
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
    CHECK(bank_store_account_insert(db, &obstacle, NULL) == BANK_DB_OK);

    memset(&st, 0, sizeof(st));
    st.customer_id = c.id;
    st.bvn = bvn;
    st.attempts = 3;
    st.window = 86400;
    unit_log_clear();
    CHECK(bank_onboard(db, &st, "1999-09-09", &bank) != BANK_DB_OK);
    CHECK(st.opening && !st.opened && st.retries == 0);
    /* the core logs the failed step with the customer, never the BVN */
    CHECK(unit_logged(apr_pstrcat(p, "BANK0608: BVN onboarding of customer ", c.id,
                                  ": opening the account (account) failed: ", (char *)NULL)));
    CHECK(!unit_logged(bvn));
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

/* 1 if a and b are the same instant, however each is written (the database writes a time
 * in the session's zone). */
static int same_time(const char *a, const char *b)
{
    apr_time_t ta, tb;

    return a && b && bank_time_parse(a, &ta) == 0 && bank_time_parse(b, &tb) == 0 && ta == tb;
}

/* The read path: a verified customer's repeat is one statement (the state, the counter and
 * the record read together), a throttled attempt too; a mismatch is still counted and a
 * match after one still clears it. */
static void test_read_path(bank_db_t *db)
{
    bank_customer_t c;
    bank_onboard_t st, first;
    const char *bvn, *account;
    int before;

    bvn = fixture_verifiable(db, "Chidi", "Nwosu", "1975-02-02", &c);
    before = bank_db_statements(db);
    CHECK(run(db, &st, c.id, bvn, "1975-02-02") == BANK_ONBOARD_DONE && st.opened);
    /* A first verification: the state and the BVN's holder, then one transaction: the count
     * taken, the BVN, a serial, the account returned as stored; nothing is read again inside
     * it or after it. */
    CHECK(bank_db_statements(db) - before == 6);
    first = st;
    account = st.account.id;
    before = bank_db_statements(db);
    CHECK(run(db, &st, c.id, bvn, "1975-02-02") == BANK_ONBOARD_DONE);
    CHECK(bank_db_statements(db) - before == 1);
    CHECK(!st.opened && !st.throttled && st.record == BANK_RECORD_OK);
    CHECK_STR(st.account.id, account);
    CHECK_STR(st.customer.bvn, bvn);
    /* the first answer showed what the database then held, field by field */
    CHECK_STR(first.customer.referral_code, st.customer.referral_code);
    CHECK(same_time(first.customer.updated_at, st.customer.updated_at));
    CHECK_STR(first.customer.created_at, st.customer.created_at);
    CHECK_STR(first.customer.email, st.customer.email);
    CHECK_STR(first.account.account_number, st.account.account_number);
    CHECK_STR(first.account.created_at, st.account.created_at);
    CHECK_STR(first.account.updated_at, st.account.updated_at);
    CHECK_STR(first.account.status, st.account.status);
    CHECK_STR(first.account.currency, st.account.currency);
    CHECK_STR(first.account.account_type, st.account.account_type);
    CHECK_STR(first.account.account_name, st.account.account_name);
    CHECK_STR(first.account.bank_account_id, st.account.bank_account_id);
    CHECK(first.account.balance_minor == st.account.balance_minor &&
          first.account.verified == st.account.verified);
    /* a wrong date of birth from the verified customer counts */
    CHECK(run(db, &st, c.id, bvn, "1975-02-03") == BANK_ONBOARD_DONE);
    CHECK(st.record == BANK_RECORD_DOB && st.count.failures == 1 && st.count.remaining == 2);
    /* the right one then answers as before and clears the count */
    CHECK(run(db, &st, c.id, bvn, "1975-02-02") == BANK_ONBOARD_DONE);
    CHECK(st.record == BANK_RECORD_OK && !st.throttled && st.count.failures == 1);
    before = bank_db_statements(db);
    CHECK(run(db, &st, c.id, bvn, "1975-02-02") == BANK_ONBOARD_DONE);
    CHECK(bank_db_statements(db) - before == 1 && st.count.failures == 0);
    /* past the limit the right answer is refused, read in that one statement */
    run(db, &st, c.id, bvn, "1975-02-03");
    run(db, &st, c.id, bvn, "1975-02-03");
    run(db, &st, c.id, bvn, "1975-02-03");
    before = bank_db_statements(db);
    run(db, &st, c.id, bvn, "1975-02-02");
    CHECK(st.throttled && st.count.failures == 3 && st.count.retry_after >= 1);
    CHECK(bank_db_statements(db) - before == 1);
}

/* ---- an identity provider instead of the records table (docs/identity.md) ---- */

typedef struct {
    int calls;
    bank_record_verdict says;
    int holds;
} fake_provider;

static void fake_hold(void *baton)
{
    ((fake_provider *)baton)->holds++;
}

static bank_record_verdict fake_ask(void *baton, const char *bvn, const char *dob,
                                    const bank_customer_t *customer, const char **first,
                                    const char **last)
{
    fake_provider *f = baton;
    (void)bvn;
    (void)dob;
    f->calls++;
    *first = customer->last_name; /* the provider's order, to see it kept */
    *last = customer->first_name;
    return f->says;
}

static bank_onboard_verdict run_provider(bank_db_t *db, bank_onboard_t *st,
                                         const bank_onboard_provider_t *provider,
                                         const char *customer, const char *bvn, const char *dob)
{
    memset(st, 0, sizeof(*st));
    st->customer_id = customer;
    st->bvn = bvn;
    st->attempts = 3;
    st->window = 86400;
    st->provider = provider;
    CHECK(bank_onboard(db, st, dob, &bank) == BANK_DB_OK);
    return st->verdict;
}

/* The kept record of bvn: names|date|source|phone or "none"|checked or not. */
static const char *kept(bank_db_t *db, const char *bvn)
{
    bank_bvn_kept_t k;
    bank_db_rc rc = bank_store_bvn_record_get(db, bvn, &k);

    if (rc != BANK_DB_OK) {
        return rc == BANK_DB_NOT_FOUND ? "" : NULL;
    }
    return apr_pstrcat(bank_db_pool(db), k.rec.first_name, "|", k.rec.last_name, "|",
                       k.rec.date_of_birth, "|", k.source, "|", k.rec.phone ? k.rec.phone : "none",
                       "|", k.checked_at ? "checked" : "unchecked", (char *)NULL);
}

/* A provider that, while it is asked, lets the customer's mismatches reach the limit (wrong
 * attempts at the same moment as a right one). */
typedef struct {
    bank_db_t *db;
    bank_counter_t counter;
} flood_provider;

static bank_record_verdict flood_ask(void *baton, const char *bvn, const char *dob,
                                     const bank_customer_t *customer, const char **first,
                                     const char **last)
{
    flood_provider *f = baton;
    bank_count_t out;
    int i;

    (void)bvn;
    (void)dob;
    for (i = 0; i < 3; i++) {
        CHECK(bank_counter_fail(f->db, &f->counter, &out) == BANK_DB_OK);
    }
    *first = customer->first_name;
    *last = customer->last_name;
    return BANK_RECORD_OK;
}

/* A right answer whose customer reached the limit between the state read and the account's
 * transaction is refused there: nothing written, the count kept. */
static void test_limit_meanwhile(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    flood_provider f;
    bank_onboard_provider_t provider = {flood_ask, &f, "dojah", NULL};
    bank_customer_t c;
    bank_onboard_t st;
    bank_count_t count;
    const char *bvn = apr_psprintf(p, "6%010d", ++fixture_seq);

    fixture_customer(db, "Bisi", "Ola", "pw", &c);
    memset(&f, 0, sizeof(f));
    f.db = db;
    f.counter.table = BANK_COUNTS_SHARED;
    f.counter.scope = "bvn";
    f.counter.subject = c.id;
    f.counter.attempts = 3;
    f.counter.window = 86400;
    f.counter.now = apr_time_now();
    CHECK(run_provider(db, &st, &provider, c.id, bvn, "1991-01-01") == BANK_ONBOARD_OPEN);
    CHECK(st.throttled && !st.opened && st.count.failures == 3);
    CHECK(bank_counter_check(db, &f.counter, &count) == BANK_DB_OK && count.failures == 3);
    CHECK_STR(kept(db, bvn), "");
    CHECK(bank_store_customer_by_id(db, c.id, &c) == BANK_DB_OK && c.bvn == NULL);
}

static void test_provider(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    fake_provider f = {0, BANK_RECORD_OK, 0};
    bank_onboard_provider_t provider = {fake_ask, &f, "dojah", fake_hold};
    bank_customer_t c, other, third;
    bank_onboard_t st;
    const char *bvn = apr_psprintf(p, "7%010d", ++fixture_seq);

    /* a match opens the account and keeps what the account needs, in the same transaction */
    fixture_customer(db, "Ada", "Obi", "pw", &c);
    CHECK(run_provider(db, &st, &provider, c.id, bvn, "1990-04-12") == BANK_ONBOARD_DONE);
    CHECK(st.opened && f.calls == 1);
    CHECK_STR(st.account.account_name, "OBI ADA");
    CHECK_STR(kept(db, bvn), "Obi|Ada|1990-04-12|dojah|none|checked");
    /* a repeat, and the BVN sent by another customer, are judged by the kept record */
    CHECK(run_provider(db, &st, &provider, c.id, bvn, "1990-04-12") == BANK_ONBOARD_DONE);
    CHECK(!st.opened && f.calls == 1);
    CHECK(run_provider(db, &st, &provider, c.id, bvn, "1990-04-13") == BANK_ONBOARD_DONE);
    CHECK(st.record == BANK_RECORD_DOB && f.calls == 1);
    CHECK(f.holds == 0); /* the customer's own BVN: their own state, not held */
    fixture_customer(db, "Ada", "Obi", "pw", &other);
    CHECK(run_provider(db, &st, &provider, other.id, bvn, "1990-04-12") == BANK_ONBOARD_TAKEN);
    CHECK(st.record == BANK_RECORD_OK && f.calls == 1);
    /* another customer's BVN, judged on the kept record: held as long as a call, each time,
     * whatever the record says */
    CHECK(f.holds == 1);
    fixture_customer(db, "Eze", "Obi", "pw", &third);
    CHECK(run_provider(db, &st, &provider, third.id, bvn, "1990-04-13") == BANK_ONBOARD_TAKEN);
    CHECK(st.record == BANK_RECORD_DOB && f.calls == 1 && f.holds == 2);

    /* the provider unavailable: nothing counted, nothing written */
    f.says = BANK_RECORD_UNAVAILABLE;
    bvn = apr_psprintf(p, "7%010d", ++fixture_seq);
    CHECK(run_provider(db, &st, &provider, other.id, bvn, "1990-04-12") == BANK_ONBOARD_OPEN);
    CHECK(st.record == BANK_RECORD_UNAVAILABLE && !st.opening && !st.throttled);
    CHECK(f.calls == 2 && st.count.failures == 0);
    CHECK_STR(kept(db, bvn), "");
    /* a mismatch it reports is counted like the table's */
    f.says = BANK_RECORD_NAMES;
    CHECK(run_provider(db, &st, &provider, other.id, bvn, "1990-04-12") == BANK_ONBOARD_OPEN);
    CHECK(st.record == BANK_RECORD_NAMES && !st.opening && st.count.remaining == 2);
    CHECK(f.calls == 3 && f.holds == 2);
    CHECK_STR(kept(db, bvn), "");
    CHECK(bank_onboard_state(db, &st) == BANK_DB_OK && st.verdict == BANK_ONBOARD_OPEN);
}

static void all(bank_db_t *db)
{
    test_open_and_repeat(db);
    test_record(db);
    test_odd_states(db);
    test_halfway(db);
    test_throttle(db);
    test_read_path(db);
    test_provider(db);
    test_limit_meanwhile(db);
}

static void run_tests(apr_pool_t *p)
{
    fixture_each(p, all);
}
