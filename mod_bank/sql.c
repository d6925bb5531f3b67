/* Every SQL statement of mod_bank, and the query helpers over apr_dbd shared by the module
 * and bankctl. Statements are prepared once per connection (mod_dbd does it for the module,
 * bankctl does it itself); no SQL text is ever built from request data. */
#include <string.h>
#include <strings.h>
#include <apr_strings.h>
#include <apr_tables.h>
#include "bank_sql.h"

/* clang-format off */
const bank_stmt_t bank_statements[] = {
    /* banks.c: the bank list; sorted in C so both drivers agree on the order. */
    {"bank_banks_active",
     "SELECT id, name, slug, code, active FROM banks WHERE active = 1", NULL},

    /* auth.c: bearer token verification. */
    {"bank_token_find",
     "SELECT tokenable_id, hash, abilities, expires_at, last_used_at"
     " FROM auth_access_tokens WHERE id = %lld AND type = 'auth_token'", NULL},
    {"bank_token_touch",
     "UPDATE auth_access_tokens SET last_used_at = %pDz WHERE id = %lld", NULL},

    /* Tokens issued by sign-in and bankctl. */
    {"bank_token_insert",
     "INSERT INTO auth_access_tokens (tokenable_id, type, name, hash, abilities, created_at,"
     " updated_at, expires_at) VALUES (%s, 'auth_token', NULL, %s, %s, %pDz, %pDz, %pDz)"
     " RETURNING id",
     "INSERT INTO auth_access_tokens (tokenable_id, type, name, hash, abilities, created_at,"
     " updated_at, expires_at) VALUES (CAST(%s AS uuid), 'auth_token', NULL, %s, %s, %pDz,"
     " %pDz, %pDz) RETURNING id"},
    /* sign_out.c: the token the request carries. */
    {"bank_token_delete", "DELETE FROM auth_access_tokens WHERE id = %lld AND type = 'auth_token'",
     NULL},
    {"bank_token_revoke_all",
     "DELETE FROM auth_access_tokens WHERE tokenable_id = %s",
     "DELETE FROM auth_access_tokens WHERE tokenable_id = CAST(%s AS uuid)"},

    /* Customers. */
    /* By email_key, the e-mail with A-Z folded only (sql/sqlite/004_email_key.sql): the
     * argument is folded by the caller with bank_ascii_lower, never by SQL lower(). */
    {"bank_customer_by_email",
     "SELECT id, email, password, first_name, last_name, phone, email_verified, bvn,"
     " referral_code, created_at, updated_at FROM customers WHERE email_key = %s",
     NULL},
    {"bank_customer_by_id",
     "SELECT id, email, password, first_name, last_name, phone, email_verified, bvn,"
     " referral_code, created_at, updated_at FROM customers WHERE id = %s",
     "SELECT id, email, password, first_name, last_name, phone, email_verified, bvn,"
     " referral_code, created_at, updated_at FROM customers WHERE id = CAST(%s AS uuid)"},
    {"bank_customer_insert",
     "INSERT INTO customers (id, email, password, first_name, last_name, phone,"
     " email_verified, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %d, %pDz, %pDz)",
     "INSERT INTO customers (id, email, password, first_name, last_name, phone,"
     " email_verified, created_at, updated_at) VALUES (CAST(%s AS uuid), %s, %s, %s, %s, %s,"
     " %d <> 0, %pDz, %pDz)"},

    /* Identity-provider records. */
    {"bank_bvn_record_upsert",
     "INSERT INTO bvn_records (bvn, first_name, last_name, date_of_birth, phone, created_at)"
     " VALUES (%s, %s, %s, %pDd, %s, %pDz) ON CONFLICT (bvn) DO UPDATE SET"
     " first_name = excluded.first_name, last_name = excluded.last_name,"
     " date_of_birth = excluded.date_of_birth, phone = excluded.phone", NULL},

    /* bankctl notices: newest first. */
    {"bank_notices_list",
     "SELECT partner, status, amount, charges, currency, narration, receiver_account_name,"
     " receiver_account_number, receiver_bank_code, session_id, status_code, status_message,"
     " transaction_reference, wallet_id, client_ref, customer_reference, customer_id,"
     " received_at FROM payment_notices ORDER BY received_at DESC LIMIT %d", NULL},

    /* sign_in.c: credentials, devices, throttling. */
    /* (sign-in statements) */
    /* Failures of (lower-cased e-mail, client IP) in the window that has not yet expired
     * (window_start after now - window). Timestamps compare as bank_time_iso text on SQLite
     * (one fixed-width format orders correctly) and as timestamptz on PostgreSQL. */
    {"bank_signin_throttle_get",
     "SELECT failures, window_start FROM sign_in_attempts"
     " WHERE email = %s AND ip = %s AND window_start > %pDz", NULL},
    /* One failure, counted atomically: a new window when the old one expired (args: email,
     * ip, now, cutoff, cutoff). */
    {"bank_signin_fail",
     "INSERT INTO sign_in_attempts (email, ip, failures, window_start) VALUES (%s, %s, 1, %pDz)"
     " ON CONFLICT (email, ip) DO UPDATE SET"
     " failures = CASE WHEN sign_in_attempts.window_start > %pDz"
     " THEN sign_in_attempts.failures + 1 ELSE 1 END,"
     " window_start = CASE WHEN sign_in_attempts.window_start > %pDz"
     " THEN sign_in_attempts.window_start ELSE excluded.window_start END"
     " RETURNING failures, window_start", NULL},
    /* A success clears the row and, in the same statement, reads what it held: the failures
     * of the window if it has not expired (else 0) and its start (args: email, ip, cutoff).
     * On PostgreSQL the DELETE waits for a failure being counted on the row, and a failure
     * counted after it waits for the sign-in's commit or rollback: none slips between. */
    {"bank_signin_clear",
     "DELETE FROM sign_in_attempts WHERE email = %s AND ip = %s"
     " RETURNING CASE WHEN window_start > %pDz THEN failures ELSE 0 END, window_start", NULL},
    {"bank_signin_prune",
     "DELETE FROM sign_in_attempts WHERE window_start < %pDz", NULL},
    /* throttle.c: failure counters per (scope, subject), the same shapes as the sign-in
     * statements above: the count of the unexpired window (args: scope, subject, cutoff). */
    {"bank_throttle_get",
     "SELECT failures, window_start FROM throttle_counts"
     " WHERE scope = %s AND subject = %s AND window_start > %pDz", NULL},
    /* args: scope, subject, now, cutoff, cutoff */
    {"bank_throttle_fail",
     "INSERT INTO throttle_counts (scope, subject, failures, window_start)"
     " VALUES (%s, %s, 1, %pDz) ON CONFLICT (scope, subject) DO UPDATE SET"
     " failures = CASE WHEN throttle_counts.window_start > %pDz"
     " THEN throttle_counts.failures + 1 ELSE 1 END,"
     " window_start = CASE WHEN throttle_counts.window_start > %pDz"
     " THEN throttle_counts.window_start ELSE excluded.window_start END"
     " RETURNING failures, window_start", NULL},
    /* args: scope, subject, cutoff */
    {"bank_throttle_clear",
     "DELETE FROM throttle_counts WHERE scope = %s AND subject = %s"
     " RETURNING CASE WHEN window_start > %pDz THEN failures ELSE 0 END, window_start", NULL},
    {"bank_throttle_prune",
     "DELETE FROM throttle_counts WHERE scope = %s AND window_start < %pDz", NULL},
    {"bank_device_upsert",
     "INSERT INTO devices (customer_id, device_token, created_at, last_seen_at)"
     " VALUES (%s, %s, %pDz, %pDz) ON CONFLICT (customer_id, device_token)"
     " DO UPDATE SET last_seen_at = excluded.last_seen_at",
     "INSERT INTO devices (customer_id, device_token, created_at, last_seen_at)"
     " VALUES (CAST(%s AS uuid), %s, %pDz, %pDz) ON CONFLICT (customer_id, device_token)"
     " DO UPDATE SET last_seen_at = excluded.last_seen_at"},

    /* bvn.c: BVN verification and account opening. */
    /* (bvn statements) */
    {"bank_bvn_record_find",
     "SELECT first_name, last_name, date_of_birth FROM bvn_records WHERE bvn = %s",
     "SELECT first_name, last_name, to_char(date_of_birth, 'YYYY-MM-DD') FROM bvn_records"
     " WHERE bvn = %s"},
    {"bank_customer_by_bvn",
     "SELECT id FROM customers WHERE bvn = %s", NULL},
    {"bank_account_by_customer",
     "SELECT id, customer_id, account_type, balance_minor, currency, status, bank_name,"
     " verified, bank_account_id, account_name, account_number, created_at, updated_at"
     " FROM accounts WHERE customer_id = %s",
     "SELECT id, customer_id, account_type, balance_minor, currency, status, bank_name,"
     " verified, bank_account_id, account_name, account_number, created_at, updated_at"
     " FROM accounts WHERE customer_id = CAST(%s AS uuid)"},
    /* Only a customer not yet verified: a concurrent verification makes this change 0 rows. */
    {"bank_customer_set_bvn",
     "UPDATE customers SET bvn = %s, referral_code = %s, updated_at = %pDz"
     " WHERE id = %s AND bvn IS NULL",
     "UPDATE customers SET bvn = %s, referral_code = %s, updated_at = %pDz"
     " WHERE id = CAST(%s AS uuid) AND bvn IS NULL"},
    {"bank_account_serial_next",
     "INSERT INTO account_serials (created_at) VALUES (%pDz) RETURNING serial", NULL},
    {"bank_account_insert",
     "INSERT INTO accounts (id, customer_id, account_type, balance_minor, currency, status,"
     " bank_name, verified, bank_account_id, account_name, account_number, created_at,"
     " updated_at) VALUES (%s, %s, 'personal', 0, 'NGN', 'bvn_verified', %s, TRUE, %s, %s,"
     " %s, %pDz, %pDz)",
     "INSERT INTO accounts (id, customer_id, account_type, balance_minor, currency, status,"
     " bank_name, verified, bank_account_id, account_name, account_number, created_at,"
     " updated_at) VALUES (CAST(%s AS uuid), CAST(%s AS uuid), 'personal', 0, 'NGN',"
     " 'bvn_verified', %s, TRUE, %s, %s, %s, %pDz, %pDz)"},

    /* webhook.c: payment notices. */
    /* (webhook statements) */
    {"bank_webhook_account",
     "SELECT id, customer_id FROM accounts WHERE bank_account_id = %s", NULL},
    /* Idempotent by the UNIQUE key: a repeat inserts nothing and reports 0 rows, on any
     * process, even when the copies arrive at the same moment. */
    {"bank_webhook_insert",
     "INSERT INTO payment_notices (id, partner, service, type, status, amount, charges,"
     " currency, narration, receiver_account_name, receiver_account_number,"
     " receiver_bank_code, session_id, status_code, status_message, transaction_reference,"
     " wallet_id, client_ref, customer_reference, account_id, customer_id, raw_body,"
     " received_at) VALUES (%s, %s, %s, %s, %s, %lld, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
     " %s, %s, %s, %s, %s, %s, %s, %pDz)"
     " ON CONFLICT (partner, transaction_reference, status_code) DO NOTHING",
     "INSERT INTO payment_notices (id, partner, service, type, status, amount, charges,"
     " currency, narration, receiver_account_name, receiver_account_number,"
     " receiver_bank_code, session_id, status_code, status_message, transaction_reference,"
     " wallet_id, client_ref, customer_reference, account_id, customer_id, raw_body,"
     " received_at) VALUES (CAST(%s AS uuid), %s, %s, %s, %s, %lld, %s, %s, %s, %s, %s, %s,"
     " %s, %s, %s, %s, %s, %s, %s, CAST(%s AS uuid), CAST(%s AS uuid), %s, %pDz)"
     " ON CONFLICT (partner, transaction_reference, status_code) DO NOTHING"},

    {NULL, NULL, NULL}};
/* clang-format on */

const char *bank_stmt_sql(const bank_stmt_t *st, const char *driver_name)
{
    if (st->pg && driver_name && strcmp(driver_name, "pgsql") == 0) {
        return st->pg;
    }
    return st->sql;
}

int bank_db_is_pgsql(const apr_dbd_driver_t *driver)
{
    return strcmp(apr_dbd_name(driver), "pgsql") == 0;
}

const char *bank_db_error_line(apr_pool_t *p, const char *msg)
{
    return msg ? apr_pstrndup(p, msg, strcspn(msg, "\r\n")) : "unknown database error";
}

static bank_db_rc classify(bank_db_t *db, int rv)
{
    db->error = bank_db_error_line(db->pool, apr_dbd_error(db->driver, db->handle, rv));
    if (db->in_txn) {
        db->txn_failed = 1;
    }
    /* SQLITE_READONLY's own text: the driver's statements are prepared the legacy way, so
     * a step that fails returns SQLITE_ERROR whatever the reason. */
    if (!bank_db_is_pgsql(db->driver) && strstr(db->error, "readonly database")) {
        db->read_only = 1;
    }
    /* SQLITE_BUSY (5) / SQLITE_LOCKED (6) after the driver's own retries and busy_timeout;
     * PostgreSQL reports lock and statement time-outs in the message text. */
    if ((strcmp(apr_dbd_name(db->driver), "sqlite3") == 0 && (rv == 5 || rv == 6)) ||
        strstr(db->error, "locked") || strstr(db->error, "timeout") ||
        strstr(db->error, "canceling statement")) {
        return BANK_DB_BUSY;
    }
    return BANK_DB_ERROR;
}

/* After a failed statement: whether running it once more is both useful and safe. Only
 * outside a transaction (inside one, the transaction is gone with the connection), and only
 * when the module re-opened the connection: a FRESH one never ran the statement; after a
 * loss (RESTORED) a read or a BEGIN can be repeated, a write might have committed. */
static int retry(bank_db_t *db, bank_db_rc rc, int read_only)
{
    bank_conn_state st;

    if (rc != BANK_DB_ERROR || db->in_txn || !db->recover) {
        return 0;
    }
    st = db->recover(db);
    return st == BANK_CONN_FRESH || (st == BANK_CONN_RESTORED && read_only);
}

static apr_dbd_prepared_t *lookup(bank_db_t *db, const char *label)
{
    apr_dbd_prepared_t *st =
        db->prepared ? apr_hash_get(db->prepared, label, APR_HASH_KEY_STRING) : NULL;
    if (!st) {
        db->error = apr_pstrcat(db->pool, "statement not prepared: ", label, (char *)NULL);
    }
    return st;
}

/* SQLite through apr_dbd: the sqlite3 driver runs every call under one process-wide mutex,
 * and SQLite's busy_timeout waits inside such a call. A thread waiting there for the write
 * lock that another thread of the same process holds mid-transaction keeps that thread from
 * going on until the wait times out (10 s a statement with busy_timeout 10000, measured).
 * So within a process a transaction holds writer_lock from its BEGIN to its end, and a
 * statement outside one holds it while it runs: no thread waits on SQLite for a lock its own
 * process holds. Waits across processes stay SQLite's. No lock on PostgreSQL. */
static int hold(bank_db_t *db)
{
    if (!db->writer_lock || db->holding) {
        return 0;
    }
    apr_thread_mutex_lock(db->writer_lock);
    db->holding = 1;
    return 1;
}

static void release(bank_db_t *db)
{
    if (db->holding) {
        db->holding = 0;
        apr_thread_mutex_unlock(db->writer_lock);
    }
}

/* Whether the statement under label only reads (its text starts with SELECT). */
static int is_select(const bank_db_t *db, const char *label)
{
    const bank_stmt_t *st;

    for (st = bank_statements; st->label; st++) {
        if (strcmp(st->label, label) == 0) {
            return strncasecmp(bank_stmt_sql(st, apr_dbd_name(db->driver)), "SELECT ", 7) == 0;
        }
    }
    return 0;
}

/* Reads every row, until -1, so no result is left pending on a pooled connection. */
static void read_rows(bank_db_t *db, apr_dbd_results_t *res, bank_rows_t *out)
{
    apr_dbd_row_t *row = NULL;
    apr_array_header_t *rows = apr_array_make(db->pool, 8, sizeof(const char **));
    int i;

    out->ncols = apr_dbd_num_cols(db->driver, res);
    while (apr_dbd_get_row(db->driver, db->pool, res, &row, -1) == 0) {
        const char **cols = apr_pcalloc(db->pool, sizeof(char *) * (out->ncols + 1));
        for (i = 0; i < out->ncols; i++) {
            const char *v = NULL;
            /* apr_dbd_datum_get reports SQL NULL as APR_ENOENT on both drivers. */
            if (apr_dbd_datum_get(db->driver, row, i, APR_DBD_TYPE_STRING, &v) == APR_SUCCESS &&
                v) {
                cols[i] = apr_pstrdup(db->pool, v);
            }
        }
        *(const char ***)apr_array_push(rows) = cols;
    }
    out->nrows = rows->nelts;
    out->rows = (const char ***)rows->elts;
}

int bank_db_select_sql(bank_db_t *db, const char *sql, bank_rows_t *out)
{
    apr_dbd_results_t *res = NULL;
    /* random=1: the pgsql driver reports SQL errors only in that mode. */
    int rv = apr_dbd_select(db->driver, db->pool, db->handle, &res, sql, 1);

    memset(out, 0, sizeof(*out));
    if (rv == 0) {
        read_rows(db, res, out);
    }
    return rv;
}

static bank_db_rc run_select(bank_db_t *db, const char *label, bank_rows_t *out, int nargs,
                             const char *const *args)
{
    apr_dbd_prepared_t *st = lookup(db, label);
    apr_dbd_results_t *res = NULL;
    int rv;

    memset(out, 0, sizeof(*out));
    if (!st) {
        return BANK_DB_NO_STMT;
    }
    /* random=1: the pgsql driver reports SQL errors only in that mode. */
    rv = apr_dbd_pselect(db->driver, db->pool, db->handle, &res, st, 1, nargs, (const char **)args);
    /* looked up again: recover may have replaced the connection and its statements */
    if (rv != 0 && retry(db, classify(db, rv), is_select(db, label)) &&
        (st = lookup(db, label)) != NULL) {
        res = NULL;
        rv = apr_dbd_pselect(db->driver, db->pool, db->handle, &res, st, 1, nargs,
                             (const char **)args);
    }
    if (rv != 0) {
        return classify(db, rv);
    }
    read_rows(db, res, out);
    return BANK_DB_OK;
}

bank_db_rc bank_db_select(bank_db_t *db, const char *label, bank_rows_t *out, int nargs,
                          const char *const *args)
{
    int mine = hold(db); /* no-op inside a transaction, which holds it already */
    bank_db_rc rc = run_select(db, label, out, nargs, args);
    if (mine) {
        release(db);
    }
    return rc;
}

bank_db_rc bank_db_exec(bank_db_t *db, const char *label, int *affected, int nargs,
                        const char *const *args)
{
    apr_dbd_prepared_t *st = lookup(db, label);
    int n = 0, rv, mine;

    if (!st) {
        return BANK_DB_NO_STMT;
    }
    mine = hold(db);
    rv = apr_dbd_pquery(db->driver, db->pool, db->handle, &n, st, nargs, (const char **)args);
    if (rv != 0 && retry(db, classify(db, rv), 0) && (st = lookup(db, label)) != NULL) {
        rv = apr_dbd_pquery(db->driver, db->pool, db->handle, &n, st, nargs, (const char **)args);
    }
    if (mine) {
        release(db);
    }
    if (affected) {
        *affected = n;
    }
    return rv == 0 ? BANK_DB_OK : classify(db, rv);
}

/* A transaction still open when its pool goes away (an early return between begin and
 * end) is rolled back, so the pooled connection never goes back to mod_dbd inside one.
 * Registered after mod_dbd's release cleanup, so it runs before it. */
static apr_status_t rollback_open_txn(void *data)
{
    bank_db_t *db = data;
    if (db->in_txn) {
        bank_db_end(db, 0);
    }
    return APR_SUCCESS;
}

/* PostgreSQL transactions are plain statements: apr-util 1.6's pgsql transaction_start
 * dereferences a NULL transaction when BEGIN fails with a result, as it does on a connection
 * the server closed (a restart), which would crash the httpd child. The same round trip
 * counts the session's prepared statements: none means libpq re-opened the connection under
 * mod_dbd, and the module repairs it before the transaction (inside one, every prepared
 * statement would fail). */
static bank_db_rc pg_begin(bank_db_t *db, int *fresh)
{
    bank_rows_t rows;
    bank_db_rc rc;
    int n = 0,
        rv = bank_db_select_sql(db, "BEGIN; SELECT count(*) FROM pg_prepared_statements", &rows);

    if (rv != 0) {
        rc = classify(db, rv);
        /* never leave a half-begun transaction on the connection (fails fast if lost) */
        apr_dbd_query(db->driver, db->handle, &n, "ROLLBACK");
        return rc;
    }
    *fresh = rows.nrows == 1 && rows.rows[0][0] && strcmp(rows.rows[0][0], "0") == 0;
    return BANK_DB_OK;
}

static int pg_end(bank_db_t *db, const char *sql)
{
    int n = 0;
    return apr_dbd_query(db->driver, db->handle, &n, sql);
}

bank_db_rc bank_db_begin(bank_db_t *db)
{
    bank_db_rc rc;
    int rv, fresh = 0;

    db->txn = NULL; /* the driver allocates it; a stale pointer would be reused */
    db->txn_failed = 0;
    db->in_txn = 0;
    if (!bank_db_is_pgsql(db->driver)) {
        hold(db); /* until bank_db_end */
        if ((rv = apr_dbd_transaction_start(db->driver, db->pool, db->handle, &db->txn)) != 0) {
            rc = classify(db, rv);
            /* the driver keeps a failed BEGIN's transaction on the handle: end it, or every
             * later statement on this pooled connection would report the same error */
            if (db->txn) {
                apr_dbd_transaction_mode_set(db->driver, db->txn, APR_DBD_TRANSACTION_ROLLBACK);
                apr_dbd_transaction_end(db->driver, db->pool, db->txn);
                db->txn = NULL;
            }
            release(db);
            return rc;
        }
    } else {
        rc = pg_begin(db, &fresh);
        if (retry(db, rc, 1)) {
            rc = pg_begin(db, &fresh);
        } else if (rc == BANK_DB_OK && fresh && db->recover) {
            pg_end(db, "ROLLBACK");
            db->recover(db);
            rc = pg_begin(db, &fresh);
        }
        if (rc != BANK_DB_OK) {
            return rc;
        }
    }
    db->in_txn = 1;
    if (!db->txn_cleanup) {
        apr_pool_cleanup_register(db->pool, db, rollback_open_txn, apr_pool_cleanup_null);
        db->txn_cleanup = 1;
    }
    return BANK_DB_OK;
}

bank_db_rc bank_db_end(bank_db_t *db, int commit)
{
    int failed = db->txn_failed, rv;

    if (!db->in_txn) {
        return BANK_DB_ERROR;
    }
    if (bank_db_is_pgsql(db->driver)) {
        rv = pg_end(db, commit && !failed ? "COMMIT" : "ROLLBACK");
    } else {
        if (!commit || failed) {
            apr_dbd_transaction_mode_set(db->driver, db->txn, APR_DBD_TRANSACTION_ROLLBACK);
        }
        rv = apr_dbd_transaction_end(db->driver, db->pool, db->txn);
    }
    db->txn = NULL;
    db->in_txn = 0;
    db->txn_failed = 0;
    release(db);
    if (rv != 0) {
        return classify(db, rv);
    }
    return failed && commit ? BANK_DB_ERROR : BANK_DB_OK;
}

const char *bank_rows_get(const bank_rows_t *r, int row, int col)
{
    if (!r || row < 0 || row >= r->nrows || col < 0 || col >= r->ncols) {
        return NULL;
    }
    return r->rows[row][col];
}

int bank_db_bool(const char *v)
{
    return v && (!strcmp(v, "1") || !strcasecmp(v, "t") || !strcasecmp(v, "true"));
}
