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
    /* with_account_cols: the customer and, in the same round trip, their account (the BVN
     * read path answers with both). */
    {"bank_customer_with_account",
     "SELECT c.id, c.email, c.password, c.first_name, c.last_name, c.phone,"
     " c.email_verified, c.bvn, c.referral_code, c.created_at, c.updated_at,"
     " a.id, a.customer_id, a.account_type, a.balance_minor, a.currency, a.status,"
     " a.bank_name, a.verified, a.bank_account_id, a.account_name, a.account_number,"
     " a.created_at, a.updated_at"
     " FROM customers c LEFT JOIN accounts a ON a.customer_id = c.id WHERE c.id = {uuid}"},
    {"bank_customer_insert",
     "INSERT INTO customers (id, email, password, first_name, last_name, phone,"
     " email_verified, created_at, updated_at)"
     " VALUES ({uuid}, %s, %s, %s, %s, %s, {bool}, %pDz, %pDz)"},
    /* id_cols. */
    {"bank_customer_by_bvn",
     "SELECT id FROM customers WHERE bvn = %s"},
    /* Only a customer not yet verified: a concurrent verification makes this change 0 rows. */
    {"bank_customer_set_bvn",
     "UPDATE customers SET bvn = %s, referral_code = %s, updated_at = %pDz"
     " WHERE id = {uuid} AND bvn IS NULL"},

    /* record_cols. */
    {"bank_bvn_record_find",
     "SELECT bvn, first_name, last_name, {ymd:date_of_birth}, phone FROM bvn_records"
     " WHERE bvn = %s"},
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
 * shapes). */
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

typedef struct {
    const char *id;
} id_row_t;
static const bank_col_t id_cols[] = {BANK_COL(TEXT, id_row_t, id), BANK_COL_LAST};

#define R(field) BANK_COL(TEXT, bank_bvn_record_t, field)
static const bank_col_t record_cols[] = {R(bvn),           R(first_name), R(last_name),
                                         R(date_of_birth), R(phone),      BANK_COL_LAST};
#undef R

typedef struct {
    bank_customer_t c;
    bank_account_t a;
} with_account_t;

#define C(kind, field) BANK_COL(kind, with_account_t, c.field),
#define A(kind, field) BANK_COL(kind, with_account_t, a.field)
static const bank_col_t with_account_cols[] = {CUSTOMER_COLS(C) A(TEXT, id),
                                               A(TEXT, customer_id),
                                               A(TEXT, account_type),
                                               A(INT64, balance_minor),
                                               A(TEXT, currency),
                                               A(TEXT, status),
                                               A(TEXT, bank_name),
                                               A(BOOL, verified),
                                               A(TEXT, bank_account_id),
                                               A(TEXT, account_name),
                                               A(TEXT, account_number),
                                               A(TEXT, created_at),
                                               A(TEXT, updated_at),
                                               BANK_COL_LAST};
#undef C
#undef A

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

bank_db_rc bank_store_customer_with_account(bank_db_t *db, const char *id, bank_customer_t *c,
                                            bank_account_t *a)
{
    const char *args[] = {id};
    with_account_t row;
    bank_db_rc rc = bank_db_row(db, "bank_customer_with_account", BANK_NARGS(args), args,
                                with_account_cols, &row, sizeof(row));

    *c = row.c;
    *a = row.a; /* all zero (id NULL) when the customer has no account */
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

bank_db_rc bank_store_customer_by_bvn(bank_db_t *db, const char *bvn, const char **owner_id)
{
    const char *args[] = {bvn};
    id_row_t row;
    bank_db_rc rc =
        bank_db_row(db, "bank_customer_by_bvn", BANK_NARGS(args), args, id_cols, &row, sizeof(row));

    *owner_id = row.id ? row.id : "";
    return rc;
}

bank_db_rc bank_store_customer_set_bvn(bank_db_t *db, const char *id, const char *bvn,
                                       const char *referral, const char *now, int *changed)
{
    const char *args[] = {bvn, referral, now, id};
    return bank_db_exec(db, "bank_customer_set_bvn", changed, BANK_NARGS(args), args);
}

bank_db_rc bank_store_bvn_record_find(bank_db_t *db, const char *bvn, bank_bvn_record_t *out)
{
    const char *args[] = {bvn};
    return bank_db_row(db, "bank_bvn_record_find", BANK_NARGS(args), args, record_cols, out,
                       sizeof(*out));
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
