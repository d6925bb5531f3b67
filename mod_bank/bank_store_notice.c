/* Banks and the payment partner's notices: their statements, the columns each SELECT
 * returns, and the typed functions over them (bank_store.h). */
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

/* clang-format off */
const bank_stmt_t bank_store_notice_sql[] = {
    /* The bank list (bank_cols); sorted in C so both drivers agree on the order. */
    {"bank_banks_active",
     "SELECT id, name, slug, code, active FROM banks WHERE active = 1"},
    /* Idempotent by the UNIQUE key: a repeat inserts nothing and reports 0 rows, on any
     * process, even when the copies arrive at the same moment. */
    {"bank_webhook_insert",
     "INSERT INTO payment_notices (id, partner, service, type, status, amount, charges,"
     " currency, narration, receiver_account_name, receiver_account_number,"
     " receiver_bank_code, session_id, status_code, status_message, transaction_reference,"
     " wallet_id, client_ref, customer_reference, account_id, customer_id, raw_body,"
     " received_at) VALUES ({uuid}, %s, %s, %s, %s, %lld, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
     " %s, %s, %s, %s, {uuid}, {uuid}, %s, %pDz)"
     " ON CONFLICT (partner, transaction_reference, status_code) DO NOTHING"},
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

bank_db_rc bank_store_notice_insert(bank_db_t *db, const bank_notice_t *n, const char *id,
                                    const char *partner, const char *account, const char *customer,
                                    const char *raw, const char *now, int *added)
{
    const char *args[] = {id,
                          partner,
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
                          account,
                          customer,
                          raw,
                          now};
    return bank_db_exec(db, "bank_webhook_insert", added, BANK_NARGS(args), args);
}

bank_db_rc bank_store_notices_list(bank_db_t *db, int limit, apr_array_header_t **out)
{
    const char *args[] = {apr_itoa(bank_db_pool(db), limit)};
    return bank_db_rows(db, "bank_notices_list", BANK_NARGS(args), args, notice_cols,
                        sizeof(bank_notice_row_t), out);
}
