/* Real databases for the C tests of the core's rules: a fresh SQLite file migrated with the
 * checkout's sql/ (always), and the PostgreSQL database of BANK_TEST_PG_PARAMS when set
 * (scripts/run-tests sets it under DB=pgsql, on a migrated database). */
#ifndef BANK_DB_FIXTURE_H
#define BANK_DB_FIXTURE_H

#include <stdlib.h>
#include <unistd.h>
#include <apr_strings.h>
#include <apr_file_io.h>
#include <apr_time.h>
#include "bank_crypt.h"
#include "bank_db.h"
#include "bank_encoding.h"
#include "bank_migrate.h"
#include "bank_password.h"
#include "bank_store.h"
#include "bank_time.h"
#include "bank_uuid.h"

static void fixture_quiet(void *baton, const char *line)
{
    (void)baton;
    (void)line;
}

/* Registered before the database opens, so it runs after the database is closed. */
static apr_status_t fixture_rmdir(void *data)
{
    const char *dir = data;
    static const char *const files[] = {"bank.db", "bank.db-wal", "bank.db-shm"};
    char path[256];
    size_t i;

    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return APR_SUCCESS;
}

/* The driver and params of the database the last fixture_sqlite / fixture_pgsql opened, for
 * a test that opens more connections to it. */
static const char *fixture_driver, *fixture_params;

/* A migrated SQLite database in a new directory (removed with p), or NULL. */
static bank_db_t *fixture_sqlite(apr_pool_t *p)
{
    char *dir = apr_pstrdup(p, "/tmp/mod_bank-unit.XXXXXX");
    const char *err = NULL, *sql = getenv("BANK_TEST_SQL_DIR");
    bank_migrate_result_t res = {NULL, 0};
    bank_db_t *db;

    if (!mkdtemp(dir)) {
        return NULL;
    }
    apr_pool_cleanup_register(p, dir, fixture_rmdir, apr_pool_cleanup_null);
    fixture_driver = "sqlite3";
    fixture_params = apr_pstrcat(p, dir, "/bank.db", (char *)NULL);
    db = bank_db_open(p, fixture_driver, fixture_params, &err);
    if (!db) {
        fprintf(stderr, "fixture: %s\n", err);
        return NULL;
    }
    bank_db_query(db, "PRAGMA foreign_keys = ON");
    if (bank_migrate(db, sql ? sql : "sql", 0, fixture_quiet, NULL, &res) != 0) {
        fprintf(stderr, "fixture: %s\n", res.error);
        return NULL;
    }
    return db;
}

/* The migrated PostgreSQL database of BANK_TEST_PG_PARAMS, or NULL when unset. */
static bank_db_t *fixture_pgsql(apr_pool_t *p)
{
    const char *params = getenv("BANK_TEST_PG_PARAMS"), *err = NULL;
    bank_db_t *db;

    if (!params || !*params) {
        return NULL;
    }
    fixture_driver = "pgsql";
    fixture_params = params;
    if (!(db = bank_db_open(p, "pgsql", params, &err)) || (err = bank_db_prepare_all(db))) {
        fprintf(stderr, "fixture: %s\n", err);
        return NULL;
    }
    return db;
}

/* The identity keys the store seals with: the suite's (BANK_TEST_KEYS, so that its
 * httpd accepts the database afterwards), else keys of this run. */
static void fixture_keys(apr_pool_t *p)
{
    static const unsigned char enc[BANK_KEY_LEN] = "unit-test-encryption-key-32bytes";
    static const unsigned char hash[BANK_KEY_LEN] = "unit-test-hash-key-of-32-bytes!!";
    const char *file = getenv("BANK_TEST_KEYS"), *err = NULL;
    bank_keyring_t *kr = NULL;

    if (file && *file) {
        err = bank_keyring_read_conf(p, file, &kr);
    } else {
        kr = bank_keyring_make(p);
        bank_keyring_add(kr, "unit", enc, 1);
        bank_keyring_set_hash_key(kr, hash);
    }
    if (err) {
        fprintf(stderr, "fixture: %s\n", err);
    }
    bank_crypt_use(kr);
}

/* Runs fn on a fresh SQLite database and, with BANK_TEST_PG_PARAMS, on PostgreSQL. */
static __attribute__((unused)) void fixture_each(apr_pool_t *p, void (*fn)(bank_db_t *db))
{
    bank_db_t *lite, *pg = NULL;

    fixture_keys(p);
    lite = fixture_sqlite(p);

    CHECK(lite != NULL);
    if (lite) {
        fn(lite);
    }
    if (getenv("BANK_TEST_PG_PARAMS")) {
        pg = fixture_pgsql(p);
        CHECK(pg != NULL);
        if (pg) {
            fn(pg);
        }
    }
}

static int fixture_seq;

/* A new customer with this password (NULL: a hash no format reads); its record in *c. */
static __attribute__((unused)) void fixture_customer(bank_db_t *db, const char *first,
                                                     const char *last, const char *password,
                                                     bank_customer_t *c)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *now = bank_time_iso(p, apr_time_now());

    memset(c, 0, sizeof(*c));
    c->id = bank_uuid4(p);
    c->email = apr_psprintf(p, "unit%d.%s@example.com", ++fixture_seq, c->id);
    c->password = password ? bank_password_hash(p, password) : "no-format-at-all";
    c->first_name = first;
    c->last_name = last;
    c->phone = "+2348012345678";
    c->created_at = c->updated_at = now;
    CHECK(bank_store_customer_insert(db, c) == BANK_DB_OK);
}

/* An account of customer c whose partner id is wallet (a notice's walletId names it). */
static __attribute__((unused)) void fixture_account(bank_db_t *db, const bank_customer_t *c,
                                                    const char *wallet)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_account_t a;

    memset(&a, 0, sizeof(a));
    a.id = bank_uuid4(p);
    a.customer_id = c->id;
    a.bank_name = "Unit Bank";
    a.bank_account_id = wallet;
    a.account_name = "ADA OBI";
    a.account_number = apr_psprintf(p, "%010d", (getpid() * 100 + ++fixture_seq) % 1000000000);
    a.created_at = a.updated_at = "2000-01-01T00:00:00.000Z";
    CHECK(bank_store_account_insert(db, &a, NULL) == BANK_DB_OK);
}

/* A fresh 11-digit BVN with an identity record. */
static __attribute__((unused)) const char *fixture_bvn(bank_db_t *db, const char *first,
                                                       const char *last, const char *dob)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_bvn_record_t rec = {NULL, first, last, dob, NULL};
    unsigned long n = (unsigned long)apr_time_now() % 100000000UL;

    rec.bvn = apr_psprintf(p, "%03d%08lu", ++fixture_seq % 1000, n);
    CHECK(bank_store_bvn_record_upsert(db, &rec, bank_time_iso(p, apr_time_now())) == BANK_DB_OK);
    return rec.bvn;
}

/* A customer and an identity record that matches them; the BVN. */
static __attribute__((unused)) const char *fixture_verifiable(bank_db_t *db, const char *first,
                                                              const char *last, const char *dob,
                                                              bank_customer_t *c)
{
    fixture_customer(db, first, last, "pw", c);
    return fixture_bvn(db, first, last, dob);
}

/* A fund_transfer notice to store (bank_store_notice_put): fields set, reference ref, walletId
 * wallet, received at now, partner "unit". */
static __attribute__((unused)) bank_notice_put_t *
fixture_notice(bank_db_t *db, const char *ref, const char *wallet, const char *now)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_notice_t *n = apr_pcalloc(p, sizeof(*n));
    bank_notice_put_t *put = apr_pcalloc(p, sizeof(*put));

    n->service = "payments";
    n->type = "fund_transfer";
    n->status = "received";
    n->amount = "5000";
    n->currency = "NGN";
    n->receiver_account_name = "ADA OBI";
    n->status_code = "T100";
    n->status_message = "Transfer successful";
    n->transaction_reference = ref;
    n->wallet_id = wallet;
    put->n = n;
    put->id = bank_uuid4(p);
    put->partner = "unit";
    put->raw = "{}";
    put->now = now;
    return put;
}

/* Payment notices whose transaction_reference is LIKE pattern, or -1 if it cannot be read. */
static __attribute__((unused)) long fixture_notices(bank_db_t *db, const char *pattern)
{
    const char *v = NULL;

    if (bank_db_query_value(db,
                            apr_psprintf(bank_db_pool(db),
                                         "SELECT count(*) FROM payment_notices WHERE "
                                         "transaction_reference LIKE '%s'",
                                         pattern),
                            &v) != 0) {
        return -1;
    }
    return v ? atol(v) : -1;
}

#endif
