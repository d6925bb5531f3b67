/* The push outbox (docs/push.md): its statements and the typed functions over them
 * (bank_store.h). Rows are written by the database itself, in the statement that stores a
 * notice (the migration's trigger); a sender claims due rows under a lease, sends them and
 * settles each one only while its lease is still the one it holds. */
#include <apr_strings.h>
#include "bank_sql.h"
#include "bank_store.h"

static const bank_col_t due_cols[] = {
    BANK_COL(INT64, bank_push_msg_t, id),         BANK_COL(TEXT, bank_push_msg_t, device_token),
    BANK_COL(INT64, bank_push_msg_t, attempts),   BANK_COL(TEXT, bank_push_msg_t, amount),
    BANK_COL(TEXT, bank_push_msg_t, currency),    BANK_COL(TEXT, bank_push_msg_t, receiver_name),
    BANK_COL(TEXT, bank_push_msg_t, status_code), BANK_COL(TEXT, bank_push_msg_t, status_message),
    BANK_COL(TEXT, bank_push_msg_t, reference),   BANK_COL_LAST};

static const bank_col_t row_cols[] = {
    BANK_COL(INT64, bank_push_row_t, id),        BANK_COL(TEXT, bank_push_row_t, state),
    BANK_COL(INT64, bank_push_row_t, attempts),  BANK_COL(TEXT, bank_push_row_t, customer_id),
    BANK_COL(TEXT, bank_push_row_t, reference),  BANK_COL(TEXT, bank_push_row_t, created_at),
    BANK_COL(TEXT, bank_push_row_t, next_at),    BANK_COL(TEXT, bank_push_row_t, done_at),
    BANK_COL(TEXT, bank_push_row_t, last_error), BANK_COL_LAST};

typedef struct {
    apr_int64_t n;
} count_row;
static const bank_col_t count_cols[] = {BANK_COL(INT64, count_row, n), BANK_COL_LAST};

/* clang-format off */
const bank_stmt_t bank_store_push_sql[] = {
    /* Claims up to N due rows under a new lease until its end (args: now, N, lease, lease
     * end, now). Fair between customers: every customer's oldest due message comes before
     * anyone's second, so a customer's backlog delays another's message by one round at
     * most (turn: the row's place among its customer's due rows). PostgreSQL: rows another
     * sender is claiming are skipped, not waited for, and the outer WHERE is checked again on
     * the locked row; the rows are picked once, in the WITH (a subquery in the WHERE is run
     * again for each row of a semi-join, and took more than N rows; a window function and
     * FOR UPDATE cannot share a query level); SQLite runs one writer at a time, and finds
     * the rows to update by their ids (through the due index it would read every due row, a
     * backlog's too). */
    {"bank_push_claim",
     "WITH due AS (SELECT id FROM push_outbox WHERE id IN (SELECT id FROM"
     " (SELECT id, next_at, row_number() OVER (PARTITION BY customer_id ORDER BY next_at, id)"
     " AS turn FROM push_outbox WHERE state = 'pending' AND next_at <= %pDz) AS ranked"
     " ORDER BY turn, next_at, id LIMIT %d){skip_locked})"
     " UPDATE push_outbox SET lease = %s, next_at = %pDz"
     " WHERE id IN (SELECT id FROM due) AND {noindex:state} = 'pending'"
     " AND {noindex:next_at} <= %pDz"},
    /* The rows a lease holds, with what their messages say (due_cols; args: the lease's end,
     * the lease). The claim set next_at to the lease's end: the due index finds them, no
     * scan of the table. */
    {"bank_push_claimed",
     "SELECT o.id, o.device_token, o.attempts, n.amount, n.currency, n.receiver_account_name,"
     " n.status_code, n.status_message, n.transaction_reference"
     " FROM push_outbox o JOIN payment_notices n ON n.id = o.notice_id"
     " WHERE o.state = 'pending' AND o.next_at = %pDz AND o.lease = %s ORDER BY o.id"},
    /* A claimed row's outcome, while the lease is still ours (args: state, next_at, done_at,
     * last_error, id, lease). */
    {"bank_push_settle",
     "UPDATE push_outbox SET state = %s, lease = NULL, next_at = %pDz, done_at = %pDz,"
     " last_error = %s, attempts = attempts + 1 WHERE id = %lld AND lease = %s"},
    /* Every row the lease still holds was sent (the others were settled one by one first):
     * one statement for the round, through the due index (args: done_at, lease end, lease). */
    {"bank_push_sent",
     "UPDATE push_outbox SET state = 'sent', lease = NULL, done_at = %pDz, last_error = NULL,"
     " attempts = attempts + 1"
     " WHERE state = 'pending' AND next_at = %pDz AND lease = %s"},
    /* FCM no longer knows the token: every customer's device row with it goes. */
    {"bank_push_device_drop",
     "DELETE FROM devices WHERE device_token = %s"},
    {"bank_push_backlog",
     "SELECT COUNT(*) FROM push_outbox WHERE state = 'pending'"},
    /* bankctl push list, newest first (row_cols; args: a state, or a lone percent sign for
     * all, then the limit). */
    {"bank_push_list",
     "SELECT o.id, o.state, o.attempts, o.customer_id, n.transaction_reference, o.created_at,"
     " o.next_at, o.done_at, o.last_error FROM push_outbox o"
     " JOIN payment_notices n ON n.id = o.notice_id"
     " WHERE o.state LIKE %s ORDER BY o.id DESC LIMIT %d"},
    /* bankctl push retry: a failed row is due again, its attempts counted afresh. */
    {"bank_push_requeue",
     "UPDATE push_outbox SET state = 'pending', attempts = 0, next_at = %pDz, lease = NULL,"
     " done_at = NULL, last_error = NULL WHERE id = %lld AND state = 'failed'"},
    /* bankctl push prune, one window of the outbox in id order (the primary key: bounded
     * work however large the table): the window's last id, and whether any of its rows was
     * created before the cutoff (a row created later cannot be done before it; ids follow
     * the creation, so a window without one ends the prune; args: the cutoff, the id the
     * window starts after, its length). */
    {"bank_push_window",
     "SELECT MAX(id), MAX(CASE WHEN created_at < %pDz THEN 1 ELSE 0 END) FROM"
     " (SELECT id, created_at FROM push_outbox WHERE id > %lld ORDER BY id LIMIT %d) w"},
    /* The rows of that window done (sent, unregistered, failed) before the cutoff (args: the
     * window's bounds, the cutoff). */
    {"bank_push_prune",
     "DELETE FROM push_outbox WHERE id > %lld AND id <= %lld AND state <> 'pending'"
     " AND done_at < %pDz"},
    {NULL, NULL}};
/* clang-format on */

bank_db_rc bank_store_push_claim(bank_db_t *db, const char *lease, const char *until,
                                 const char *now, int max, apr_array_header_t **out)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *args[] = {now, apr_itoa(p, max), lease, until, now};
    const char *key[] = {until, lease};
    int n = 0;
    bank_db_rc rc = bank_db_exec(db, "bank_push_claim", &n, BANK_NARGS(args), args);

    if (rc != BANK_DB_OK) {
        return rc;
    }
    if (n == 0) {
        *out = apr_array_make(p, 0, sizeof(bank_push_msg_t));
        return BANK_DB_OK;
    }
    return bank_db_rows(db, "bank_push_claimed", BANK_NARGS(key), key, due_cols,
                        sizeof(bank_push_msg_t), out);
}

bank_db_rc bank_store_push_settle(bank_db_t *db, apr_int64_t id, const char *lease,
                                  const char *state, const char *next_at, const char *done_at,
                                  const char *why, int *settled)
{
    const char *args[] = {
        state, next_at, done_at, why, apr_psprintf(bank_db_pool(db), "%" APR_INT64_T_FMT, id),
        lease};
    return bank_db_exec(db, "bank_push_settle", settled, BANK_NARGS(args), args);
}

bank_db_rc bank_store_push_sent(bank_db_t *db, const char *lease, const char *until,
                                const char *done_at, int *count)
{
    const char *args[] = {done_at, until, lease};
    return bank_db_exec(db, "bank_push_sent", count, BANK_NARGS(args), args);
}

bank_db_rc bank_store_push_device_drop(bank_db_t *db, const char *device_token)
{
    const char *args[] = {device_token};
    return bank_db_exec(db, "bank_push_device_drop", NULL, BANK_NARGS(args), args);
}

bank_db_rc bank_store_push_backlog(bank_db_t *db, apr_int64_t *count)
{
    count_row row;
    bank_db_rc rc = bank_db_row(db, "bank_push_backlog", 0, NULL, count_cols, &row, sizeof(row));

    *count = rc == BANK_DB_OK ? row.n : 0;
    return rc;
}

bank_db_rc bank_store_push_list(bank_db_t *db, const char *state, int limit,
                                apr_array_header_t **out)
{
    const char *args[] = {state ? state : "%", apr_itoa(bank_db_pool(db), limit)};
    return bank_db_rows(db, "bank_push_list", BANK_NARGS(args), args, row_cols,
                        sizeof(bank_push_row_t), out);
}

bank_db_rc bank_store_push_requeue(bank_db_t *db, apr_int64_t id, const char *now, int *count)
{
    const char *args[] = {now, apr_psprintf(bank_db_pool(db), "%" APR_INT64_T_FMT, id)};
    return bank_db_exec(db, "bank_push_requeue", count, BANK_NARGS(args), args);
}

typedef struct {
    apr_int64_t last;  /* 0: the window is empty */
    apr_int64_t older; /* one of its rows was created before the cutoff */
} window_row_t;
static const bank_col_t window_cols[] = {BANK_COL(INT64, window_row_t, last),
                                         BANK_COL(INT64, window_row_t, older), BANK_COL_LAST};

bank_db_rc bank_store_push_prune(bank_db_t *db, const char *cutoff, int batch, apr_int64_t *after,
                                 int *removed, int *more)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *from = apr_psprintf(p, "%" APR_INT64_T_FMT, *after);
    const char *wargs[] = {cutoff, from, apr_itoa(p, batch)};
    window_row_t w = {0, 0};
    bank_db_rc rc;

    *removed = 0;
    *more = 0;
    rc = bank_db_row(db, "bank_push_window", BANK_NARGS(wargs), wargs, window_cols, &w, sizeof(w));
    if (rc == BANK_DB_NOT_FOUND || (rc == BANK_DB_OK && (w.last == 0 || !w.older))) {
        return BANK_DB_OK; /* nothing more, or only rows too young */
    }
    if (rc != BANK_DB_OK) {
        return rc;
    }
    {
        const char *dargs[] = {from, apr_psprintf(p, "%" APR_INT64_T_FMT, w.last), cutoff};
        rc = bank_db_exec(db, "bank_push_prune", removed, BANK_NARGS(dargs), dargs);
    }
    if (rc == BANK_DB_OK) {
        *after = w.last;
        *more = 1;
    }
    return rc;
}
