/* The identity keys as the database knows them, and the sealing of rows in batches
 * (bank_store.h): each key's check value, the keys rows are sealed with, and the pass of
 * `bankctl rekey` that seals plain rows and moves rows sealed under an older key to the
 * current one, a batch per transaction, while the server runs. */
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "bank_crypt.h"
#include "bank_sql.h"
#include "bank_store.h"
#include "bank_time.h"

/* clang-format off */
const bank_stmt_t bank_store_identity_sql[] = {
    {"bank_identity_key_add",
     "INSERT INTO identity_keys (kind, id, check_value, created_at) VALUES (%s, %s, %s, %pDz)"
     " ON CONFLICT (kind, id) DO NOTHING"},
    {"bank_identity_key_get",
     "SELECT check_value FROM identity_keys WHERE kind = %s AND id = %s"},
    /* The key ids rows are sealed with, and how many rows are still plain. */
    {"bank_identity_keys_used",
     "SELECT crypt_key FROM customers WHERE crypt_key IS NOT NULL UNION"
     " SELECT crypt_key FROM bvn_records WHERE crypt_key IS NOT NULL"},
    {"bank_identity_plain_count",
     "SELECT (SELECT count(*) FROM customers WHERE bvn IS NOT NULL AND crypt_key IS NULL)"
     " + (SELECT count(*) FROM bvn_records WHERE crypt_key IS NULL)"},
    /* Rows not (yet) sealed with the current key. Args: the current key id, the batch size. */
    {"bank_identity_customers_to_seal",
     "SELECT id, bvn, crypt_key FROM customers WHERE bvn IS NOT NULL"
     " AND (crypt_key IS NULL OR crypt_key <> %s) ORDER BY id LIMIT %d"},
    {"bank_identity_records_to_seal",
     "SELECT bvn, first_name, last_name, date_of_birth, phone, bvn_hash, crypt_key"
     " FROM bvn_records WHERE crypt_key IS NULL OR crypt_key <> %s ORDER BY bvn LIMIT %d"},
    /* Each row only as it was read (its old key, '' for plain): a row the server rewrote
     * meanwhile is left as the server wrote it. */
    {"bank_identity_customer_reseal",
     "UPDATE customers SET bvn = %s, bvn_hash = %s, crypt_key = %s"
     " WHERE id = {uuid} AND COALESCE(crypt_key, '') = %s"},
    {"bank_identity_record_reseal",
     "UPDATE bvn_records SET bvn = %s, first_name = %s, last_name = %s, date_of_birth = %s,"
     " phone = %s, bvn_hash = %s, crypt_key = %s WHERE bvn = %s AND COALESCE(crypt_key, '') = %s"},
    /* A plain record whose BVN was written sealed since: the sealed one is newer. */
    {"bank_identity_record_drop_stale",
     "DELETE FROM bvn_records WHERE bvn = %s AND crypt_key IS NULL"
     " AND EXISTS (SELECT 1 FROM bvn_records s WHERE s.bvn_hash = %s)"},
    {NULL, NULL}};
/* clang-format on */

typedef struct {
    const char *text;
} text_row_t;
static const bank_col_t text_cols[] = {BANK_COL(TEXT, text_row_t, text), BANK_COL_LAST};

typedef struct {
    apr_int64_t n;
} count_row_t;
static const bank_col_t count_cols[] = {BANK_COL(INT64, count_row_t, n), BANK_COL_LAST};

typedef struct {
    const char *id, *bvn, *crypt_key;
} customer_seal_t;
static const bank_col_t customer_seal_cols[] = {
    BANK_COL(TEXT, customer_seal_t, id), BANK_COL(TEXT, customer_seal_t, bvn),
    BANK_COL(TEXT, customer_seal_t, crypt_key), BANK_COL_LAST};

typedef struct {
    bank_bvn_record_t rec;
    const char *hash, *crypt_key;
} record_seal_t;
static const bank_col_t record_seal_cols[] = {
    BANK_COL(TEXT, record_seal_t, rec.bvn),       BANK_COL(TEXT, record_seal_t, rec.first_name),
    BANK_COL(TEXT, record_seal_t, rec.last_name), BANK_COL(TEXT, record_seal_t, rec.date_of_birth),
    BANK_COL(TEXT, record_seal_t, rec.phone),     BANK_COL(TEXT, record_seal_t, hash),
    BANK_COL(TEXT, record_seal_t, crypt_key),     BANK_COL_LAST};

/* ---- key check values ---- */

/* Records the check value of a key first seen, then compares: *differs 1 for a wrong key. */
static bank_db_rc check_key(bank_db_t *db, const char *kind, const char *id,
                            const unsigned char *key, int *differs)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *cv = bank_key_check_value(p, key, kind), *now = bank_time_iso(p, apr_time_now());
    const char *add[] = {kind, id, cv, now}, *get[] = {kind, id};
    text_row_t row;
    bank_db_rc rc;

    if (!cv) {
        return bank_db_fail(db, "cannot compute a key check value");
    }
    if ((rc = bank_db_exec(db, "bank_identity_key_add", NULL, BANK_NARGS(add), add)) !=
            BANK_DB_OK ||
        (rc = bank_db_row(db, "bank_identity_key_get", BANK_NARGS(get), get, text_cols, &row,
                          sizeof(row))) != BANK_DB_OK) {
        return rc;
    }
    *differs = !row.text || strcmp(row.text, cv) != 0;
    return BANK_DB_OK;
}

bank_db_rc bank_store_identity_keys_check(bank_db_t *db, const bank_keyring_t *kr,
                                          const char **wrong)
{
    apr_pool_t *p = bank_db_pool(db);
    apr_array_header_t *used = NULL;
    const unsigned char *key;
    bank_db_rc rc;
    int i, j, differs = 0;

    *wrong = NULL;
    if ((rc = check_key(db, "hash", "", bank_keyring_hash_key(kr), &differs)) != BANK_DB_OK) {
        return rc;
    }
    if (differs) {
        *wrong = "the hash key is not the one this database's BVNs were hashed with";
        return BANK_DB_OK;
    }
    for (i = 0; i < bank_keyring_count(kr); i++) {
        const char *id = bank_keyring_key_at(kr, i, &key);
        if ((rc = check_key(db, "enc", id, key, &differs)) != BANK_DB_OK) {
            return rc;
        }
        if (differs) {
            *wrong = apr_pstrcat(p, "the key ", id,
                                 " is not the one this database knows under that id", (char *)NULL);
            return BANK_DB_OK;
        }
    }
    if ((rc = bank_db_rows(db, "bank_identity_keys_used", 0, NULL, text_cols, sizeof(text_row_t),
                           &used)) != BANK_DB_OK) {
        return rc;
    }
    for (j = 0; j < used->nelts; j++) {
        const char *id = APR_ARRAY_IDX(used, j, text_row_t).text;
        for (i = 0; i < bank_keyring_count(kr) && strcmp(bank_keyring_key_at(kr, i, &key), id);
             i++) {
        }
        if (i == bank_keyring_count(kr)) {
            *wrong = apr_pstrcat(p, "rows are sealed with the key ", id,
                                 ", which is not configured", (char *)NULL);
            return BANK_DB_OK;
        }
    }
    return BANK_DB_OK;
}

bank_db_rc bank_store_identity_plain(bank_db_t *db, apr_int64_t *count)
{
    count_row_t row;
    bank_db_rc rc =
        bank_db_row(db, "bank_identity_plain_count", 0, NULL, count_cols, &row, sizeof(row));

    *count = rc == BANK_DB_OK ? row.n : 0;
    return rc;
}

/* ---- sealing in batches ---- */

typedef struct {
    const bank_keyring_t *kr;
    int limit;
    int done;
} reseal_t;

/* A plain value as it is; a sealed one opened (key: the row's key id). */
static bank_db_rc plain_of(bank_db_t *db, reseal_t *r, const char *key, const char *column,
                           const char *row, const char **value)
{
    const char *why;

    if (!key || !*value) {
        return BANK_DB_OK;
    }
    why = bank_open_in_place(bank_db_pool(db), r->kr, column, row, value);
    return why ? bank_db_fail(db, why) : BANK_DB_OK;
}

static const char *seal(bank_db_t *db, reseal_t *r, const char *column, const char *row,
                        const char *plain)
{
    return plain ? bank_seal(bank_db_pool(db), r->kr, column, row, plain) : NULL;
}

static bank_db_rc reseal_customers(bank_db_t *db, reseal_t *r)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *cur = bank_keyring_current(r->kr), *lim = apr_itoa(p, r->limit);
    const char *sel[] = {cur, lim};
    apr_array_header_t *rows = NULL;
    bank_db_rc rc;
    int i, changed;

    if ((rc = bank_db_rows(db, "bank_identity_customers_to_seal", BANK_NARGS(sel), sel,
                           customer_seal_cols, sizeof(customer_seal_t), &rows)) != BANK_DB_OK) {
        return rc;
    }
    for (i = 0; i < rows->nelts; i++) {
        customer_seal_t *c = &APR_ARRAY_IDX(rows, i, customer_seal_t);
        const char *bvn = c->bvn, *sealed, *hash;
        if ((rc = plain_of(db, r, c->crypt_key, "customers.bvn", c->id, &bvn)) != BANK_DB_OK) {
            return rc;
        }
        sealed = seal(db, r, "customers.bvn", c->id, bvn);
        hash = bank_blind_hash(p, r->kr, "bvn", bvn);
        if (!sealed || !hash) {
            return bank_db_fail(db, "cannot seal a customer's BVN");
        }
        {
            const char *args[] = {sealed, hash, cur, c->id, c->crypt_key ? c->crypt_key : ""};
            if ((rc = bank_db_exec(db, "bank_identity_customer_reseal", &changed, BANK_NARGS(args),
                                   args)) != BANK_DB_OK) {
                return rc;
            }
        }
        r->done += changed;
    }
    return BANK_DB_OK;
}

/* One record: its values opened (sealed) or taken (plain), sealed with the current key. */
static bank_db_rc reseal_record(bank_db_t *db, reseal_t *r, record_seal_t *row)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *cur = bank_keyring_current(r->kr), *old_bvn = row->rec.bvn, *h;
    bank_bvn_record_t v = row->rec;
    bank_db_rc rc;
    int changed = 0;

    if ((rc = plain_of(db, r, row->crypt_key, "bvn_records.bvn", row->hash, &v.bvn)) !=
            BANK_DB_OK ||
        (rc = plain_of(db, r, row->crypt_key, "bvn_records.first_name", row->hash,
                       &v.first_name)) != BANK_DB_OK ||
        (rc = plain_of(db, r, row->crypt_key, "bvn_records.last_name", row->hash, &v.last_name)) !=
            BANK_DB_OK ||
        (rc = plain_of(db, r, row->crypt_key, "bvn_records.date_of_birth", row->hash,
                       &v.date_of_birth)) != BANK_DB_OK ||
        (rc = plain_of(db, r, row->crypt_key, "bvn_records.phone", row->hash, &v.phone)) !=
            BANK_DB_OK) {
        return rc;
    }
    if (!(h = bank_blind_hash(p, r->kr, "bvn", v.bvn))) {
        return bank_db_fail(db, "no hash key");
    }
    if (!row->crypt_key) {
        const char *args[] = {old_bvn, h};
        if ((rc = bank_db_exec(db, "bank_identity_record_drop_stale", &changed, BANK_NARGS(args),
                               args)) != BANK_DB_OK) {
            return rc;
        }
        if (changed) {
            r->done++;
            return BANK_DB_OK;
        }
    }
    {
        const char *args[] = {seal(db, r, "bvn_records.bvn", h, v.bvn),
                              seal(db, r, "bvn_records.first_name", h, v.first_name),
                              seal(db, r, "bvn_records.last_name", h, v.last_name),
                              seal(db, r, "bvn_records.date_of_birth", h, v.date_of_birth),
                              seal(db, r, "bvn_records.phone", h, v.phone),
                              h,
                              cur,
                              old_bvn,
                              row->crypt_key ? row->crypt_key : ""};
        if (!args[0] || !args[1] || !args[2] || !args[3] || (v.phone && !args[4])) {
            return bank_db_fail(db, "cannot seal an identity record");
        }
        rc = bank_db_exec(db, "bank_identity_record_reseal", &changed, BANK_NARGS(args), args);
    }
    r->done += changed;
    return rc;
}

static bank_db_rc reseal_records(bank_db_t *db, reseal_t *r)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *sel[] = {bank_keyring_current(r->kr), apr_itoa(p, r->limit)};
    apr_array_header_t *rows = NULL;
    bank_db_rc rc;
    int i;

    if ((rc = bank_db_rows(db, "bank_identity_records_to_seal", BANK_NARGS(sel), sel,
                           record_seal_cols, sizeof(record_seal_t), &rows)) != BANK_DB_OK) {
        return rc;
    }
    for (i = 0; i < rows->nelts && rc == BANK_DB_OK; i++) {
        rc = reseal_record(db, r, &APR_ARRAY_IDX(rows, i, record_seal_t));
    }
    return rc;
}

static bank_db_rc reseal_txn(bank_db_t *db, void *baton)
{
    reseal_t *r = baton;
    bank_db_rc rc;

    r->done = 0;
    if ((rc = reseal_customers(db, r)) != BANK_DB_OK) {
        return rc;
    }
    return reseal_records(db, r);
}

bank_db_rc bank_store_identity_reseal(bank_db_t *db, const bank_keyring_t *kr, int limit, int *done)
{
    reseal_t r = {kr, limit, 0};
    bank_db_rc rc;

    *done = 0;
    if (bank_keyring_incomplete(kr)) {
        return bank_db_fail(db, bank_keyring_incomplete(kr));
    }
    rc = bank_db_transaction(db, reseal_txn, &r);
    *done = rc == BANK_DB_OK ? r.done : 0;
    return rc;
}
