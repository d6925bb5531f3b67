/* Customers, identity-provider (BVN) records and accounts: their statements, the columns
 * each SELECT returns, and the typed functions over them (bank_store.h). */
#include <apr_strings.h>
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
     " referral_code, created_at, updated_at FROM customers WHERE email_key = %s"},
    /* onboard_cols: all that BVN onboarding (bank_onboard.c) reads before it decides, in one
     * round trip and one snapshot: the customer, their account, who holds the BVN asked
     * about (only looked up while the customer has none), the customer's counter of the
     * unexpired window (as bank_throttle_get) and the BVN's record. A verified customer's
     * repeat is this one statement. Args: bvn, scope, subject, cutoff, bvn, customer id. */
    {"bank_onboard_read",
     "SELECT c.id, c.email, c.password, c.first_name, c.last_name, c.phone,"
     " c.email_verified, c.bvn, c.referral_code, c.created_at, c.updated_at,"
     " a.id, a.customer_id, a.account_type, a.balance_minor, a.currency, a.status,"
     " a.bank_name, a.verified, a.bank_account_id, a.account_name, a.account_number,"
     " a.created_at, a.updated_at,"
     " CASE WHEN c.bvn IS NULL THEN (SELECT o.id FROM customers o WHERE o.bvn = %s) END,"
     " t.failures, t.window_start,"
     " r.bvn, r.first_name, r.last_name, {ymd:r.date_of_birth}, r.phone"
     " FROM customers c LEFT JOIN accounts a ON a.customer_id = c.id"
     " LEFT JOIN throttle_counts t ON t.scope = %s AND t.subject = %s AND t.window_start > %pDz"
     " LEFT JOIN bvn_records r ON r.bvn = %s"
     " WHERE c.id = {uuid}"},
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
     "UPDATE customers SET bvn = %s, referral_code = %s, updated_at = %pDz"
     " WHERE id = {uuid} AND bvn IS NULL"},

    {"bank_bvn_record_upsert",
     "INSERT INTO bvn_records (bvn, first_name, last_name, date_of_birth, phone, created_at)"
     " VALUES (%s, %s, %s, %pDd, %s, %pDz) ON CONFLICT (bvn) DO UPDATE SET"
     " first_name = excluded.first_name, last_name = excluded.last_name,"
     " date_of_birth = excluded.date_of_birth, phone = excluded.phone, source = 'table',"
     " checked_at = NULL"},
    /* An identity provider's match, with the account: only what the account needs. */
    {"bank_bvn_record_keep",
     "INSERT INTO bvn_records (bvn, first_name, last_name, date_of_birth, phone, created_at,"
     " source, checked_at) VALUES (%s, %s, %s, %pDd, NULL, %pDz, %s, %pDz) ON CONFLICT (bvn)"
     " DO UPDATE SET first_name = excluded.first_name, last_name = excluded.last_name,"
     " date_of_birth = excluded.date_of_birth, phone = NULL, source = excluded.source,"
     " checked_at = excluded.checked_at"},

    /* serial_cols. */
    {"bank_account_serial_next",
     "INSERT INTO account_serials (created_at) VALUES (%pDz) RETURNING serial"},
    {"bank_account_insert",
     "INSERT INTO accounts (id, customer_id, account_type, balance_minor, currency, status,"
     " bank_name, verified, bank_account_id, account_name, account_number, created_at,"
     " updated_at) VALUES ({uuid}, {uuid}, 'personal', 0, 'NGN', 'bvn_verified', %s, TRUE, %s,"
     " %s, %s, %pDz, %pDz)"},
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

#define C(kind, field) BANK_COL(kind, bank_customer_t, field),
static const bank_col_t customer_cols[] = {CUSTOMER_COLS(C) BANK_COL_LAST};
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

#define C(kind, field) BANK_COL(kind, bank_onboard_row_t, customer.field),
#define A(kind, field) BANK_COL(kind, bank_onboard_row_t, account.field),
#define R(field) BANK_COL(TEXT, bank_onboard_row_t, record.field)
static const bank_col_t onboard_cols[] = {CUSTOMER_COLS(C) ACCOUNT_COLS(A)
                                              BANK_COL(TEXT, bank_onboard_row_t, owner),
                                          BANK_COL(INT64, bank_onboard_row_t, count.failures),
                                          BANK_COL(TEXT, bank_onboard_row_t, count.window_start),
                                          R(bvn),
                                          R(first_name),
                                          R(last_name),
                                          R(date_of_birth),
                                          R(phone),
                                          BANK_COL_LAST};
#undef C
#undef A
#undef R

typedef struct {
    apr_int64_t serial;
} serial_row_t;
static const bank_col_t serial_cols[] = {BANK_COL(INT64, serial_row_t, serial), BANK_COL_LAST};

bank_db_rc bank_store_customer_by_email(bank_db_t *db, const char *email, bank_customer_t *out)
{
    const char *args[] = {bank_ascii_lower(bank_db_pool(db), email)};
    return bank_db_row(db, "bank_customer_by_email", BANK_NARGS(args), args, customer_cols, out,
                       sizeof(*out));
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
    const char *args[] = {bvn, scope, customer_id, cutoff, bvn, customer_id};
    return bank_db_row(db, "bank_onboard_read", BANK_NARGS(args), args, onboard_cols, out,
                       sizeof(*out));
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
    const char *args[] = {bvn, referral, now, id};
    return bank_db_exec(db, "bank_customer_set_bvn", changed, BANK_NARGS(args), args);
}

bank_db_rc bank_store_bvn_record_upsert(bank_db_t *db, const bank_bvn_record_t *rec,
                                        const char *now)
{
    const char *args[] = {rec->bvn,           rec->first_name, rec->last_name,
                          rec->date_of_birth, rec->phone,      now};
    return bank_db_exec(db, "bank_bvn_record_upsert", NULL, BANK_NARGS(args), args);
}

bank_db_rc bank_store_bvn_record_keep(bank_db_t *db, const bank_bvn_record_t *rec,
                                      const char *source, const char *now)
{
    const char *args[] = {
        rec->bvn, rec->first_name, rec->last_name, rec->date_of_birth, now, source, now};
    return bank_db_exec(db, "bank_bvn_record_keep", NULL, BANK_NARGS(args), args);
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

bank_db_rc bank_store_account_insert(bank_db_t *db, const bank_account_t *a)
{
    const char *args[] = {a->id,           a->customer_id,    a->bank_name,  a->bank_account_id,
                          a->account_name, a->account_number, a->created_at, a->updated_at};
    return bank_db_exec(db, "bank_account_insert", NULL, BANK_NARGS(args), args);
}
