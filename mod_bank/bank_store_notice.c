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

/* What an insert returns for each row it wrote: its key and whether an account matched. */
typedef struct {
    const char *partner;
    const char *transaction_reference;
    const char *status_code;
    const char *account_id;
} put_row;
static const bank_col_t put_cols[] = {
    BANK_COL(TEXT, put_row, partner), BANK_COL(TEXT, put_row, transaction_reference),
    BANK_COL(TEXT, put_row, status_code), BANK_COL(TEXT, put_row, account_id), BANK_COL_LAST};

/* One notice's values (PUT_ARGS of them, in this order: put_args). */
#define PUT_ARGS 21
#define NOTICE_ROW                                                                                 \
    "({uuid}, %s, %s, %s, %s, %lld, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %pDz)"
#define NOTICE_ROWS_2 NOTICE_ROW ", " NOTICE_ROW
#define NOTICE_ROWS_4 NOTICE_ROWS_2 ", " NOTICE_ROWS_2
#define NOTICE_ROWS_8 NOTICE_ROWS_4 ", " NOTICE_ROWS_4
#define NOTICE_ROWS_16 NOTICE_ROWS_8 ", " NOTICE_ROWS_8
#define NOTICE_ROWS_32 NOTICE_ROWS_16 ", " NOTICE_ROWS_16
#define NOTICE_ROWS_64 NOTICE_ROWS_32 ", " NOTICE_ROWS_32
/* Idempotent by the UNIQUE key: a repeat inserts nothing and returns no row, on any process,
 * even when the copies arrive at the same moment (or in the same statement). The owning
 * account (by its bank-side id, the notice's walletId: column17) is joined in the same
 * statement, not looked up in a round trip of its own. VALUES columns are column1..21 on
 * both drivers. */
#define NOTICE_INSERT_WHERE(rows, where)                                                           \
    "INSERT INTO payment_notices (id, partner, service, type, status, amount, charges,"            \
    " currency, narration, receiver_account_name, receiver_account_number,"                        \
    " receiver_bank_code, session_id, status_code, status_message, transaction_reference,"         \
    " wallet_id, client_ref, customer_reference, account_id, customer_id, raw_body,"               \
    " received_at) SELECT v.column1, v.column2, v.column3, v.column4, v.column5, v.column6,"       \
    " v.column7, v.column8, v.column9, v.column10, v.column11, v.column12, v.column13,"            \
    " v.column14, v.column15, v.column16, v.column17, v.column18, v.column19, a.id,"               \
    " a.customer_id, v.column20, v.column21 FROM (VALUES " rows ") AS v"                           \
    " LEFT JOIN accounts a ON a.bank_account_id = v.column17"                                      \
    " WHERE 1 = 1" /* SQLite: an upsert after a join needs a WHERE */                              \
        where " ON CONFLICT (partner, transaction_reference, status_code) DO NOTHING"              \
    " RETURNING partner, transaction_reference, status_code, account_id"
/* A notice moved out by bankctl notices archive left its key (partner column2, reference
 * column16, status code column14) in payment_notices_archived (014): a repeat of it is not
 * stored either. The keys are written, and committed, before the rows go (cmd_notices_archive),
 * so a repeat arriving meanwhile meets the row or the key. */
#define NOTICE_INSERT(rows)                                                                        \
    NOTICE_INSERT_WHERE(rows, " AND NOT EXISTS (SELECT 1 FROM payment_notices_archived x"          \
                              " WHERE x.partner = v.column2 AND x.transaction_reference ="         \
                              " v.column16 AND x.status_code = v.column14)")
/* Before 014 (a SQLite schema from 9 on, served before bankctl migrate): no archive yet. */
#define NOTICE_INSERT_OLDER(rows) NOTICE_INSERT_WHERE(rows, "")

/* Every column of a notice, in the order of bank_notice_record_t (bankctl notices archive
 * and restore). */
#define NOTICE_COLUMNS                                                                             \
    "id, partner, service, type, status, amount, charges, currency, narration,"                    \
    " receiver_account_name, receiver_account_number, receiver_bank_code, session_id,"             \
    " status_code, status_message, transaction_reference, wallet_id, client_ref,"                  \
    " customer_reference, account_id, customer_id, raw_body, received_at"
/* After a row in (received_at, id) order (args: its time, its id), and up to one: row values
 * that the index on (received_at, id) (014) bounds on both drivers, however many notices
 * share a time. */
#define AFTER_ROW "(received_at, id) > (%pDz, {uuid})"
#define UP_TO_ROW "(received_at, id) <= (%pDz, {uuid})"
#define IN_WINDOW AFTER_ROW " AND " UP_TO_ROW

/* The statements for 1, 2, 4, ... 64 notices: a batch is written in as few as it takes
 * (on PostgreSQL each statement is a round trip and an executor start; measured with perf,
 * they were most of the server's time per notice). */
#define PUT_MAX 64
static const struct {
    int rows;
    const char *label;
} inserts[] = {{PUT_MAX, "bank_webhook_insert_64"}, {32, "bank_webhook_insert_32"},
               {16, "bank_webhook_insert_16"},      {8, "bank_webhook_insert_8"},
               {4, "bank_webhook_insert_4"},        {2, "bank_webhook_insert_2"},
               {1, "bank_webhook_insert"}};

/* clang-format off */
const bank_stmt_t bank_store_notice_sql[] = {
    /* The bank list (bank_cols); sorted in C so both drivers agree on the order. */
    {"bank_banks_active",
     "SELECT id, name, slug, code, active FROM banks WHERE active = 1"},
    /* put_cols, NOTICE_INSERT. */
    {"bank_webhook_insert", NOTICE_INSERT(NOTICE_ROW)},
    {"bank_webhook_insert_2", NOTICE_INSERT(NOTICE_ROWS_2)},
    {"bank_webhook_insert_4", NOTICE_INSERT(NOTICE_ROWS_4)},
    {"bank_webhook_insert_8", NOTICE_INSERT(NOTICE_ROWS_8)},
    {"bank_webhook_insert_16", NOTICE_INSERT(NOTICE_ROWS_16)},
    {"bank_webhook_insert_32", NOTICE_INSERT(NOTICE_ROWS_32)},
    {"bank_webhook_insert_64", NOTICE_INSERT(NOTICE_ROWS_64)},
    /* bankctl notices, newest first (notice_cols). */
    {"bank_notices_list",
     "SELECT partner, status, amount, charges, currency, narration, receiver_account_name,"
     " receiver_account_number, receiver_bank_code, session_id, status_code, status_message,"
     " transaction_reference, wallet_id, client_ref, customer_reference, customer_id,"
     " received_at FROM payment_notices ORDER BY received_at DESC LIMIT %d"},
    /* The schema's version (version_cols): GET /health and bankctl check. */
    {"bank_schema_version", "SELECT MAX(version) FROM schema_version"},
    /* bankctl notices archive (bank_store_notices_archive_*): how many were received
     * before the cut; a page of them whole (record_cols) in (received_at, id) order after
     * a row (args: the cut, the row's time twice, its id, the page's length); then, window
     * by window of those pages (after one row, up to another), their keys kept, their push
     * rows and the rows themselves deleted. */
    {"bank_notices_archive_count",
     "SELECT count(*) FROM payment_notices WHERE received_at < %pDz"},
    {"bank_notices_archive_page",
     "SELECT " NOTICE_COLUMNS " FROM payment_notices WHERE received_at < %pDz AND " AFTER_ROW
     " ORDER BY received_at, id LIMIT %d"},
    {"bank_notices_archive_keys",
     "INSERT INTO payment_notices_archived (partner, transaction_reference, status_code,"
     " archived_at) SELECT partner, transaction_reference, status_code, %pDz FROM"
     " payment_notices WHERE " IN_WINDOW " ON CONFLICT DO NOTHING"},
    {"bank_notices_archive_outbox",
     "DELETE FROM push_outbox WHERE notice_id IN (SELECT id FROM payment_notices"
     " WHERE " IN_WINDOW ")"},
    {"bank_notices_archive_delete",
     "DELETE FROM payment_notices WHERE " IN_WINDOW},
    /* bankctl notices restore: a row back as it was archived (unless its id or key is there
     * again), without the push messages its insert made (a year-old payment is not news),
     * and its key no longer kept. */
    {"bank_notice_restore",
     "INSERT INTO payment_notices (" NOTICE_COLUMNS ") VALUES ({uuid}, %s, %s, %s, %s, %lld,"
     " %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, {uuid}, {uuid}, %s, %pDz)"
     " ON CONFLICT DO NOTHING"},
    {"bank_notice_restore_outbox", "DELETE FROM push_outbox WHERE notice_id = {uuid}"},
    {"bank_notice_unarchive",
     "DELETE FROM payment_notices_archived WHERE partner = %s AND transaction_reference = %s"
     " AND status_code = %s"},
    {NULL, NULL}};

/* Before 014 (SQLite schemas from BANK_SCHEMA_SQLITE_OLDEST, served until bankctl migrate):
 * the webhook's inserts without the archive's keys; the archive's own statements do nothing
 * there (bankctl notices archive and restore refuse an older schema before they run). */
const bank_stmt_older_t bank_store_notice_older[] = {
    {"bank_webhook_insert", NOTICE_INSERT_OLDER(NOTICE_ROW)},
    {"bank_webhook_insert_2", NOTICE_INSERT_OLDER(NOTICE_ROWS_2)},
    {"bank_webhook_insert_4", NOTICE_INSERT_OLDER(NOTICE_ROWS_4)},
    {"bank_webhook_insert_8", NOTICE_INSERT_OLDER(NOTICE_ROWS_8)},
    {"bank_webhook_insert_16", NOTICE_INSERT_OLDER(NOTICE_ROWS_16)},
    {"bank_webhook_insert_32", NOTICE_INSERT_OLDER(NOTICE_ROWS_32)},
    {"bank_webhook_insert_64", NOTICE_INSERT_OLDER(NOTICE_ROWS_64)},
    {"bank_notices_archive_keys",
     "SELECT %pDz, %pDz, {uuid}, %pDz, {uuid} WHERE 1 = 0"},
    {"bank_notice_unarchive", "SELECT %s, %s, %s WHERE 1 = 0"},
    {NULL, NULL}};
/* clang-format on */

typedef struct {
    apr_int64_t version;
} version_row;
static const bank_col_t version_cols[] = {BANK_COL(INT64, version_row, version), BANK_COL_LAST};

bank_db_rc bank_store_schema_version(bank_db_t *db, apr_int64_t *version)
{
    version_row row = {0};
    bank_db_rc rc =
        bank_db_row(db, "bank_schema_version", 0, NULL, version_cols, &row, sizeof(row));

    *version = row.version;
    return rc;
}

bank_db_rc bank_store_banks_active(bank_db_t *db, apr_array_header_t **out)
{
    return bank_db_rows(db, "bank_banks_active", 0, NULL, bank_cols, sizeof(bank_bank_t), out);
}

/* The values of one notice, in NOTICE_ROW's order, into args. */
static void put_args(const bank_notice_put_t *put, const char **args)
{
    const bank_notice_t *n = put->n;
    const char *v[PUT_ARGS] = {put->id,
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
                               put->now};

    memcpy(args, v, sizeof(v));
}

static int same_key(const bank_notice_put_t *put, const put_row *row)
{
    return row->partner && row->transaction_reference && row->status_code &&
           strcmp(put->partner, row->partner) == 0 &&
           strcmp(put->n->transaction_reference, row->transaction_reference) == 0 &&
           strcmp(put->n->status_code, row->status_code) == 0;
}

/* Writes puts[0..count) (1 to PUT_MAX) with one statement, the smallest of inserts[] that holds
 * them, its extra rows filled with copies of the last notice (a copy is a repeat: ON
 * CONFLICT skips it, even within one statement). Each row the statement returns marks the
 * first notice of its key as written. */
static bank_db_rc put_some(bank_db_t *db, bank_notice_put_t **puts, int count)
{
    const char **args;
    apr_array_header_t *rows;
    bank_db_rc rc;
    int i, j, k;

    for (k = 0; k + 1 < (int)(sizeof(inserts) / sizeof(inserts[0])) && inserts[k + 1].rows >= count;
         k++) {
    }
    args = apr_palloc(bank_db_pool(db), sizeof(*args) * PUT_ARGS * (size_t)inserts[k].rows);
    for (i = 0; i < inserts[k].rows; i++) {
        put_args(puts[i < count ? i : count - 1], args + i * PUT_ARGS);
    }
    for (i = 0; i < count; i++) {
        puts[i]->added = puts[i]->matched = 0;
    }
    rc = bank_db_rows(db, inserts[k].label, PUT_ARGS * inserts[k].rows, args, put_cols,
                      sizeof(put_row), &rows);
    for (j = 0; rc == BANK_DB_OK && j < rows->nelts; j++) {
        const put_row *row = &APR_ARRAY_IDX(rows, j, put_row);
        for (i = 0; i < count; i++) {
            if (!puts[i]->added && same_key(puts[i], row)) {
                puts[i]->added = 1;
                puts[i]->matched = row->account_id != NULL;
                break;
            }
        }
    }
    return rc;
}

bank_db_rc bank_store_notice_put(bank_db_t *db, bank_notice_put_t *put)
{
    return put_some(db, &put, 1);
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
    int done, n;

    for (done = 0; rc == BANK_DB_OK && done < b->count; done += n) {
        n = b->count - done < PUT_MAX ? b->count - done : PUT_MAX;
        rc = put_some(db, b->puts + done, n);
    }
    return rc;
}

bank_db_rc bank_store_notices_put(bank_db_t *db, bank_notice_put_t **puts, int count)
{
    put_batch b = {puts, count};
    bank_db_rc rc;
    int i;

    qsort(puts, (size_t)count, sizeof(*puts), by_key);
    /* Up to PUT_MAX: one statement, its own transaction (one round trip, no BEGIN/COMMIT). */
    rc = count <= PUT_MAX ? put_some(db, puts, count) : bank_db_transaction(db, put_all, &b);
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

const char *const bank_notice_column_names[BANK_NOTICE_COLUMNS] = {"id",
                                                                   "partner",
                                                                   "service",
                                                                   "type",
                                                                   "status",
                                                                   "amount",
                                                                   "charges",
                                                                   "currency",
                                                                   "narration",
                                                                   "receiver_account_name",
                                                                   "receiver_account_number",
                                                                   "receiver_bank_code",
                                                                   "session_id",
                                                                   "status_code",
                                                                   "status_message",
                                                                   "transaction_reference",
                                                                   "wallet_id",
                                                                   "client_ref",
                                                                   "customer_reference",
                                                                   "account_id",
                                                                   "customer_id",
                                                                   "raw_body",
                                                                   "received_at"};

#define R(i) BANK_COL(TEXT, bank_notice_record_t, v[i])
static const bank_col_t record_cols[] = {
    R(0),  R(1),  R(2),  R(3),  R(4),  R(5),  R(6),  R(7),  R(8),  R(9),  R(10), R(11),
    R(12), R(13), R(14), R(15), R(16), R(17), R(18), R(19), R(20), R(21), R(22), BANK_COL_LAST};
#undef R

/* The start of the order: before any row (a time no notice has, the smallest id). */
#define FIRST_AT "0001-01-01T00:00:00.000Z"
#define FIRST_ID "00000000-0000-0000-0000-000000000000"

bank_db_rc bank_store_notices_before(bank_db_t *db, const char *cut, apr_int64_t *count)
{
    const char *args[] = {cut};
    version_row row = {0};
    bank_db_rc rc = bank_db_row(db, "bank_notices_archive_count", BANK_NARGS(args), args,
                                version_cols, &row, sizeof(row));

    *count = row.version;
    return rc;
}

bank_db_rc bank_store_notices_page(bank_db_t *db, const char *cut, const bank_notice_window_t *w,
                                   int limit, apr_array_header_t **out)
{
    const char *args[] = {cut, w->after_at ? w->after_at : FIRST_AT,
                          w->after_id ? w->after_id : FIRST_ID, apr_itoa(bank_db_pool(db), limit)};
    return bank_db_rows(db, "bank_notices_archive_page", BANK_NARGS(args), args, record_cols,
                        sizeof(bank_notice_record_t), out);
}

/* The arguments of IN_WINDOW for w, from args[0] on. */
static void window_args(const bank_notice_window_t *w, const char **args)
{
    args[0] = w->after_at ? w->after_at : FIRST_AT;
    args[1] = w->after_id ? w->after_id : FIRST_ID;
    args[2] = w->upto_at;
    args[3] = w->upto_id;
}

bank_db_rc bank_store_notices_keep_keys(bank_db_t *db, const char *now,
                                        const bank_notice_window_t *w, int *kept)
{
    const char *args[5] = {now};

    window_args(w, args + 1);
    return bank_db_exec(db, "bank_notices_archive_keys", kept, BANK_NARGS(args), args);
}

typedef struct {
    const char *args[4];
    int *removed;
} remove_baton;

static bank_db_rc remove_txn(bank_db_t *db, void *baton)
{
    remove_baton *b = baton;
    bank_db_rc rc =
        bank_db_exec(db, "bank_notices_archive_outbox", NULL, BANK_NARGS(b->args), b->args);

    return rc != BANK_DB_OK ? rc
                            : bank_db_exec(db, "bank_notices_archive_delete", b->removed,
                                           BANK_NARGS(b->args), b->args);
}

bank_db_rc bank_store_notices_remove(bank_db_t *db, const bank_notice_window_t *w, int *removed)
{
    remove_baton b = {{NULL}, removed};

    *removed = 0;
    window_args(w, b.args);
    return bank_db_transaction(db, remove_txn, &b);
}

typedef struct {
    const bank_notice_record_t *r;
    int n, *added;
} restore_baton;

static bank_db_rc restore_txn(bank_db_t *db, void *baton)
{
    restore_baton *b = baton;
    bank_db_rc rc = BANK_DB_OK;
    int i, added;

    for (i = 0; i < b->n && rc == BANK_DB_OK; i++) {
        const char *const *v = b->r[i].v;
        const char *id[] = {v[BANK_NOTICE_ID]};
        const char *key[] = {v[BANK_NOTICE_PARTNER], v[BANK_NOTICE_REFERENCE],
                             v[BANK_NOTICE_STATUS_CODE]};

        rc = bank_db_exec(db, "bank_notice_restore", &added, BANK_NOTICE_COLUMNS, v);
        if (rc == BANK_DB_OK && added > 0) {
            *b->added += added;
            rc = bank_db_exec(db, "bank_notice_restore_outbox", NULL, BANK_NARGS(id), id);
        }
        if (rc == BANK_DB_OK) {
            rc = bank_db_exec(db, "bank_notice_unarchive", NULL, BANK_NARGS(key), key);
        }
    }
    return rc;
}

bank_db_rc bank_store_notices_restore(bank_db_t *db, const bank_notice_record_t *r, int n,
                                      int *added)
{
    restore_baton b = {r, n, added};
    bank_db_rc rc;

    *added = 0;
    rc = bank_db_transaction(db, restore_txn, &b);
    if (rc != BANK_DB_OK) {
        *added = 0;
    }
    return rc;
}

bank_db_rc bank_store_notices_settle(bank_db_t *db)
{
    bank_db_rc rc;

    if (!bank_db_is_pgsql(db)) {
        return BANK_DB_OK; /* a write transaction there reads the latest rows */
    }
    if ((rc = bank_db_begin(db)) != BANK_DB_OK) {
        return rc;
    }
    /* Taken once every insert under way has ended, and given back at once: the webhook's
     * inserts wait for it (a second at most) rather than meet it. */
    if (bank_db_query(db, "SET LOCAL lock_timeout = '1s'") != 0 ||
        bank_db_query(db, "LOCK TABLE payment_notices IN SHARE ROW EXCLUSIVE MODE") != 0) {
        bank_db_end(db, 0);
        return BANK_DB_ERROR;
    }
    return bank_db_end(db, 1);
}
