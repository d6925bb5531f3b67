/* Customers, identity-provider (BVN) records and accounts: their statements, the columns
 * each SELECT returns, and the typed functions over them (bank_store.h). A customer's BVN
 * and the identity records are sealed here (bank_crypt.h) on the way in and opened on the
 * way out: callers see plain values. A row whose crypt_key is NULL was written before the
 * values were sealed and is read as it is (until `bankctl rekey` seals it); a sealed BVN
 * never equals 11 digits, so a lookup matches the keyed hash or, for such a row, the BVN. */
#include <string.h>
#include <apr_strings.h>
#include "bank_crypt.h"
#include "bank_encoding.h"
#include "bank_sql.h"
#include "bank_store.h"

/* clang-format off */
const bank_stmt_t bank_store_customer_sql[] = {
    /* customer_cols. By email_key, the e-mail with A-Z folded only
     * (sql/sqlite/004_email_key.sql): the argument is folded here with bank_ascii_lower,
     * never by SQL lower(), which folds more under a UTF-8 locale. */
    {"bank_customer_by_email",
     "SELECT id, email, password, first_name, last_name, phone, email_verified, bvn,"
     " referral_code, created_at, updated_at, crypt_key FROM customers WHERE email_key = %s"},
    {"bank_customer_by_id",
     "SELECT id, email, password, first_name, last_name, phone, email_verified, bvn,"
     " referral_code, created_at, updated_at, crypt_key FROM customers WHERE id = {uuid}"},
    /* onboard_cols: what BVN onboarding (bank_onboard.c) reads before it decides, in one
     * round trip and one snapshot: the customer, their account, the customer's counter of
     * the unexpired window (as bank_throttle_get) and the BVN's record. A verified
     * customer's repeat is this one statement. Who holds the BVN asked about matters only
     * while the customer has none: bank_bvn_owner, then (a subquery here would be set up by
     * PostgreSQL on every execution, used or not). Args: scope, subject, cutoff, BVN hash,
     * BVN, customer id. */
    {"bank_onboard_read",
     "SELECT c.id, c.email, c.password, c.first_name, c.last_name, c.phone,"
     " c.email_verified, c.bvn, c.referral_code, c.created_at, c.updated_at,"
     " a.id, a.customer_id, a.account_type, a.balance_minor, a.currency, a.status,"
     " a.bank_name, a.verified, a.bank_account_id, a.account_name, a.account_number,"
     " a.created_at, a.updated_at,"
     " t.failures, t.window_start,"
     " r.bvn, r.first_name, r.last_name, r.date_of_birth, r.phone,"
     " c.crypt_key, r.bvn_hash, r.crypt_key"
     " FROM customers c LEFT JOIN accounts a ON a.customer_id = c.id"
     " LEFT JOIN throttle_counts t ON t.scope = %s AND t.subject = %s AND t.window_start > %pDz"
     " LEFT JOIN bvn_records r ON r.bvn_hash = %s OR r.bvn = %s"
     " WHERE c.id = {uuid}"},
    /* Another customer holding a BVN (args: BVN hash, BVN, the asking customer's id): the
     * asker's own verification, committed after bank_onboard_read saw none, is not another's
     * (the transaction's own read settles it). */
    {"bank_bvn_owner",
     "SELECT id FROM customers WHERE (bvn_hash = %s OR bvn = %s) AND id <> {uuid} LIMIT 1"},
    /* Stored password hashes from a random point of the id order on: ids are random UUIDs, so
     * this is a random sample, read through the primary key's index (bank_sign_in.c). */
    {"bank_password_sample",
     "SELECT password FROM customers WHERE id >= {uuid} AND password IS NOT NULL"
     " ORDER BY id LIMIT %d"},
    /* The same from the start of the id order (the random point fell near its end). */
    {"bank_password_sample_first",
     "SELECT password FROM customers WHERE password IS NOT NULL ORDER BY id LIMIT %d"},
    {"bank_customer_insert",
     "INSERT INTO customers (id, email, password, first_name, last_name, phone,"
     " email_verified, created_at, updated_at)"
     " VALUES ({uuid}, %s, %s, %s, %s, %s, {bool}, %pDz, %pDz)"},
    /* Only a customer not yet verified: a concurrent verification makes this change 0 rows. */
    {"bank_customer_set_bvn",
     "UPDATE customers SET bvn = %s, bvn_hash = %s, crypt_key = %s, referral_code = %s,"
     " updated_at = %pDz"
     " WHERE id = {uuid} AND bvn IS NULL"},

    /* A record written before sealing, of the BVN about to be written sealed (args: BVN). */
    {"bank_bvn_record_drop_plain", "DELETE FROM bvn_records WHERE bvn = %s"},
    {"bank_bvn_record_upsert",
     "INSERT INTO bvn_records (bvn, first_name, last_name, date_of_birth, phone, created_at,"
     " bvn_hash, crypt_key) VALUES (%s, %s, %s, %s, %s, %pDz, %s, %s) ON CONFLICT (bvn_hash)"
     " DO UPDATE SET bvn = excluded.bvn, first_name = excluded.first_name,"
     " last_name = excluded.last_name, date_of_birth = excluded.date_of_birth,"
     " phone = excluded.phone, source = 'table', checked_at = NULL,"
     " crypt_key = excluded.crypt_key"},
    /* An identity provider's match, with the account: only what the account needs. */
    {"bank_bvn_record_keep",
     "INSERT INTO bvn_records (bvn, first_name, last_name, date_of_birth, phone, created_at,"
     " source, checked_at, bvn_hash, crypt_key) VALUES (%s, %s, %s, %s, NULL, %pDz, %s, %pDz,"
     " %s, %s) ON CONFLICT (bvn_hash) DO UPDATE SET bvn = excluded.bvn,"
     " first_name = excluded.first_name, last_name = excluded.last_name,"
     " date_of_birth = excluded.date_of_birth, phone = NULL, source = excluded.source,"
     " checked_at = excluded.checked_at, crypt_key = excluded.crypt_key"},
    /* bankctl bvn delete. Args: BVN hash, BVN. */
    {"bank_bvn_record_delete", "DELETE FROM bvn_records WHERE bvn_hash = %s OR bvn = %s"},
    /* The kept record of a BVN (bankctl bvn show). Args: BVN hash, BVN. */
    {"bank_bvn_record_get",
     "SELECT bvn, first_name, last_name, date_of_birth, phone, source, checked_at, bvn_hash,"
     " crypt_key FROM bvn_records WHERE bvn_hash = %s OR bvn = %s"},

    /* serial_cols. */
    {"bank_account_serial_next",
     "INSERT INTO account_serials (created_at) VALUES (%pDz) RETURNING serial"},
    /* account_cols: the row as stored, so that the answer shows what a read would. */
    {"bank_account_insert",
     "INSERT INTO accounts (id, customer_id, account_type, balance_minor, currency, status,"
     " bank_name, verified, bank_account_id, account_name, account_number, created_at,"
     " updated_at) VALUES ({uuid}, {uuid}, 'personal', 0, 'NGN', 'bvn_verified', %s, TRUE, %s,"
     " %s, %s, %pDz, %pDz) RETURNING id, customer_id, account_type, balance_minor, currency,"
     " status, bank_name, verified, bank_account_id, account_name, account_number, created_at,"
     " updated_at"},
    {NULL, NULL}};
/* clang-format on */

/* A customer's columns, in the order of the SELECTs above (X-macro: one list for both row
 * shapes, the customer alone and bank_onboard_read). */
#define CUSTOMER_COLS(X)                                                                           \
    X(TEXT, id)                                                                                    \
    X(TEXT, email)                                                                                 \
    X(TEXT, password)                                                                              \
    X(TEXT, first_name)                                                                            \
    X(TEXT, last_name)                                                                             \
    X(TEXT, phone)                                                                                 \
    X(BOOL, email_verified)                                                                        \
    X(TEXT, bvn)                                                                                   \
    X(TEXT, referral_code)                                                                         \
    X(TEXT, created_at)                                                                            \
    X(TEXT, updated_at)

/* A customer as stored: the columns, and the key its BVN is sealed with. */
typedef struct {
    bank_customer_t c;
    const char *crypt_key;
} customer_raw_t;

#define C(kind, field) BANK_COL(kind, customer_raw_t, c.field),
static const bank_col_t customer_cols[] = {
    CUSTOMER_COLS(C) BANK_COL(TEXT, customer_raw_t, crypt_key), BANK_COL_LAST};
#undef C

/* An account's columns, in the order of bank_onboard_read. */
#define ACCOUNT_COLS(X)                                                                            \
    X(TEXT, id)                                                                                    \
    X(TEXT, customer_id)                                                                           \
    X(TEXT, account_type)                                                                          \
    X(INT64, balance_minor)                                                                        \
    X(TEXT, currency)                                                                              \
    X(TEXT, status)                                                                                \
    X(TEXT, bank_name)                                                                             \
    X(BOOL, verified)                                                                              \
    X(TEXT, bank_account_id)                                                                       \
    X(TEXT, account_name)                                                                          \
    X(TEXT, account_number)                                                                        \
    X(TEXT, created_at)                                                                            \
    X(TEXT, updated_at)

/* What bank_onboard_read returns: the row, and how its customer's BVN and its record are
 * sealed (the key ids; the record's row, its BVN hash). */
typedef struct {
    bank_onboard_row_t row;
    const char *customer_key;
    const char *record_hash;
    const char *record_key;
} onboard_raw_t;

#define C(kind, field) BANK_COL(kind, onboard_raw_t, row.customer.field),
#define A(kind, field) BANK_COL(kind, onboard_raw_t, row.account.field),
#define R(field) BANK_COL(TEXT, onboard_raw_t, row.record.field)
static const bank_col_t onboard_cols[] = {CUSTOMER_COLS(C) ACCOUNT_COLS(A)
                                              BANK_COL(INT64, onboard_raw_t, row.count.failures),
                                          BANK_COL(TEXT, onboard_raw_t, row.count.window_start),
                                          R(bvn),
                                          R(first_name),
                                          R(last_name),
                                          R(date_of_birth),
                                          R(phone),
                                          BANK_COL(TEXT, onboard_raw_t, customer_key),
                                          BANK_COL(TEXT, onboard_raw_t, record_hash),
                                          BANK_COL(TEXT, onboard_raw_t, record_key),
                                          BANK_COL_LAST};
#undef C
#undef A
#undef R

/* An account alone (bank_account_insert's RETURNING). */
#define A(kind, field) BANK_COL(kind, bank_account_t, field),
static const bank_col_t account_cols[] = {ACCOUNT_COLS(A) BANK_COL_LAST};
#undef A

/* bank_bvn_owner's row. */
typedef struct {
    const char *id;
} owner_row_t;
static const bank_col_t owner_cols[] = {BANK_COL(TEXT, owner_row_t, id), BANK_COL_LAST};

/* A kept record as stored (bank_bvn_record_get). */
typedef struct {
    bank_bvn_kept_t kept;
    const char *hash;
    const char *crypt_key;
} record_raw_t;

#define R(field) BANK_COL(TEXT, record_raw_t, kept.rec.field)
static const bank_col_t record_cols[] = {R(bvn),
                                         R(first_name),
                                         R(last_name),
                                         R(date_of_birth),
                                         R(phone),
                                         BANK_COL(TEXT, record_raw_t, kept.source),
                                         BANK_COL(TEXT, record_raw_t, kept.checked_at),
                                         BANK_COL(TEXT, record_raw_t, hash),
                                         BANK_COL(TEXT, record_raw_t, crypt_key),
                                         BANK_COL_LAST};
#undef R

typedef struct {
    apr_int64_t serial;
} serial_row_t;
static const bank_col_t serial_cols[] = {BANK_COL(INT64, serial_row_t, serial), BANK_COL_LAST};

/* ---- sealing and opening ---- */

/* Opens *value (of column, in row) in place; a plain row (key NULL) and a NULL value stay as
 * they are. A value that does not open fails the call, never shows another row's data. */
static bank_db_rc open_value(bank_db_t *db, const char *key, const char *column, const char *row,
                             const char **value)
{
    const char *why;

    if (!key || !*value) {
        return BANK_DB_OK;
    }
    why = bank_open_in_place(bank_db_pool(db), bank_crypt_keyring(), column, row, value);
    return why ? bank_db_fail(db, why) : BANK_DB_OK;
}

/* Seals value for column and row with the current key into *out (NULL stays NULL). */
static bank_db_rc seal_value(bank_db_t *db, const char *column, const char *row, const char *value,
                             const char **out)
{
    *out = NULL;
    if (!value) {
        return BANK_DB_OK;
    }
    if (!(*out = bank_seal(bank_db_pool(db), bank_crypt_keyring(), column, row, value))) {
        return bank_db_fail(db, apr_pstrcat(bank_db_pool(db), "cannot seal ", column, ": ",
                                            bank_keyring_incomplete(bank_crypt_keyring())
                                                ? bank_keyring_incomplete(bank_crypt_keyring())
                                                : "OpenSSL failed",
                                            (char *)NULL));
    }
    return BANK_DB_OK;
}

const char *bank_store_bvn_hash(bank_db_t *db, const char *bvn)
{
    return bank_blind_hash(bank_db_pool(db), bank_crypt_keyring(), "bvn", bvn);
}

/* The hash of bvn, or a failure when there is no hash key. */
static bank_db_rc hash_of(bank_db_t *db, const char *bvn, const char **hash)
{
    if (!(*hash = bank_store_bvn_hash(db, bvn))) {
        return bank_db_fail(db, "no identity hash key (BankIdentityHashKey)");
    }
    return BANK_DB_OK;
}

/* A record's values, opened with its hash as the row. asked: the BVN the record was found
 * by, or NULL to open every value; with it, the BVN and the phone are not decrypted (the
 * BVN is the one asked, the phone left NULL): onboarding reads names and date only, and
 * each value opened costs a key schedule (docs/benchmarks.md). */
static bank_db_rc open_record(bank_db_t *db, const char *key, const char *hash,
                              bank_bvn_record_t *rec, const char *asked)
{
    bank_db_rc rc;

    if (!rec->bvn || !key) {
        return BANK_DB_OK;
    }
    if (!hash) {
        return bank_db_fail(db, "a sealed identity record without its BVN hash");
    }
    if (asked) {
        rec->bvn = asked;
        rec->phone = NULL;
    } else if ((rc = open_value(db, key, "bvn_records.bvn", hash, &rec->bvn)) != BANK_DB_OK ||
               (rc = open_value(db, key, "bvn_records.phone", hash, &rec->phone)) != BANK_DB_OK) {
        return rc;
    }
    if ((rc = open_value(db, key, "bvn_records.first_name", hash, &rec->first_name)) !=
            BANK_DB_OK ||
        (rc = open_value(db, key, "bvn_records.last_name", hash, &rec->last_name)) != BANK_DB_OK) {
        return rc;
    }
    return open_value(db, key, "bvn_records.date_of_birth", hash, &rec->date_of_birth);
}

/* A record's values sealed with its hash as the row, into *out. */
static bank_db_rc seal_record(bank_db_t *db, const bank_bvn_record_t *rec, const char *hash,
                              bank_bvn_record_t *out)
{
    bank_db_rc rc;

    if ((rc = seal_value(db, "bvn_records.bvn", hash, rec->bvn, &out->bvn)) != BANK_DB_OK ||
        (rc = seal_value(db, "bvn_records.first_name", hash, rec->first_name, &out->first_name)) !=
            BANK_DB_OK ||
        (rc = seal_value(db, "bvn_records.last_name", hash, rec->last_name, &out->last_name)) !=
            BANK_DB_OK ||
        (rc = seal_value(db, "bvn_records.date_of_birth", hash, rec->date_of_birth,
                         &out->date_of_birth)) != BANK_DB_OK) {
        return rc;
    }
    return seal_value(db, "bvn_records.phone", hash, rec->phone, &out->phone);
}

/* ---- customers ---- */

/* The customer of a one-argument SELECT of customer_cols, the BVN opened. */
static bank_db_rc customer_by(bank_db_t *db, const char *label, const char *arg,
                              bank_customer_t *out)
{
    const char *args[] = {arg};
    customer_raw_t raw;
    bank_db_rc rc =
        bank_db_row(db, label, BANK_NARGS(args), args, customer_cols, &raw, sizeof(raw));

    if (rc == BANK_DB_OK) {
        rc = open_value(db, raw.crypt_key, "customers.bvn", raw.c.id, &raw.c.bvn);
    }
    *out = raw.c;
    return rc;
}

bank_db_rc bank_store_customer_by_email(bank_db_t *db, const char *email, bank_customer_t *out)
{
    return customer_by(db, "bank_customer_by_email", bank_ascii_lower(bank_db_pool(db), email),
                       out);
}

bank_db_rc bank_store_customer_by_id(bank_db_t *db, const char *id, bank_customer_t *out)
{
    return customer_by(db, "bank_customer_by_id", id, out);
}

typedef struct {
    const char *password;
} password_row_t;
static const bank_col_t password_cols[] = {BANK_COL(TEXT, password_row_t, password), BANK_COL_LAST};

bank_db_rc bank_store_password_sample(bank_db_t *db, const char *from, int limit,
                                      const char *const **hashes, int *n)
{
    const char *args[] = {from, apr_itoa(bank_db_pool(db), limit)};
    apr_array_header_t *rows;
    const char **out;
    bank_db_rc rc = from ? bank_db_rows(db, "bank_password_sample", 2, args, password_cols,
                                        sizeof(password_row_t), &rows)
                         : bank_db_rows(db, "bank_password_sample_first", 1, args + 1,
                                        password_cols, sizeof(password_row_t), &rows);
    int i;

    *n = 0;
    *hashes = NULL;
    if (rc != BANK_DB_OK) {
        return rc;
    }
    out = apr_pcalloc(bank_db_pool(db), sizeof(*out) * (apr_size_t)(rows->nelts + 1));
    for (i = 0; i < rows->nelts; i++) {
        out[i] = APR_ARRAY_IDX(rows, i, password_row_t).password;
    }
    *hashes = out;
    *n = rows->nelts;
    return BANK_DB_OK;
}

bank_db_rc bank_store_onboard_read(bank_db_t *db, const char *customer_id, const char *bvn,
                                   const char *scope, const char *cutoff, bank_onboard_row_t *out)
{
    const char *hash = NULL;
    onboard_raw_t raw;
    bank_db_rc rc;

    memset(&raw, 0, sizeof(raw));
    if ((rc = hash_of(db, bvn, &hash)) == BANK_DB_OK) {
        const char *args[] = {scope, customer_id, cutoff, hash, bvn, customer_id};
        rc = bank_db_row(db, "bank_onboard_read", BANK_NARGS(args), args, onboard_cols, &raw,
                         sizeof(raw));
    }
    if (rc == BANK_DB_OK && !raw.row.customer.bvn) {
        const char *args[] = {hash, bvn, customer_id};
        owner_row_t o = {NULL};
        rc = bank_db_row(db, "bank_bvn_owner", BANK_NARGS(args), args, owner_cols, &o, sizeof(o));
        raw.row.owner = o.id;
        rc = rc == BANK_DB_NOT_FOUND ? BANK_DB_OK : rc;
    }
    if (rc == BANK_DB_OK &&
        (rc = open_value(db, raw.customer_key, "customers.bvn", raw.row.customer.id,
                         &raw.row.customer.bvn)) == BANK_DB_OK) {
        rc = open_record(db, raw.record_key, raw.record_hash, &raw.row.record, bvn);
    }
    *out = raw.row;
    return rc;
}

bank_db_rc bank_store_customer_insert(bank_db_t *db, const bank_customer_t *c)
{
    const char *args[] = {c->id,
                          c->email,
                          c->password,
                          c->first_name,
                          c->last_name,
                          c->phone,
                          c->email_verified ? "1" : "0",
                          c->created_at,
                          c->updated_at};
    return bank_db_exec(db, "bank_customer_insert", NULL, BANK_NARGS(args), args);
}

bank_db_rc bank_store_customer_set_bvn(bank_db_t *db, const char *id, const char *bvn,
                                       const char *referral, const char *now, int *changed)
{
    const char *hash = NULL, *sealed = NULL;
    bank_db_rc rc;

    *changed = 0;
    if ((rc = hash_of(db, bvn, &hash)) != BANK_DB_OK ||
        (rc = seal_value(db, "customers.bvn", id, bvn, &sealed)) != BANK_DB_OK) {
        return rc;
    }
    {
        const char *args[] = {sealed,   hash, bank_keyring_current(bank_crypt_keyring()),
                              referral, now,  id};
        return bank_db_exec(db, "bank_customer_set_bvn", changed, BANK_NARGS(args), args);
    }
}

/* ---- identity records ---- */

/* Writes rec sealed by statement label (upsert or keep, whose extra arguments come between
 * created_at and the hash), after dropping a plain record of the same BVN unless the caller
 * knows there is none (plain 0). hash: the BVN's, if the caller has it already, else NULL. */
static bank_db_rc record_write(bank_db_t *db, const char *label, const bank_bvn_record_t *rec,
                               const char *now, const char *source, int plain, const char *hash)
{
    const char *plain_args[] = {rec->bvn};
    bank_bvn_record_t s;
    bank_db_rc rc;

    memset(&s, 0, sizeof(s));
    if ((!hash && (rc = hash_of(db, rec->bvn, &hash)) != BANK_DB_OK) ||
        (rc = seal_record(db, rec, hash, &s)) != BANK_DB_OK ||
        (plain && (rc = bank_db_exec(db, "bank_bvn_record_drop_plain", NULL, 1, plain_args)) !=
                      BANK_DB_OK)) {
        return rc;
    }
    if (source) {
        const char *args[] = {s.bvn,
                              s.first_name,
                              s.last_name,
                              s.date_of_birth,
                              now,
                              source,
                              now,
                              hash,
                              bank_keyring_current(bank_crypt_keyring())};
        return bank_db_exec(db, label, NULL, BANK_NARGS(args), args);
    } else {
        const char *args[] = {
            s.bvn,   s.first_name, s.last_name, s.date_of_birth,
            s.phone, now,          hash,        bank_keyring_current(bank_crypt_keyring())};
        return bank_db_exec(db, label, NULL, BANK_NARGS(args), args);
    }
}

typedef struct {
    const bank_bvn_record_t *rec;
    const char *now;
} upsert_t;

static bank_db_rc upsert_txn(bank_db_t *db, void *baton)
{
    upsert_t *u = baton;
    return record_write(db, "bank_bvn_record_upsert", u->rec, u->now, NULL, 1, NULL);
}

bank_db_rc bank_store_bvn_record_upsert(bank_db_t *db, const bank_bvn_record_t *rec,
                                        const char *now)
{
    upsert_t u = {rec, now};
    return bank_db_transaction(db, upsert_txn, &u);
}

typedef struct {
    const bank_bvn_record_t *recs;
    int n;
    const char *now;
    int replaced;
} load_t;

/* Each record: is one kept (sealed or plain)? Then it is replaced, a plain one dropped
 * first; else only inserted. Two round trips for a new record, three for a kept one. */
static bank_db_rc load_txn(bank_db_t *db, void *baton)
{
    load_t *l = baton;
    bank_db_rc rc;
    int i;

    l->replaced = 0;
    for (i = 0; i < l->n; i++) {
        const char *hash = NULL;
        record_raw_t raw;

        if ((rc = hash_of(db, l->recs[i].bvn, &hash)) != BANK_DB_OK) {
            return rc;
        }
        {
            const char *args[] = {hash, l->recs[i].bvn};
            rc = bank_db_row(db, "bank_bvn_record_get", BANK_NARGS(args), args, record_cols, &raw,
                             sizeof(raw));
        }
        if (rc != BANK_DB_OK && rc != BANK_DB_NOT_FOUND) {
            return rc;
        }
        l->replaced += rc == BANK_DB_OK;
        if ((rc = record_write(db, "bank_bvn_record_upsert", &l->recs[i], l->now, NULL,
                               rc == BANK_DB_OK, hash)) != BANK_DB_OK) {
            return rc;
        }
    }
    return BANK_DB_OK;
}

bank_db_rc bank_store_bvn_records_load(bank_db_t *db, const bank_bvn_record_t *recs, int n,
                                       const char *now, int *replaced)
{
    load_t l = {recs, n, now, 0};
    bank_db_rc rc = bank_db_transaction(db, load_txn, &l);

    *replaced = rc == BANK_DB_OK ? l.replaced : 0;
    return rc;
}

bank_db_rc bank_store_bvn_record_keep(bank_db_t *db, const bank_bvn_record_t *rec,
                                      const char *source, const char *now)
{
    return record_write(db, "bank_bvn_record_keep", rec, now, source, 1, NULL);
}

bank_db_rc bank_store_bvn_record_delete(bank_db_t *db, const char *bvn, int *count)
{
    const char *hash = NULL;
    bank_db_rc rc;

    *count = 0;
    if ((rc = hash_of(db, bvn, &hash)) == BANK_DB_OK) {
        const char *args[] = {hash, bvn};
        rc = bank_db_exec(db, "bank_bvn_record_delete", count, BANK_NARGS(args), args);
    }
    return rc;
}

bank_db_rc bank_store_bvn_record_get(bank_db_t *db, const char *bvn, bank_bvn_kept_t *out)
{
    const char *hash = NULL;
    record_raw_t raw;
    bank_db_rc rc;

    memset(&raw, 0, sizeof(raw));
    if ((rc = hash_of(db, bvn, &hash)) == BANK_DB_OK) {
        const char *args[] = {hash, bvn};
        rc = bank_db_row(db, "bank_bvn_record_get", BANK_NARGS(args), args, record_cols, &raw,
                         sizeof(raw));
    }
    if (rc == BANK_DB_OK) {
        rc = open_record(db, raw.crypt_key, raw.hash, &raw.kept.rec, NULL);
    }
    *out = raw.kept;
    return rc;
}

bank_db_rc bank_store_account_serial_next(bank_db_t *db, const char *now, apr_int64_t *serial)
{
    const char *args[] = {now};
    serial_row_t row;
    bank_db_rc rc = bank_db_row(db, "bank_account_serial_next", BANK_NARGS(args), args, serial_cols,
                                &row, sizeof(row));

    *serial = row.serial;
    return rc == BANK_DB_NOT_FOUND ? bank_db_fail(db, "the serial insert returned no row") : rc;
}

bank_db_rc bank_store_account_insert(bank_db_t *db, const bank_account_t *a, bank_account_t *out)
{
    const char *args[] = {a->id,           a->customer_id,    a->bank_name,  a->bank_account_id,
                          a->account_name, a->account_number, a->created_at, a->updated_at};
    bank_account_t row;
    bank_db_rc rc = bank_db_row(db, "bank_account_insert", BANK_NARGS(args), args, account_cols,
                                out ? out : &row, sizeof(row));

    return rc == BANK_DB_NOT_FOUND ? bank_db_fail(db, "the account insert returned no row") : rc;
}
