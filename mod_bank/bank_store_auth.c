/* Access tokens, the sign-in throttle and devices: their statements, the columns each
 * SELECT returns, and the typed functions over them (bank_store.h). */
#include <apr_strings.h>
#include "bank_sql.h"
#include "bank_store.h"

static const bank_col_t token_cols[] = {
    BANK_COL(TEXT, bank_token_row_t, customer_id),  BANK_COL(TEXT, bank_token_row_t, hash),
    BANK_COL(TEXT, bank_token_row_t, abilities),    BANK_COL(TEXT, bank_token_row_t, expires_at),
    BANK_COL(TEXT, bank_token_row_t, last_used_at), BANK_COL_LAST};

typedef struct {
    const char *id;
} id_row_t;
static const bank_col_t id_cols[] = {BANK_COL(TEXT, id_row_t, id), BANK_COL_LAST};

typedef struct {
    const char *token_id; /* NULL on the row that says where the feed stands */
    const char *position;
    const char *customer_id; /* a changed BVN answer's customer, "*" for all (token_id -1) */
} revocation_row_t;
static const bank_col_t revocation_cols[] = {
    BANK_COL(TEXT, revocation_row_t, token_id), BANK_COL(TEXT, revocation_row_t, position),
    BANK_COL(TEXT, revocation_row_t, customer_id), BANK_COL_LAST};

static const bank_col_t throttle_cols[] = {BANK_COL(INT64, bank_throttle_t, failures),
                                           BANK_COL(TEXT, bank_throttle_t, window_start),
                                           BANK_COL_LAST};

/* VALUES columns are column1 (the token's id) and column2 (the use's time) on both drivers. */
#define USE_ROW "(%lld, %pDz)"
#define USE_ROWS_2 USE_ROW ", " USE_ROW
#define USE_ROWS_4 USE_ROWS_2 ", " USE_ROWS_2
#define USE_ROWS_8 USE_ROWS_4 ", " USE_ROWS_4
#define USE_ROWS_16 USE_ROWS_8 ", " USE_ROWS_8
#define USE_ROWS_32 USE_ROWS_16 ", " USE_ROWS_16
#define USE_ROWS_64 USE_ROWS_32 ", " USE_ROWS_32
#define TOKEN_USES(rows)                                                                           \
    "UPDATE auth_access_tokens SET last_used_at = v.column2 FROM (VALUES " rows ") AS v"           \
    " WHERE auth_access_tokens.id = v.column1 AND (auth_access_tokens.last_used_at IS NULL"        \
    " OR auth_access_tokens.last_used_at < v.column2)"
static const struct {
    int rows;
    const char *label;
} use_stmts[] = {{BANK_TOKEN_USES_MAX, "bank_token_uses_64"},
                 {8, "bank_token_uses_8"},
                 {1, "bank_token_uses_1"}};

/* clang-format off */
const bank_stmt_t bank_store_auth_sql[] = {
    /* Bearer verification: token_cols. */
    {"bank_token_find",
     "SELECT tokenable_id, hash, abilities, expires_at, last_used_at"
     " FROM auth_access_tokens WHERE id = %lld AND type = 'auth_token'"},
    /* Recorded uses (bank_token_uses.h), USES_MAX at most per statement: (id, time) rows;
     * a time never moves back (two processes may write one token's uses out of order). */
    {"bank_token_uses_1", TOKEN_USES(USE_ROW)},
    {"bank_token_uses_8", TOKEN_USES(USE_ROWS_8)},
    {"bank_token_uses_64", TOKEN_USES(USE_ROWS_64)},
    /* Tokens issued by sign-in and bankctl: id_cols. */
    {"bank_token_insert",
     "INSERT INTO auth_access_tokens (tokenable_id, type, name, hash, abilities, created_at,"
     " updated_at, expires_at) VALUES ({uuid}, 'auth_token', NULL, %s, %s, %pDz, %pDz, %pDz)"
     " RETURNING id"},
    {"bank_token_delete",
     "DELETE FROM auth_access_tokens WHERE id = %lld AND type = 'auth_token'"},
    {"bank_token_revoke_all",
     "DELETE FROM auth_access_tokens WHERE tokenable_id = {uuid}"},
    /* bankctl token prune: up to a batch of tokens expired before a time (the index on
     * expires_at: bounded work however large the table; 014 keeps their deletion off the
     * revocation feed). */
    {"bank_tokens_prune",
     "DELETE FROM auth_access_tokens WHERE id IN (SELECT id FROM auth_access_tokens"
     " WHERE expires_at < %pDz LIMIT %d)"},
    /* The revocation feed (auth_token_revocations, written by the triggers of the tokens and
     * of what a BVN answer is made of): one row with where the feed stands now, then the
     * rows added after the position given, at most BANK_CHANGE_FEED_MAX + 1 (revocation_cols):
     * a revoked token's id, or -1 and the customer whose BVN answer changed. */
    {"bank_token_revocations",
     "SELECT NULL, {feed_position}, NULL UNION ALL SELECT CAST(token_id AS text), NULL,"
     " CAST(customer_id AS text)"
     " FROM (SELECT token_id, customer_id FROM {feed_since} LIMIT 1001) AS r"},

    /* Failures of (lower-cased e-mail, client IP) in the window that has not yet expired
     * (window_start after now - window). Timestamps compare as bank_time_iso text on SQLite
     * (one fixed-width format orders correctly) and as timestamptz on PostgreSQL.
     * throttle_cols, as the two below. */
    {"bank_signin_throttle_get",
     "SELECT failures, window_start FROM sign_in_attempts"
     " WHERE email = %s AND ip = %s AND window_start > %pDz"},
    /* One failure, counted atomically: a new window when the old one expired (args: email,
     * ip, now, cutoff, cutoff). */
    {"bank_signin_fail",
     "INSERT INTO sign_in_attempts (email, ip, failures, window_start) VALUES (%s, %s, 1, %pDz)"
     " ON CONFLICT (email, ip) DO UPDATE SET"
     " failures = CASE WHEN sign_in_attempts.window_start > %pDz"
     " THEN sign_in_attempts.failures + 1 ELSE 1 END,"
     " window_start = CASE WHEN sign_in_attempts.window_start > %pDz"
     " THEN sign_in_attempts.window_start ELSE excluded.window_start END"
     " RETURNING failures, window_start"},
    /* A success clears the row and, in the same statement, reads what it held: the failures
     * of the window if it has not expired (else 0) and its start (args: email, ip, cutoff).
     * On PostgreSQL the DELETE waits for a failure being counted on the row, and a failure
     * counted after it waits for the sign-in's commit or rollback: none slips between. */
    {"bank_signin_clear",
     "DELETE FROM sign_in_attempts WHERE email = %s AND ip = %s"
     " RETURNING CASE WHEN window_start > %pDz THEN failures ELSE 0 END, window_start"},
    {"bank_signin_prune",
     "DELETE FROM sign_in_attempts WHERE window_start < %pDz"},

    /* Failure counters per (scope, subject) (bank_throttle.c), the same shapes as the
     * sign-in statements above: throttle_cols. The count of the unexpired window (args:
     * scope, subject, cutoff). */
    {"bank_throttle_get",
     "SELECT failures, window_start FROM throttle_counts"
     " WHERE scope = %s AND subject = %s AND window_start > %pDz"},
    /* args: scope, subject, now, cutoff, cutoff */
    {"bank_throttle_fail",
     "INSERT INTO throttle_counts (scope, subject, failures, window_start)"
     " VALUES (%s, %s, 1, %pDz) ON CONFLICT (scope, subject) DO UPDATE SET"
     " failures = CASE WHEN throttle_counts.window_start > %pDz"
     " THEN throttle_counts.failures + 1 ELSE 1 END,"
     " window_start = CASE WHEN throttle_counts.window_start > %pDz"
     " THEN throttle_counts.window_start ELSE excluded.window_start END"
     " RETURNING failures, window_start"},
    /* args: scope, subject, cutoff */
    {"bank_throttle_clear",
     "DELETE FROM throttle_counts WHERE scope = %s AND subject = %s"
     " RETURNING CASE WHEN window_start > %pDz THEN failures ELSE 0 END, window_start"},
    {"bank_throttle_prune",
     "DELETE FROM throttle_counts WHERE scope = %s AND window_start < %pDz"},
    /* The device a customer signed in on, with the session that did (args: customer,
     * device, token id or NULL, now, now). The schema's devices_take trigger takes the device
     * from any other customer first (012_device_owner.sql). */
    {"bank_device_upsert",
     "INSERT INTO devices (customer_id, device_token, token_id, created_at, last_seen_at)"
     " VALUES ({uuid}, %s, %lld, %pDz, %pDz) ON CONFLICT (customer_id, device_token)"
     " DO UPDATE SET last_seen_at = excluded.last_seen_at, token_id = excluded.token_id"},
    /* BankMaxDevices: the device just signed in on stays, with the customer's N - 1 others
     * seen last; the rest go (args: customer, device, customer, device, N - 1). */
    {"bank_device_trim",
     "DELETE FROM devices WHERE customer_id = {uuid} AND device_token <> %s"
     " AND device_token NOT IN (SELECT device_token FROM devices WHERE customer_id = {uuid}"
     " AND device_token <> %s ORDER BY last_seen_at DESC, device_token LIMIT %d)"},
    {NULL, NULL}};
/* clang-format on */

/* SQLite schemas before 012 (devices without token_id): the device kept without its
 * session, as 0.2.0 kept it (the token id is bound and not stored). Signing out then leaves
 * the device, until a sign-in on it after the migration records the session. */
/* clang-format off */
const bank_stmt_older_t bank_store_auth_older[] = {
    {"bank_device_upsert",
     "INSERT INTO devices (customer_id, device_token, created_at, last_seen_at)"
     " SELECT c, d, f, l FROM (SELECT {uuid} AS c, %s AS d, %lld AS t, %pDz AS f, %pDz AS l)"
     " WHERE true ON CONFLICT (customer_id, device_token)"
     " DO UPDATE SET last_seen_at = excluded.last_seen_at"},
    {NULL, NULL}};
/* clang-format on */

bank_db_rc bank_store_token_find(bank_db_t *db, const char *id, bank_token_row_t *out)
{
    const char *args[] = {id};
    return bank_db_row(db, "bank_token_find", BANK_NARGS(args), args, token_cols, out,
                       sizeof(*out));
}

typedef struct {
    int count;
    const char *const *ids, *const *times;
} uses_t;

/* uses in one statement, the smallest of use_stmts that holds them, its extra rows copies of
 * the last use (the same row written twice with the same time). */
static bank_db_rc uses_row(bank_db_t *db, const uses_t *u)
{
    const char **args;
    int i, k = 0;

    while (k + 1 < (int)(sizeof(use_stmts) / sizeof(use_stmts[0])) &&
           use_stmts[k + 1].rows >= u->count) {
        k++;
    }
    args = apr_palloc(bank_db_pool(db), sizeof(*args) * 2 * (size_t)use_stmts[k].rows);
    for (i = 0; i < use_stmts[k].rows; i++) {
        int j = i < u->count ? i : u->count - 1;
        args[2 * i] = u->ids[j];
        args[2 * i + 1] = u->times[j];
    }
    return bank_db_exec(db, use_stmts[k].label, NULL, 2 * use_stmts[k].rows, args);
}

/* Recording uses is bookkeeping: on PostgreSQL it waits neither for a synchronous standby
 * (its commit is durable on the primary only: a use lost in a failover is a last_used_at a
 * minute older) nor for a lock another session holds on a row. */
static bank_db_rc uses_txn(bank_db_t *db, void *baton)
{
    if (bank_db_query(db, "SET LOCAL synchronous_commit = local; SET LOCAL lock_timeout = 100") !=
        0) {
        return bank_db_fail(db, bank_db_error(db));
    }
    return uses_row(db, baton);
}

bank_db_rc bank_store_token_uses(bank_db_t *db, int count, const char *const *ids,
                                 const char *const *times)
{
    uses_t u = {count, ids, times};

    if (count < 1 || count > BANK_TOKEN_USES_MAX) {
        return bank_db_fail(db, "bank_store_token_uses: 1 to 64 uses at a time");
    }
    return bank_db_is_pgsql(db) ? bank_db_transaction(db, uses_txn, &u) : uses_row(db, &u);
}

bank_db_rc bank_store_token_insert(bank_db_t *db, const char *customer_id, const char *hash,
                                   const char *abilities, const char *now, const char *expires,
                                   const char **id)
{
    const char *args[] = {customer_id, hash, abilities, now, now, expires};
    id_row_t row;
    bank_db_rc rc =
        bank_db_row(db, "bank_token_insert", BANK_NARGS(args), args, id_cols, &row, sizeof(row));

    if (rc == BANK_DB_NOT_FOUND || (rc == BANK_DB_OK && !row.id)) {
        return bank_db_fail(db, "the token insert returned no id");
    }
    *id = row.id;
    return rc;
}

bank_db_rc bank_store_token_delete(bank_db_t *db, const char *id, int *count)
{
    const char *args[] = {id};
    return bank_db_exec(db, "bank_token_delete", count, BANK_NARGS(args), args);
}

bank_db_rc bank_store_token_revoke_all(bank_db_t *db, const char *customer_id, int *count)
{
    const char *args[] = {customer_id};
    return bank_db_exec(db, "bank_token_revoke_all", count, BANK_NARGS(args), args);
}

bank_db_rc bank_store_tokens_prune(bank_db_t *db, const char *before, int batch, int *removed)
{
    const char *args[] = {before, apr_itoa(bank_db_pool(db), batch)};
    return bank_db_exec(db, "bank_tokens_prune", removed, BANK_NARGS(args), args);
}

bank_db_rc bank_store_token_revocations(bank_db_t *db, const char *position,
                                        apr_array_header_t **ids, apr_array_header_t **customers,
                                        const char **next)
{
    const char *args[] = {position};
    apr_array_header_t *rows = NULL;
    bank_db_rc rc = bank_db_rows(db, "bank_token_revocations", BANK_NARGS(args), args,
                                 revocation_cols, sizeof(revocation_row_t), &rows);
    int i;

    if (rc == BANK_DB_NOT_FOUND) {
        rc = BANK_DB_OK;
    }
    if (rc != BANK_DB_OK) {
        return rc;
    }
    *next = NULL;
    *ids = apr_array_make(bank_db_pool(db), rows ? rows->nelts : 0, sizeof(const char *));
    *customers = apr_array_make(bank_db_pool(db), 0, sizeof(const char *));
    for (i = 0; rows && i < rows->nelts; i++) {
        const revocation_row_t *r = &APR_ARRAY_IDX(rows, i, revocation_row_t);
        if (r->customer_id) {
            APR_ARRAY_PUSH(*customers, const char *) = r->customer_id;
        } else if (r->token_id) {
            APR_ARRAY_PUSH(*ids, const char *) = r->token_id;
        } else {
            *next = r->position;
        }
    }
    if (!*next) {
        return bank_db_fail(db, "the revocation feed returned no position");
    }
    return BANK_DB_OK;
}

/* The statements of each counting table: get, fail, clear, prune. */
static const char *const count_labels[][4] = {
    [BANK_COUNTS_SIGN_IN] = {"bank_signin_throttle_get", "bank_signin_fail", "bank_signin_clear",
                             "bank_signin_prune"},
    [BANK_COUNTS_SHARED] = {"bank_throttle_get", "bank_throttle_fail", "bank_throttle_clear",
                            "bank_throttle_prune"}};

/* A count row: none means no failures (get) or nothing to clear (clear); the upsert
 * always returns one. */
static bank_db_rc count_row(bank_db_t *db, const char *label, int nargs, const char *const *args,
                            bank_throttle_t *out, int none_ok)
{
    bank_db_rc rc = bank_db_row(db, label, nargs, args, throttle_cols, out, sizeof(*out));

    if (rc == BANK_DB_NOT_FOUND && !none_ok) {
        return bank_db_fail(db,
                            apr_pstrcat(bank_db_pool(db), label, " returned no row", (char *)NULL));
    }
    return rc == BANK_DB_NOT_FOUND ? BANK_DB_OK : rc;
}

bank_db_rc bank_store_count_get(bank_db_t *db, bank_counts_table table, const char *a,
                                const char *b, const char *cutoff, bank_throttle_t *out)
{
    const char *args[] = {a, b, cutoff};
    return count_row(db, count_labels[table][0], BANK_NARGS(args), args, out, 1);
}

bank_db_rc bank_store_count_fail(bank_db_t *db, bank_counts_table table, const char *a,
                                 const char *b, const char *now, const char *cutoff,
                                 bank_throttle_t *out)
{
    const char *args[] = {a, b, now, cutoff, cutoff};
    return count_row(db, count_labels[table][1], BANK_NARGS(args), args, out, 0);
}

bank_db_rc bank_store_count_clear(bank_db_t *db, bank_counts_table table, const char *a,
                                  const char *b, const char *cutoff, bank_throttle_t *out)
{
    const char *args[] = {a, b, cutoff};
    return count_row(db, count_labels[table][2], BANK_NARGS(args), args, out, 1);
}

bank_db_rc bank_store_count_prune(bank_db_t *db, bank_counts_table table, const char *scope,
                                  const char *before)
{
    const char *args[] = {table == BANK_COUNTS_SHARED ? scope : before, before};
    return bank_db_exec(db, count_labels[table][3], NULL, table == BANK_COUNTS_SHARED ? 2 : 1,
                        args);
}

bank_db_rc bank_store_device_upsert(bank_db_t *db, const char *customer_id, const char *device,
                                    const char *token_id, const char *now)
{
    const char *args[] = {customer_id, device, token_id, now, now};
    return bank_db_exec(db, "bank_device_upsert", NULL, BANK_NARGS(args), args);
}

bank_db_rc bank_store_device_trim(bank_db_t *db, const char *customer_id, const char *device,
                                  int keep)
{
    const char *args[] = {customer_id, device, customer_id, device,
                          apr_itoa(bank_db_pool(db), keep > 0 ? keep - 1 : 0)};
    return bank_db_exec(db, "bank_device_trim", NULL, BANK_NARGS(args), args);
}
