/* Inside the data layer only (bank_db.c and the store files bank_store_*.c): statements by
 * label, their SQL written once for both drivers, and rows decoded into structs by a column
 * descriptor that stands next to its SELECT.
 *
 * Parameters are typed apr_dbd placeholders (%s text, %lld bigint, %d int, %pDz
 * timestamptz, %pDd date) so PostgreSQL prepares them with the right types while SQLite
 * binds them as text. apr_dbd reads every % followed by a letter as a placeholder, even
 * inside string literals: a literal percent is written %%. Where the drivers need other
 * text, a marker in braces says so, expanded per driver when the statement is prepared
 * (markers never contain a percent sign):
 *   {uuid}       a uuid parameter: CAST(%s AS uuid) on PostgreSQL, %s on SQLite (where the
 *                cast would yield Inf)
 *   {bool}       a boolean parameter given as 0/1: %d <> 0 on PostgreSQL, %d on SQLite
 *   {ymd:COLUMN} a date column as YYYY-MM-DD: to_char(COLUMN, 'YYYY-MM-DD') on PostgreSQL,
 *                the column itself on SQLite (which stores that text)
 *   {skip_locked} after a SELECT's LIMIT: FOR UPDATE SKIP LOCKED on PostgreSQL (rows
 *                another transaction holds are passed over), nothing on SQLite (one writer
 *                at a time)
 *   {noindex:COLUMN} a column whose index must not drive the search (another term's, such
 *                as the primary key's, should): +COLUMN on SQLite, the column on PostgreSQL
 *   {feed_position} {feed_since}  the token revocation feed's position and the rows after
 *                one (bank_store_auth.c; a seq on SQLite, a snapshot on PostgreSQL)
 *   {privileges_missing} {sequences_missing} {trigger_sources}  whole statements of the
 *                catalog (bank_store_privileges.c); on SQLite, which has no roles, one that
 *                returns no row */
#ifndef BANK_SQL_H
#define BANK_SQL_H

#include <stddef.h>
#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_hash.h>
#include "bank_db.h"

typedef struct {
    const char *label;
    const char *sql; /* both drivers, with markers */
} bank_stmt_t;

/* A statement's form for a SQLite schema older than the one it was written for (down to
 * BANK_SCHEMA_SQLITE_OLDEST, bank_version.h): the same label and parameters, valid on the
 * older schema and on the newer one; it stands next to the statement it replaces. */
typedef struct {
    const char *label;
    const char *sql;
} bank_stmt_older_t;

/* The statements of each store file, each list ending with {NULL, NULL}. */
extern const bank_stmt_t bank_store_auth_sql[];
extern const bank_stmt_t bank_store_customer_sql[];
extern const bank_stmt_t bank_store_notice_sql[];
extern const bank_stmt_t bank_store_push_sql[];
extern const bank_stmt_t bank_store_identity_sql[];
extern const bank_stmt_t bank_store_privileges_sql[];
/* The older forms (bank_stmt_older_t), the list ending with {NULL, NULL}. */
extern const bank_stmt_older_t bank_store_auth_older[];
extern const bank_stmt_older_t bank_store_notice_older[];

/* Adds to needs (table name -> int of BANK_PRIV_* bits, bank_store.h) what running sql (or a
 * trigger function's body) takes on each table it names: INSERT INTO, UPDATE, DELETE FROM,
 * ON CONFLICT DO UPDATE, and SELECT on what FROM and JOIN read and on a written table whose
 * rows a WHERE or RETURNING reads. Names are lower-cased; functions and the catalog's
 * (pg_*) are left out. */
void bank_sql_needs(apr_pool_t *p, const char *sql, apr_hash_t *needs);

/* Statement i of all the store's statements, or NULL past the last. */
const bank_stmt_t *bank_stmt_at(int i);
/* The statement under label, or NULL. */
const bank_stmt_t *bank_stmt_find(const char *label);
/* The statement's text for a driver, markers expanded (allocated from p). */
const char *bank_stmt_expand(apr_pool_t *p, const char *sql, int pgsql);
/* label's older form (SQLite, expanded), prepared where its own form does not prepare (a
 * schema from before the statement's); NULL for none. */
const char *bank_stmt_older(apr_pool_t *p, const char *label);

/* How a column is stored into the row struct. */
typedef enum {
    BANK_COL_END = 0,
    BANK_COL_TEXT, /* const char *, NULL for SQL NULL on both drivers */
    BANK_COL_BOOL, /* int: 1 for SQLite's 1 and PostgreSQL's t/true, else 0 */
    BANK_COL_INT64 /* apr_int64_t, 0 for NULL */
} bank_col_type;

typedef struct {
    bank_col_type type;
    apr_size_t offset;
} bank_col_t;

/* One entry per column of the SELECT, in its order; the list ends with BANK_COL_LAST. */
#define BANK_COL(kind, type, field)                                                                \
    {                                                                                              \
        BANK_COL_##kind, offsetof(type, field)                                                     \
    }
#define BANK_COL_LAST                                                                              \
    {                                                                                              \
        BANK_COL_END, 0                                                                            \
    }

/* Runs a prepared SELECT (or INSERT ... RETURNING) with nargs text arguments (NULL = SQL
 * NULL), reads every row, and decodes the first into *out (a struct of size bytes,
 * zeroed first). BANK_DB_NOT_FOUND when there is no row. */
bank_db_rc bank_db_row(bank_db_t *db, const char *label, int nargs, const char *const *args,
                       const bank_col_t *cols, void *out, apr_size_t size);
/* The same, every row decoded into an array of structs of size bytes. */
bank_db_rc bank_db_rows(bank_db_t *db, const char *label, int nargs, const char *const *args,
                        const bank_col_t *cols, apr_size_t size, apr_array_header_t **out);
/* Runs a prepared INSERT/UPDATE/DELETE; *affected gets the row count if not NULL. */
bank_db_rc bank_db_exec(bank_db_t *db, const char *label, int *affected, int nargs,
                        const char *const *args);

/* A boolean column as either driver prints it: 1 for "1"/"t"/"true" (SQLite's integer 1,
 * PostgreSQL's boolean), 0 otherwise (NULL included). */
int bank_db_bool(const char *v);

#define BANK_NARGS(a) ((int)(sizeof(a) / sizeof((a)[0])))

#endif
