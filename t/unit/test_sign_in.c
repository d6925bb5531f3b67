/* The sign-in rule (bank_sign_in.c) against a real SQLite database, and PostgreSQL under
 * DB=pgsql: each verdict a sequence of requests can reach, the throttle's count and key,
 * the token issued, and Retry-After. */
#include "unit.h"
#include "db_fixture.h"
#include "bank_sign_in.h"
#include "bank_token.h"
#include "bank_password.h"
#include "bank_sql.h"
#include <apr_lib.h>

/* Two failures per (e-mail, IP), four per IP and six per e-mail in a minute. */
static bank_sign_in_t request(const char *email, const char *password, const char *ip)
{
    bank_sign_in_t in = {.email = email,
                         .password = password,
                         .device = "device-1",
                         .ip = ip,
                         .attempts = 2,
                         .window = 60,
                         .addr_attempts = 4,
                         .addr_window = 60,
                         .account_attempts = 6,
                         .account_window = 60,
                         .lifetime = 3600,
                         .now = apr_time_now()};
    return in;
}

static bank_sign_in_verdict attempt(bank_db_t *db, const char *email, const char *password,
                                    const char *ip, bank_sign_in_result_t *out)
{
    bank_sign_in_t in = request(email, password, ip);

    CHECK(bank_sign_in(db, &in, out) == BANK_DB_OK);
    return out->verdict;
}

static void test_success(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_customer_t c;
    bank_sign_in_result_t out;
    bank_token_row_t row;
    const char *id, *secret;

    fixture_customer(db, "Ada", "Obi", "right", &c);
    CHECK(attempt(db, c.email, "right", "192.0.2.1", &out) == BANK_SIGN_IN_OK);
    CHECK_STR(out.customer.id, c.id);
    CHECK(out.token && bank_token_decode(p, out.token, &id, &secret) == 0);
    CHECK_STR(id, out.token_id);
    CHECK(bank_store_token_find(db, id, &row) == BANK_DB_OK);
    CHECK(bank_token_verify(p, secret, row.hash));
    CHECK_STR(row.abilities, BANK_SIGN_IN_ABILITIES);
    CHECK_STR(row.expires_at ? bank_time_api(p, row.expires_at) : NULL, out.expires);
    /* The e-mail is found whatever its ASCII case. */
    CHECK(attempt(db, apr_psprintf(p, "%s", bank_ascii_lower(p, c.email)), "right", "192.0.2.1",
                  &out) == BANK_SIGN_IN_OK);
}

/* The device's token_id ("none" for NULL, "no column" before 012). */
static const char *device_session(bank_db_t *db, const char *device)
{
    const char *v = NULL;

    if (bank_db_query_value(db,
                            apr_psprintf(bank_db_pool(db),
                                         "SELECT COALESCE(CAST(token_id AS TEXT), 'none') FROM "
                                         "devices WHERE device_token = '%s'",
                                         device),
                            &v) != 0) {
        return "no column";
    }
    return v;
}

/* SQLite from the previous release's schema on (BANK_SCHEMA_SQLITE_OLDEST): on a database
 * migrated up to 009 (0.2.0's) the device's statement does not prepare in its own form and
 * its older one stands in (the device kept without its session); once the rest of the
 * migrations committed from another connection, the first's statements fail, it is replaced
 * and prepares the statement's own form (the session kept), without a restart. */
static void test_older_schema(apr_pool_t *p)
{
    const char *src = getenv("BANK_TEST_SQL_DIR") ? getenv("BANK_TEST_SQL_DIR") : "sql";
    char *root = apr_pstrdup(p, "/tmp/mod_bank-unit-older.XXXXXX");
    const char *file, *now = bank_time_iso(p, apr_time_now()), *err = NULL;
    bank_migrate_result_t res = {NULL, 0};
    bank_customer_t c;
    bank_sign_in_result_t out;
    bank_db_t *older, *other;

    CHECK(bank_stmt_older(p, "bank_device_upsert") != NULL);
    CHECK(bank_stmt_older(p, "bank_token_find") == NULL);
    CHECK(mkdtemp(root) != NULL);
    CHECK(system(apr_psprintf(p,
                              "mkdir %s/old %s/old/sqlite && ln -s $(realpath %s/sqlite)/00?_*.sql "
                              "%s/old/sqlite/ && ln -s $(realpath %s/seed) %s/old/seed",
                              root, root, src, root, src, root)) == 0);
    file = apr_pstrcat(p, root, "/bank.db", (char *)NULL);
    older = bank_db_open(p, "sqlite3", file, &err);
    CHECK(older && bank_migrate(older, apr_pstrcat(p, root, "/old", (char *)NULL), 0, fixture_quiet,
                                NULL, &res) == 0);
    if (!older || res.error) {
        fprintf(stderr, "older schema: %s\n", res.error ? res.error : err);
        return;
    }
    CHECK_STR(device_session(older, "none-yet"), "no column");
    fixture_customer(older, "Ada", "Obi", "right", &c);
    CHECK(attempt(older, c.email, "right", "192.0.2.1", &out) == BANK_SIGN_IN_OK);
    CHECK(bank_store_device_upsert(older, c.id, "dev-older", out.token_id, now) == BANK_DB_OK);
    CHECK_STR(device_session(older, "dev-older"), "no column");
    CHECK(bank_db_query_value(
              older, "SELECT count(*) FROM devices WHERE device_token = 'dev-older'", &err) == 0 &&
          err && strcmp(err, "1") == 0);
    /* the rest of the migrations, from another connection */
    other = bank_db_open(p, "sqlite3", file, &err);
    CHECK(other && bank_migrate(other, src, 0, fixture_quiet, NULL, &res) == 0);
    unit_log_clear();
    CHECK(bank_store_device_upsert(older, c.id, "dev-newer", out.token_id, now) == BANK_DB_OK);
    CHECK(unit_logged("BANK0808: SQLite connection prepared before the schema changed"));
    CHECK_STR(device_session(older, "dev-newer"), out.token_id);
    CHECK_STR(device_session(older, "dev-older"), "none");
    CHECK(system(apr_psprintf(p, "rm -rf %s", root)) == 0);
}

static void test_throttle(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_customer_t c;
    bank_sign_in_result_t out;
    char *upper;
    size_t i;

    fixture_customer(db, "Ada", "Obi", "right", &c);
    CHECK(attempt(db, c.email, "wrong", "192.0.2.2", &out) == BANK_SIGN_IN_REFUSED);
    CHECK_STR(out.why, "wrong password");
    CHECK(out.failures == 1 && out.remaining == 1);
    /* The key is the e-mail folded to ASCII lower case: one count for both spellings. */
    upper = apr_pstrdup(p, c.email);
    for (i = 0; upper[i] && upper[i] != '@'; i++) {
        upper[i] = bank_ascii_fold(upper[i], 1);
    }
    CHECK(attempt(db, upper, "wrong", "192.0.2.2", &out) == BANK_SIGN_IN_REFUSED);
    CHECK(out.failures == 2 && out.remaining == 0);
    /* The limit is reached: even the right password is not verified, nor counted. */
    CHECK(attempt(db, c.email, "right", "192.0.2.2", &out) == BANK_SIGN_IN_THROTTLED);
    CHECK(out.failures == 2 && out.retry_after >= 1 && out.retry_after <= 60);
    CHECK(!out.token);
    /* Another address has its own count. */
    CHECK(attempt(db, c.email, "right", "192.0.2.3", &out) == BANK_SIGN_IN_OK);
    /* A success clears the count of its own address. */
    CHECK(attempt(db, c.email, "wrong", "192.0.2.4", &out) == BANK_SIGN_IN_REFUSED);
    CHECK(attempt(db, c.email, "right", "192.0.2.4", &out) == BANK_SIGN_IN_OK);
    CHECK(out.failures == 1);
    CHECK(attempt(db, c.email, "wrong", "192.0.2.4", &out) == BANK_SIGN_IN_REFUSED);
    CHECK(out.failures == 1);
}

static void test_unknown_and_malformed(bank_db_t *db)
{
    bank_customer_t c;
    bank_sign_in_result_t out;

    CHECK(attempt(db, "nobody-here@example.com", "x", "192.0.2.5", &out) == BANK_SIGN_IN_REFUSED);
    CHECK_STR(out.why, "unknown e-mail");
    CHECK(!unit_logged("BANK0504"));
    fixture_customer(db, "Odd", "Hash", NULL, &c);
    unit_log_clear();
    CHECK(attempt(db, c.email, "x", "192.0.2.6", &out) == BANK_SIGN_IN_REFUSED);
    /* logged by the core, with the customer's id */
    CHECK(unit_logged(apr_psprintf(
        bank_db_pool(db), "BANK0504: customer %s: stored password hash is in no format", c.id)));
    CHECK_STR(out.customer.id, c.id);
}

/* The IP's own budget, whatever the e-mail: spent, every attempt is refused unverified. */
static void test_address(bank_db_t *db)
{
    bank_customer_t c;
    bank_sign_in_result_t out;
    int i;

    fixture_customer(db, "Ada", "Obi", "right", &c);
    for (i = 1; i <= 4; i++) {
        CHECK(attempt(db, apr_psprintf(bank_db_pool(db), "spray%d@example.com", i), "x",
                      "192.0.2.9", &out) == BANK_SIGN_IN_REFUSED);
        /* each new e-mail has 1 of its 2 left, the address 4 - i of its 4: the smaller is
         * told, with its limit */
        CHECK(out.remaining == (4 - i < 1 ? 4 - i : 1) && out.limit == (4 - i < 1 ? 4 : 2));
    }
    CHECK(attempt(db, "spray5@example.com", "x", "192.0.2.9", &out) == BANK_SIGN_IN_ADDRESS);
    CHECK(out.limit == 4 && out.address.failures == 4 && out.retry_after >= 1);
    CHECK(attempt(db, c.email, "right", "192.0.2.9", &out) == BANK_SIGN_IN_ADDRESS);
    CHECK(!out.token);
    CHECK(attempt(db, c.email, "right", "192.0.2.10", &out) == BANK_SIGN_IN_OK);
}

/* The e-mail's own budget, whatever the address: wrong passwords from rotated addresses
 * (each address's own budgets far from spent) reach it, then every attempt at that e-mail is
 * refused unverified, the right password too, from any address; other e-mails are not. */
static void test_account(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_customer_t c, other;
    bank_sign_in_result_t out;
    int i;

    fixture_customer(db, "Ada", "Obi", "right", &c);
    fixture_customer(db, "Bola", "Obi", "right", &other);
    for (i = 1; i <= 6; i++) {
        CHECK(attempt(db, c.email, "x", apr_psprintf(p, "198.51.100.%d", i), &out) ==
              BANK_SIGN_IN_REFUSED);
        CHECK(out.remaining == (6 - i < 1 ? 6 - i : 1));
    }
    CHECK(attempt(db, c.email, "x", "198.51.100.7", &out) == BANK_SIGN_IN_ACCOUNT);
    CHECK(out.limit == 6 && out.account.failures == 6 && out.retry_after >= 1 &&
          out.retry_after <= 60);
    CHECK(attempt(db, c.email, "right", "198.51.100.8", &out) == BANK_SIGN_IN_ACCOUNT);
    CHECK(!out.token);
    /* the ASCII case of the e-mail does not make another account */
    {
        char *upper = apr_pstrdup(p, c.email), *u;
        for (u = upper; *u; u++) {
            *u = (char)apr_toupper(*u);
        }
        CHECK(attempt(db, upper, "right", "198.51.100.9", &out) == BANK_SIGN_IN_ACCOUNT);
    }
    CHECK(attempt(db, other.email, "right", "198.51.100.1", &out) == BANK_SIGN_IN_OK);
}

/* IPv6: the per-address budget is the /64's, so rotating addresses inside one network does
 * not refill it; another /64 has its own. */
static void test_ipv6(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_sign_in_result_t out;
    int i;

    for (i = 1; i <= 4; i++) {
        CHECK(attempt(db, apr_psprintf(p, "v6spray%d-%d@example.com", i, getpid()), "x",
                      apr_psprintf(p, "2001:db8:5:6::%x", i * 7919), &out) == BANK_SIGN_IN_REFUSED);
    }
    CHECK(attempt(db, apr_psprintf(p, "v6spray5-%d@example.com", getpid()), "x",
                  "2001:db8:5:6:ffff:1:2:3", &out) == BANK_SIGN_IN_ADDRESS);
    CHECK(attempt(db, apr_psprintf(p, "v6spray6-%d@example.com", getpid()), "x", "2001:db8:5:7::1",
                  &out) == BANK_SIGN_IN_REFUSED);
}

/* The address a budget counts (pure). */
static void test_address_key(apr_pool_t *p)
{
    CHECK_STR(bank_throttle_address(p, "192.0.2.1"), "192.0.2.1");
    CHECK_STR(bank_throttle_address(p, "::ffff:192.0.2.1"), "192.0.2.1");
    CHECK_STR(bank_throttle_address(p, "2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
    CHECK_STR(bank_throttle_address(p, "2001:DB8:1:2::ffff"), "2001:db8:1:2::/64");
    CHECK_STR(bank_throttle_address(p, "::1"), "::/64");
    CHECK_STR(bank_throttle_address(p, "fe80::1"), "fe80::/64");
    CHECK_STR(bank_throttle_address(p, "not:an address"), "not:an address");
    CHECK(bank_throttle_address(p, NULL) == NULL);
}

/* A failure prunes rows whose window ended long ago. */
static void test_prune(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_sign_in_result_t out;
    bank_throttle_t t;
    apr_time_t now = apr_time_now();
    const char *long_ago = bank_time_iso(p, now - apr_time_from_sec(3 * 86400));
    const char *older = bank_time_iso(p, now - apr_time_from_sec(4 * 86400));

    CHECK(bank_store_count_fail(db, BANK_COUNTS_SIGN_IN, "old@example.com", "192.0.2.7", long_ago,
                                long_ago, &t) == BANK_DB_OK);
    CHECK(bank_store_count_get(db, BANK_COUNTS_SIGN_IN, "old@example.com", "192.0.2.7", older,
                               &t) == BANK_DB_OK &&
          t.failures == 1);
    unit_log_clear();
    CHECK(attempt(db, "someone@example.com", "x", "192.0.2.8", &out) == BANK_SIGN_IN_REFUSED);
    CHECK(!unit_logged("BANK0508"));
    CHECK(bank_store_count_get(db, BANK_COUNTS_SIGN_IN, "old@example.com", "192.0.2.7", older,
                               &t) == BANK_DB_OK &&
          t.failures == 0);
}

/* A prune that fails costs the attempt nothing: the verdict stands, and the core logs it
 * without the e-mail (a trigger refuses to delete one old row). */
static void test_prune_fails(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_sign_in_result_t out;
    bank_throttle_t t;
    int pg = strcmp(fixture_driver, "pgsql") == 0;
    const char *long_ago = bank_time_iso(p, apr_time_now() - apr_time_from_sec(3 * 86400));

    CHECK(bank_store_count_fail(db, BANK_COUNTS_SIGN_IN, "stuck@example.com", "192.0.2.11",
                                long_ago, long_ago, &t) == BANK_DB_OK);
    if (pg) {
        CHECK(bank_db_query(db,
                            "CREATE FUNCTION unit_no_prune() RETURNS trigger LANGUAGE plpgsql"
                            " AS $$BEGIN IF old.email = 'stuck@example.com' THEN RAISE"
                            " EXCEPTION 'unit: prune refused'; END IF; RETURN old; END$$") == 0);
        CHECK(bank_db_query(db, "CREATE TRIGGER unit_no_prune BEFORE DELETE ON sign_in_attempts"
                                " FOR EACH ROW EXECUTE FUNCTION unit_no_prune()") == 0);
    } else {
        CHECK(bank_db_query(db, "CREATE TRIGGER unit_no_prune BEFORE DELETE ON"
                                " sign_in_attempts WHEN old.email = 'stuck@example.com'"
                                " BEGIN SELECT RAISE(ABORT, 'unit: prune refused'); END") == 0);
    }
    unit_log_clear();
    CHECK(attempt(db, "prune-me@example.com", "x", "192.0.2.12", &out) == BANK_SIGN_IN_REFUSED);
    if (!pg) {
        CHECK(unit_logged("BANK0808: SQLite connection prepared before the schema changed"));
    }
    CHECK(unit_logged("BANK0508: could not prune sign-in throttle rows: "));
    CHECK(unit_logged("unit: prune refused"));
    CHECK(!unit_logged("@example.com"));
    CHECK(attempt(db, "prune-me@example.com", "x", "192.0.2.12", &out) == BANK_SIGN_IN_REFUSED);
    CHECK(out.failures == 2);
    CHECK(bank_db_query(db, pg ? "DROP TRIGGER unit_no_prune ON sign_in_attempts"
                               : "DROP TRIGGER unit_no_prune") == 0);
    if (pg) {
        CHECK(bank_db_query(db, "DROP FUNCTION unit_no_prune()") == 0);
    }
    unit_log_clear();
    CHECK(attempt(db, "prune-me2@example.com", "x", "192.0.2.13", &out) == BANK_SIGN_IN_REFUSED);
    CHECK(!unit_logged("BANK0508"));
    /* On SQLite each schema change (the trigger made, then dropped) expired the connection's
     * statements: it was replaced, and the attempt ran on the new one. */
    if (!pg) {
        CHECK(unit_logged("BANK0808: SQLite connection prepared before the schema changed"));
    }
}

static void test_retry_after(void)
{
    apr_time_t now = APR_INT64_C(1795333222123) * 1000;

    /* 2026-11-22T07:40:22.123Z started 20.5 s ago, a 60 s window: 40 s left, rounded up. */
    CHECK(bank_throttle_retry_after("2026-11-22T07:40:01.623Z", 60, now) == 40);
    CHECK(bank_throttle_retry_after("2026-11-22T07:38:00.000Z", 60, now) == 1);  /* expired */
    CHECK(bank_throttle_retry_after("2026-11-22T07:45:00.000Z", 60, now) == 60); /* ahead */
    CHECK(bank_throttle_retry_after("garbage", 60, now) == 60);
}

/* The verification bound's defaults leave half of a process's threads free: on any CPU count
 * the queued sign-ins cannot hold every thread, so a sign-in beyond them is refused at once. */
static void test_defaults(void)
{
    int cpus, threads;

    CHECK(bank_sign_in_default_concurrency(2, 16) == 2);
    CHECK(bank_sign_in_default_waiting(2, 16) == 6); /* 2 + 6 = 8 of 16 */
    CHECK(bank_sign_in_default_concurrency(2, 25) == 2);
    CHECK(bank_sign_in_default_waiting(2, 25) == 10);
    CHECK(bank_sign_in_default_concurrency(64, 25) == 12);
    CHECK(bank_sign_in_default_waiting(12, 25) == 0);
    CHECK(bank_sign_in_default_concurrency(1, 1000) == 1);
    CHECK(bank_sign_in_default_waiting(1, 1000) == BANK_SIGN_IN_WAIT_FACTOR);
    CHECK(bank_sign_in_default_concurrency(8, 1) == 1); /* prefork: one thread */
    CHECK(bank_sign_in_default_waiting(1, 1) == 0);
    CHECK(bank_sign_in_default_waiting(4, 2) == 0); /* N set above the threads */
    for (cpus = 1; cpus <= 256; cpus *= 2) {
        for (threads = 1; threads <= 512; threads += 7) {
            int n = bank_sign_in_default_concurrency(cpus, threads),
                w = bank_sign_in_default_waiting(n, threads);
            CHECK(n >= 1 && n <= cpus && w >= 0);
            CHECK(threads < 2 || n + w <= threads / 2);
        }
    }
}

/* A host runner with no room (bank_sign_in_runner_fn), and one that runs the job here. */
static int full(void *baton, const bank_sign_in_job_t *job)
{
    (void)job;
    ++*(int *)baton;
    return 1;
}

static int here(void *baton, const bank_sign_in_job_t *job)
{
    ++*(int *)baton;
    job->one(job->arg);
    return 0;
}

static void test_runner(bank_db_t *db)
{
    bank_customer_t c;
    bank_sign_in_result_t out;
    bank_sign_in_t in;
    int calls = 0;

    fixture_customer(db, "Ada", "Obi", "right", &c);
    in = request(c.email, "wrong", "192.0.2.8");
    /* No room: BUSY, the password not verified and no failure counted. */
    in.run = full;
    in.run_baton = &calls;
    CHECK(bank_sign_in(db, &in, &out) == BANK_DB_OK);
    CHECK(out.verdict == BANK_SIGN_IN_BUSY && calls == 1 && !out.token);
    /* The verification goes through the runner, once per sign-in, right or wrong; the
     * wrong one is the first failure counted (the BUSY one was not). */
    in.run = here;
    CHECK(bank_sign_in(db, &in, &out) == BANK_DB_OK);
    CHECK(out.verdict == BANK_SIGN_IN_REFUSED && calls == 2 && out.failures == 1);
    in.password = "right";
    CHECK(bank_sign_in(db, &in, &out) == BANK_DB_OK);
    CHECK(out.verdict == BANK_SIGN_IN_OK && calls == 3 && out.token);
}

/* A host that lends its connection (bank_sign_in_t's give_back and take) and a runner that
 * sees whether it is lent while the password is verified. */
typedef struct {
    bank_db_t *db;
    int held, gave, took, held_while_verifying, none_left;
} lender_t;

static void lender_give_back(void *baton)
{
    lender_t *l = baton;
    l->held = 0;
    l->gave++;
}

static bank_db_t *lender_take(void *baton)
{
    lender_t *l = baton;
    if (l->none_left) {
        return NULL;
    }
    l->held = 1;
    l->took++;
    return l->db;
}

static int watching(void *baton, const bank_sign_in_job_t *job)
{
    lender_t *l = baton;
    l->held_while_verifying += l->held;
    job->one(job->arg);
    return 0;
}

static void test_connection_lent(bank_db_t *db)
{
    bank_customer_t c;
    bank_sign_in_result_t out;
    bank_sign_in_t in;
    lender_t l = {db, 1, 0, 0, 0, 0};

    fixture_customer(db, "Ada", "Obi", "right", &c);
    in = request(c.email, "right", "192.0.2.77");
    in.run = watching;
    in.run_baton = &l;
    in.give_back = lender_give_back;
    in.take = lender_take;
    in.db_baton = &l;
    /* right and wrong: no connection held while verifying, one taken again for the writes */
    CHECK(bank_sign_in(db, &in, &out) == BANK_DB_OK);
    CHECK(out.verdict == BANK_SIGN_IN_OK && out.token && out.db == db);
    CHECK(l.gave == 1 && l.took == 1 && l.held_while_verifying == 0 && l.held == 1);
    in.password = "wrong";
    CHECK(bank_sign_in(db, &in, &out) == BANK_DB_OK);
    CHECK(out.verdict == BANK_SIGN_IN_REFUSED && out.failures == 1);
    CHECK(l.gave == 2 && l.took == 2 && l.held_while_verifying == 0);
    /* none to be had after the verification: a database failure, nothing issued or counted */
    l.none_left = 1;
    in.password = "right";
    unit_log_clear();
    CHECK(bank_sign_in(db, &in, &out) == BANK_DB_ERROR);
    CHECK(!out.token && !out.db);
    CHECK(unit_logged("BANK1903: sign-in: connection after the password check failed"));
    l.none_left = 0;
    in.password = "wrong";
    CHECK(bank_sign_in(db, &in, &out) == BANK_DB_OK);
    CHECK(out.verdict == BANK_SIGN_IN_REFUSED && out.failures == 2);
}

/* n customers whose stored hash is `hash` (as an import from another service leaves them). */
static void customers_with(bank_db_t *db, const char *hash, int n)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_customer_t c;
    int i;

    for (i = 0; i < n; i++) {
        fixture_customer(db, "Imp", "Orted", NULL, &c);
        CHECK(bank_db_query(db,
                            apr_psprintf(p, "UPDATE customers SET password = '%s' WHERE id = '%s'",
                                         hash, c.id)) == 0);
    }
}

/* A sign-in of an unknown e-mail at `now`; the dummy it leaves. */
static const char *dummy_after(bank_db_t *db, apr_time_t now)
{
    bank_sign_in_t in = request("nobody-here@example.com", "guess", "192.0.2.90");
    bank_sign_in_result_t out;

    in.now = now;
    in.addr_attempts = 1000;
    CHECK(bank_sign_in(db, &in, &out) == BANK_DB_OK);
    CHECK(out.verdict == BANK_SIGN_IN_REFUSED || out.verdict == BANK_SIGN_IN_OVER);
    return bank_password_dummy_copy(bank_db_pool(db));
}

/* The hash an unknown e-mail is verified against follows the stored hashes' most common
 * algorithm and parameters, sampled again after BANK_PW_DUMMY_REFRESH seconds. */
static void test_dummy_follows(bank_db_t *db)
{
    apr_time_t t0 = apr_time_now(), later = t0 + apr_time_from_sec(BANK_PW_DUMMY_REFRESH + 1);
    const char *d;

    bank_sign_in_forget_dummy();
    CHECK_STR(bank_password_dummy_copy(bank_db_pool(db)), bank_password_dummy());
    /* bcrypt cost 5 (the MCF form) the most common */
    customers_with(db, "$2y$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6", 120);
    d = dummy_after(db, t0);
    CHECK(strncmp(d, "$2b$05$", 7) == 0 && strlen(d) == 60);
    CHECK(bank_password_verify(bank_db_pool(db), "password", d) == BANK_PW_MISMATCH);
    /* argon2 now the most common: within the refresh time the dummy stays, after it follows */
    customers_with(db,
                   "$argon2id$v=19$m=128,p=1,t=1$Nm/QC06YltQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJzYm8"
                   "nzVvXd9r5n1Fvw4M1po",
                   300);
    CHECK(strncmp(dummy_after(db, t0 + apr_time_from_sec(10)), "$2b$05$", 7) == 0);
    d = dummy_after(db, later);
    CHECK(strncmp(d, "$argon2id$v=19$m=128,t=1,p=1$", 29) == 0);
    CHECK(bank_password_verify(bank_db_pool(db), "password", d) == BANK_PW_MISMATCH);
    bank_sign_in_forget_dummy();
}

static void all(bank_db_t *db)
{
    test_runner(db);
    test_connection_lent(db);
    test_success(db);
    test_throttle(db);
    test_unknown_and_malformed(db);
    test_prune(db);
    test_prune_fails(db);
    test_address(db);
    test_account(db);
    test_ipv6(db);
    test_dummy_follows(db);
}

static void run_tests(apr_pool_t *p)
{
    test_address_key(p);
    test_retry_after();
    test_defaults();
    fixture_each(p, all);
    fixture_keys(p);
    test_older_schema(p);
}
