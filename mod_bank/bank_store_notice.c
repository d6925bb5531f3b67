/* Banks and the payment partner's notices: their statements, the columns each SELECT
 * returns, and the typed functions over them (bank_store.h). */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include "bank_sql.h"
#include "bank_store.h"

static const bank_col_t bank_cols[] = {
    BANK_COL(INT64, bank_bank_t, id),     BANK_COL(TEXT, bank_bank_t, name),
    BANK_COL(TEXT, bank_bank_t, slug),    BANK_COL(TEXT, bank_bank_t, code),
    BANK_COL(INT64, bank_bank_t, active), BANK_COL_LAST};

#define N(field) BANK_COL(TEXT, bank_notice_row_t, n.field)
static const bank_col_t notice_cols[] = {BANK_COL(TEXT, bank_notice_row_t, partner),
                                         N(status),
                                         N(amount),
                                         N(charges),
                                         N(currency),
                                         N(narration),
                                         N(receiver_account_name),
                                         N(receiver_account_number),
                                         N(receiver_bank_code),
                                         N(session_id),
                                         N(status_code),
                                         N(status_message),
                                         N(transaction_reference),
                                         N(wallet_id),
                                         N(client_ref),
                                         N(customer_reference),
                                         BANK_COL(TEXT, bank_notice_row_t, customer_id),
                                         BANK_COL(TEXT, bank_notice_row_t, received_at),
                                         BANK_COL_LAST};
#undef N

typedef struct {
    const char *account_id;
} put_row;
static const bank_col_t put_cols[] = {BANK_COL(TEXT, put_row, account_id), BANK_COL_LAST};

/* clang-format off */
const bank_stmt_t bank_store_notice_sql[] = {
    /* The bank list (bank_cols); sorted in C so both drivers agree on the order. */
    {"bank_banks_active",
     "SELECT id, name, slug, code, active FROM banks WHERE active = 1"},
    /* Idempotent by the UNIQUE key: a repeat inserts nothing and returns no row, on any
     * process, even when the copies arrive at the same moment. The owning account (by its
     * bank-side id, the notice's walletId) is joined in the same statement, not looked up in
     * a round trip of its own; the row returned names it (put_cols). */
    {"bank_webhook_insert",
     "INSERT INTO payment_notices (id, partner, service, type, status, amount, charges,"
     " currency, narration, receiver_account_name, receiver_account_number,"
     " receiver_bank_code, session_id, status_code, status_message, transaction_reference,"
     " wallet_id, client_ref, customer_reference, account_id, customer_id, raw_body,"
     " received_at) SELECT {uuid}, %s, %s, %s, %s, %lld, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
     " %s, %s, %s, %s, a.id, a.customer_id, %s, %pDz"
     " FROM (SELECT 1 AS one) AS one LEFT JOIN accounts a ON a.bank_account_id = %s"
     " WHERE 1 = 1" /* SQLite: an upsert after a join needs a WHERE */
     " ON CONFLICT (partner, transaction_reference, status_code) DO NOTHING"
     " RETURNING account_id"},
    /* bankctl notices, newest first (notice_cols). */
    {"bank_notices_list",
     "SELECT partner, status, amount, charges, currency, narration, receiver_account_name,"
     " receiver_account_number, receiver_bank_code, session_id, status_code, status_message,"
     " transaction_reference, wallet_id, client_ref, customer_reference, customer_id,"
     " received_at FROM payment_notices ORDER BY received_at DESC LIMIT %d"},
    {NULL, NULL}};
/* clang-format on */

bank_db_rc bank_store_banks_active(bank_db_t *db, apr_array_header_t **out)
{
    return bank_db_rows(db, "bank_banks_active", 0, NULL, bank_cols, sizeof(bank_bank_t), out);
}

bank_db_rc bank_store_notice_put(bank_db_t *db, bank_notice_put_t *put)
{
    const bank_notice_t *n = put->n;
    const char *args[] = {put->id,
                          put->partner,
                          n->service,
                          n->type,
                          n->status,
                          n->amount,
                          n->charges,
                          n->currency,
                          n->narration,
                          n->receiver_account_name,
                          n->receiver_account_number,
                          n->receiver_bank_code,
                          n->session_id,
                          n->status_code,
                          n->status_message,
                          n->transaction_reference,
                          n->wallet_id,
                          n->client_ref,
                          n->customer_reference,
                          put->raw,
                          put->now,
                          n->wallet_id};
    put_row row;
    bank_db_rc rc =
        bank_db_row(db, "bank_webhook_insert", BANK_NARGS(args), args, put_cols, &row, sizeof(row));

    put->added = rc == BANK_DB_OK;
    put->matched = row.account_id != NULL;
    return rc == BANK_DB_NOT_FOUND ? BANK_DB_OK : rc;
}

/* The order rows are written in: by key, so two transactions holding some of the same keys
 * take their locks in the same order (PostgreSQL would otherwise abort one as deadlocked). */
static int by_key(const void *a, const void *b)
{
    const bank_notice_put_t *x = *(bank_notice_put_t *const *)a,
                            *y = *(bank_notice_put_t *const *)b;
    int c = strcmp(x->partner, y->partner);

    if (!c) {
        c = strcmp(x->n->transaction_reference, y->n->transaction_reference);
    }
    return c ? c : strcmp(x->n->status_code, y->n->status_code);
}

typedef struct {
    bank_notice_put_t **puts;
    int count;
} put_batch;

static bank_db_rc put_all(bank_db_t *db, void *baton)
{
    put_batch *b = baton;
    bank_db_rc rc = BANK_DB_OK;
    int i;

    for (i = 0; i < b->count && rc == BANK_DB_OK; i++) {
        rc = bank_store_notice_put(db, b->puts[i]);
    }
    return rc;
}

bank_db_rc bank_store_notices_put(bank_db_t *db, bank_notice_put_t **puts, int count)
{
    put_batch b = {puts, count};
    bank_db_rc rc;
    int i;

    qsort(puts, (size_t)count, sizeof(*puts), by_key);
    rc = bank_db_transaction(db, put_all, &b);
    if (rc != BANK_DB_OK) {
        for (i = 0; i < count; i++) {
            puts[i]->added = 0; /* rolled back: nothing of it stands */
            puts[i]->matched = 0;
        }
    }
    return rc;
}

bank_db_rc bank_store_notices_list(bank_db_t *db, int limit, apr_array_header_t **out)
{
    const char *args[] = {apr_itoa(bank_db_pool(db), limit)};
    return bank_db_rows(db, "bank_notices_list", BANK_NARGS(args), args, notice_cols,
                        sizeof(bank_notice_row_t), out);
}
