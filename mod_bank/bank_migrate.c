/* The schema migration engine (bank_migrate.h). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <apr_strings.h>
#include <apr_file_io.h>
#include <apr_file_info.h>
#include <apr_lib.h>
#include <apr_tables.h>
#include <apr_time.h>
#include "bank_migrate.h"
#include "bank_sql.h"

/* PostgreSQL: how long a migration's statement waits for a lock before its script is rolled
 * back and tried again, and how many tries (about 3 minutes of them) before bankctl migrate
 * gives up. */
#define BANK_MIGRATE_LOCK_WAIT "100ms"
#define BANK_MIGRATE_LOCK_TRIES 300
#include "bank_time.h"

#define SQL_FILE_MAX (64 * 1024 * 1024)

typedef struct {
    bank_db_t *db;
    apr_pool_t *pool;
    bank_migrate_say_fn say;
    void *baton;
    bank_migrate_result_t *res;
} run_t;

typedef struct {
    const char *name;
    int version;
} script_t;

static int failed(run_t *m, int sql_dir, const char *fmt, const char *a, const char *b)
{
    m->res->error = apr_psprintf(m->pool, fmt, a, b);
    m->res->sql_dir = sql_dir;
    return -1;
}

/* The next statement of an SQLite script, or NULL when only blanks and comments remain.
 * The sqlite3 driver's apr_dbd_query runs a whole script but reports only the last
 * statement's result, so scripts are fed to it one statement at a time. Quotes, comments
 * and CREATE TRIGGER ... BEGIN ...; END; bodies are respected. */
static char *next_statement(apr_pool_t *p, const char **sp)
{
    const char *s = *sp, *begin = NULL;
    int nwords = 0, create = 0, trigger = 0, end_ok = 0;
    char prev = 0;

    while (*s) {
        char ch = *s;
        if (ch == '-' && s[1] == '-') {
            s += strcspn(s, "\n");
        } else if (ch == '/' && s[1] == '*') {
            const char *e = strstr(s + 2, "*/");
            s = e ? e + 2 : s + strlen(s);
        } else if (apr_isspace(ch)) {
            s++;
        } else if (!begin) {
            begin = s; /* comments before a statement are left out */
        } else if (ch == '\'' || ch == '"' || ch == '`' || ch == '[') {
            const char *e = strchr(s + 1, ch == '[' ? ']' : ch);
            s = e ? e + 1 : s + strlen(s);
            prev = ch;
            end_ok = 0;
        } else if (apr_isalnum(ch) || ch == '_') {
            const char *w = s;
            apr_size_t n;
            while (apr_isalnum(*s) || *s == '_') {
                s++;
            }
            n = (apr_size_t)(s - w);
            nwords++;
            if (nwords == 1) {
                create = n == 6 && strncasecmp(w, "CREATE", 6) == 0;
            } else if (create && nwords <= 3 && n == 7 && strncasecmp(w, "TRIGGER", 7) == 0) {
                trigger = 1;
            }
            end_ok = prev == ';' && n == 3 && strncasecmp(w, "END", 3) == 0;
            prev = 'w';
        } else {
            s++;
            if (ch == ';' && (!trigger || end_ok)) {
                *sp = s;
                return apr_pstrndup(p, begin, (apr_size_t)(s - begin));
            }
            prev = ch;
            end_ok = 0;
        }
    }
    *sp = s;
    return begin ? apr_pstrdup(p, begin) : NULL;
}

/* A whole SQL file, or NULL with the failure said. */
static const char *read_file(run_t *m, const char *path)
{
    apr_file_t *f = NULL;
    apr_finfo_t fi;
    apr_size_t n = 0;
    char *buf, err[120];
    apr_status_t rv =
        apr_file_open(&f, path, APR_FOPEN_READ | APR_FOPEN_BINARY, APR_OS_DEFAULT, m->pool);

    if (rv == APR_SUCCESS && (rv = apr_file_info_get(&fi, APR_FINFO_SIZE, f)) == APR_SUCCESS &&
        fi.size > SQL_FILE_MAX) {
        failed(m, 0, "%s is larger than 64 MiB%s", path, "");
        return NULL;
    }
    if (rv == APR_SUCCESS) {
        buf = apr_palloc(m->pool, (apr_size_t)fi.size + 1);
        rv = apr_file_read_full(f, buf, (apr_size_t)fi.size, &n);
        rv = rv == APR_EOF ? APR_SUCCESS : rv;
    }
    if (rv != APR_SUCCESS) {
        failed(m, 0, "cannot read %s: %s", path, apr_strerror(rv, err, sizeof(err)));
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* A script's `-- requires: N` line (011_schema_requires.sql), recorded with its version:
 * modules that know only schemas below N may not serve once it is applied. */
static bank_db_rc record_requires(bank_db_t *db, apr_pool_t *p, const char *text, int version)
{
    const char *at = strstr(text, "\n-- requires: "), *number;
    const char *err, *args[2];

    if (at) {
        number = at + 14;
    } else if (strncmp(text, "-- requires: ", 13) == 0) {
        number = text + 13;
    } else {
        return BANK_DB_OK;
    }
    args[0] = apr_itoa(p, atoi(number));
    args[1] = apr_itoa(p, version);
    err = bank_db_prepare(db, "bank_migrate_requires",
                          "UPDATE schema_version SET requires = %d WHERE version = %d", 0);
    return err ? bank_db_fail(db, err)
               : bank_db_exec(db, "bank_migrate_requires", NULL, BANK_NARGS(args), args);
}

/* The script's statements (SQLite: one at a time), then its schema_version row when
 * version > 0. */
static bank_db_rc run_script(run_t *m, const char *text, int version)
{
    bank_db_t *db = m->db;
    const char *stmt, *err;
    int rv = 0;

    if (bank_db_is_pgsql(db)) {
        /* A lock not granted at once is given up (run_file tries again) rather than waited
         * for: a DDL waiting for its lock holds up every statement queued behind it. */
        rv = bank_db_query(db, "SET LOCAL lock_timeout = '" BANK_MIGRATE_LOCK_WAIT "'");
        rv = rv ? rv : bank_db_query(db, text);
    } else {
        while (rv == 0 && (stmt = next_statement(m->pool, &text)) != NULL) {
            rv = bank_db_query(db, stmt);
        }
    }
    if (rv != 0) {
        return bank_db_fail(db, bank_db_error(db));
    }
    if (version > 0) {
        const char *args[] = {apr_itoa(m->pool, version), bank_time_iso(m->pool, apr_time_now())};
        /* Prepared after the script: the sqlite3 driver's statements do not survive a schema
         * change (SQLITE_SCHEMA, reported as "not an error"). */
        err = bank_db_prepare(db, "bank_migrate_version_insert",
                              "INSERT INTO schema_version (version, applied_at) VALUES (%d, %pDz)",
                              0);
        if (err) {
            return bank_db_fail(db, err);
        }
        if (bank_db_exec(db, "bank_migrate_version_insert", NULL, BANK_NARGS(args), args) !=
            BANK_DB_OK) {
            return BANK_DB_ERROR;
        }
        return record_requires(db, m->pool, text, version);
    }
    return BANK_DB_OK;
}

typedef struct {
    run_t *m;
    const char *text;
    int version;
} script_run_t;

static bank_db_rc script_txn(bank_db_t *db, void *baton)
{
    script_run_t *s = baton;
    (void)db;
    return run_script(s->m, s->text, s->version);
}

/* A PostgreSQL script that gave up a lock (BANK_MIGRATE_LOCK_WAIT) or was chosen to end a
 * deadlock: rolled back, nothing applied, to be tried again. */
static int lock_refused(bank_db_t *db)
{
    const char *e = bank_db_error(db);
    return bank_db_is_pgsql(db) && e &&
           (strstr(e, "lock timeout") != NULL || strstr(e, "deadlock detected") != NULL);
}

/* Runs a script file in one transaction; on PostgreSQL again, up to BANK_MIGRATE_LOCK_TRIES
 * times with a growing pause, while the locks it needs are held by the servers' traffic
 * (the old module serving on, docs/deployment.md, "Upgrades"): each try holds up the
 * statements queued behind it for BANK_MIGRATE_LOCK_WAIT at most. */
static int run_file(run_t *m, const char *dir, const char *name, int version)
{
    const char *path = apr_pstrcat(m->pool, dir, "/", name, (char *)NULL);
    script_run_t s = {m, read_file(m, path), version};
    int tries;

    if (!s.text) {
        return -1;
    }
    for (tries = 1;; tries++) {
        if (bank_db_transaction(m->db, script_txn, &s) == BANK_DB_OK) {
            return 0;
        }
        if (!lock_refused(m->db) || tries == BANK_MIGRATE_LOCK_TRIES) {
            return failed(m, 0, "%s: %s (rolled back)", path, bank_db_error(m->db));
        }
        if (tries == 1) {
            m->say(m->baton, apr_psprintf(m->pool, "%s: waiting for the tables' locks (%s)", name,
                                          bank_db_error(m->db)));
        }
        apr_sleep(apr_time_from_msec(tries < 20 ? 25 * tries : 500));
    }
}

static int by_version(const void *a, const void *b)
{
    return ((const script_t *)a)->version - ((const script_t *)b)->version;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const script_t *)a)->name, ((const script_t *)b)->name);
}

/* The *.sql files of dir (versioned: only NNN_*.sql, with their number), or NULL. */
static apr_array_header_t *list_scripts(run_t *m, const char *dir, int versioned)
{
    apr_array_header_t *out = apr_array_make(m->pool, 8, sizeof(script_t));
    apr_dir_t *d;
    apr_finfo_t fi;
    apr_status_t rv;
    char err[120];
    int i;

    if ((rv = apr_dir_open(&d, dir, m->pool)) != APR_SUCCESS) {
        failed(m, 1, "cannot read %s: %s", dir, apr_strerror(rv, err, sizeof(err)));
        return NULL;
    }
    while ((rv = apr_dir_read(&fi, APR_FINFO_NAME | APR_FINFO_TYPE, d)) == APR_SUCCESS ||
           rv == APR_INCOMPLETE) {
        apr_size_t len = strlen(fi.name), digits = strspn(fi.name, "0123456789");
        script_t *s;

        if (fi.name[0] == '.' || fi.filetype == APR_DIR || len < 5 ||
            strcmp(fi.name + len - 4, ".sql") != 0 ||
            (versioned && (digits == 0 || digits > 9 || fi.name[digits] != '_'))) {
            continue;
        }
        s = apr_array_push(out);
        s->name = apr_pstrdup(m->pool, fi.name);
        s->version = versioned ? atoi(fi.name) : 0;
    }
    apr_dir_close(d);
    qsort(out->elts, (size_t)out->nelts, sizeof(script_t), versioned ? by_version : by_name);
    for (i = 1; versioned && i < out->nelts; i++) {
        if (APR_ARRAY_IDX(out, i, script_t).version ==
            APR_ARRAY_IDX(out, i - 1, script_t).version) {
            failed(m, 0, "%s: two schema files have version %s", dir,
                   apr_itoa(m->pool, APR_ARRAY_IDX(out, i, script_t).version));
            return NULL;
        }
    }
    return out;
}

/* Bookkeeping SQL is the engine's own: it runs before any table of the store exists.
 * SQLite: WAL mode. PostgreSQL: one migrate at a time per database (two servers deployed at
 * once), held until the connection closes; SQLite needs none: each file runs under BEGIN
 * IMMEDIATE, and a second run that lost the race fails on schema_version's key. */
static int prepare_db(run_t *m)
{
    bank_db_t *db = m->db;
    const char *mode = NULL;
    int pg = bank_db_is_pgsql(db);

    if (!pg && (bank_db_query_value(db, "PRAGMA journal_mode=WAL", &mode) != 0 || !mode ||
                strcasecmp(mode, "wal") != 0)) {
        return failed(m, 0, "cannot switch to WAL mode: %s%s",
                      mode ? "journal mode unchanged" : bank_db_error(db), "");
    }
    /* the key is "mod_bank" in ASCII */
    if (pg && bank_db_query_value(db, "SELECT pg_advisory_lock(7885631833384250987)", &mode) != 0) {
        return failed(m, 0, "cannot take the migration lock: %s%s", bank_db_error(db), "");
    }
    if (bank_db_query(db, pg ? "CREATE TABLE IF NOT EXISTS schema_version (version integer"
                               " PRIMARY KEY, applied_at timestamptz NOT NULL)"
                             : "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER"
                               " PRIMARY KEY, applied_at TEXT NOT NULL)") != 0) {
        return failed(m, 0, "cannot create schema_version: %s%s", bank_db_error(db), "");
    }
    return 0;
}

/* The versions schema_version records; *newest the highest (0: none). */
static apr_hash_t *applied(run_t *m, int *newest)
{
    typedef struct {
        apr_int64_t version;
    } version_row_t;
    static const bank_col_t cols[] = {BANK_COL(INT64, version_row_t, version), BANK_COL_LAST};
    apr_hash_t *done = apr_hash_make(m->pool);
    apr_array_header_t *rows;
    const char *err =
        bank_db_prepare(m->db, "bank_migrate_versions", "SELECT version FROM schema_version", 0);
    int i;

    if (err || bank_db_rows(m->db, "bank_migrate_versions", 0, NULL, cols, sizeof(version_row_t),
                            &rows) != BANK_DB_OK) {
        failed(m, 0, "cannot read schema_version: %s%s", err ? err : bank_db_error(m->db), "");
        return NULL;
    }
    for (i = 0; i < rows->nelts; i++) {
        int v = (int)APR_ARRAY_IDX(rows, i, version_row_t).version;
        apr_hash_set(done, apr_itoa(m->pool, v), APR_HASH_KEY_STRING, "");
        *newest = v > *newest ? v : *newest;
    }
    return done;
}

static int apply_schema(run_t *m, const char *dir)
{
    apr_array_header_t *files = list_scripts(m, dir, 1);
    apr_hash_t *done;
    int i, count = 0, top = 0, newest = 0;

    if (!files) {
        return -1;
    }
    if (files->nelts == 0) {
        return failed(m, 1, "no NNN_*.sql schema files in %s%s", dir, "");
    }
    if (prepare_db(m) != 0 || !(done = applied(m, &newest))) {
        return -1;
    }
    top = APR_ARRAY_IDX(files, files->nelts - 1, script_t).version;
    if (newest > top) {
        m->res->error = apr_psprintf(m->pool,
                                     "the database's schema is version %d, newer than the SQL "
                                     "files in %s (version %d): a later release migrated it; "
                                     "use that release's bankctl, or restore the backup taken "
                                     "before the upgrade (docs/deployment.md, \"Upgrades\")",
                                     newest, dir, top);
        return -1;
    }
    for (i = 0; i < files->nelts; i++) {
        const script_t *s = &APR_ARRAY_IDX(files, i, script_t);
        if (!apr_hash_get(done, apr_itoa(m->pool, s->version), APR_HASH_KEY_STRING)) {
            if (run_file(m, dir, s->name, s->version) != 0) {
                return -1;
            }
            m->say(m->baton, apr_psprintf(m->pool, "applied %s/%s", dir, s->name));
            count++;
        }
    }
    if (!count) {
        m->say(m->baton, apr_psprintf(m->pool, "schema up to date (version %d)", top));
    }
    return 0;
}

int bank_migrate(bank_db_t *db, const char *sql_root, int demo, bank_migrate_say_fn say,
                 void *baton, bank_migrate_result_t *res)
{
    run_t m = {db, bank_db_pool(db), say, baton, res};
    const char *dir = apr_pstrcat(m.pool, sql_root,
                                  bank_db_is_pgsql(db) ? "/postgresql" : "/sqlite", (char *)NULL);
    apr_array_header_t *seeds;
    const char *err;
    int i, pass;

    memset(res, 0, sizeof(*res));
    if (apply_schema(&m, dir) != 0) {
        return -1;
    }
    dir = apr_pstrcat(m.pool, sql_root, "/seed", (char *)NULL);
    if (!(seeds = list_scripts(&m, dir, 0))) {
        return -1;
    }
    for (pass = 0; pass < (demo ? 2 : 1); pass++) {
        for (i = 0; i < seeds->nelts; i++) {
            const script_t *s = &APR_ARRAY_IDX(seeds, i, script_t);
            if ((strncmp(s->name, "demo", 4) == 0) == pass) {
                if (run_file(&m, dir, s->name, 0) != 0) {
                    return -1;
                }
                say(baton, apr_psprintf(m.pool, "loaded %s/%s", dir, s->name));
            }
        }
    }
    if ((err = bank_db_prepare_all(db)) != NULL) {
        return failed(&m, 0, "the schema does not support the module's %s%s", err, "");
    }
    say(baton, "ready: all statements prepare");
    return 0;
}

void bank_schema_state(bank_db_t *db, int *version, int *requires)
{
    const char *r = NULL;

    *version = bank_db_schema_version(db);
    /* no requires column: a schema from before 011 */
    *requires =
        bank_db_query_value(db, "SELECT COALESCE(MAX(requires), 0) FROM schema_version", &r) == 0 &&
                r
            ? atoi(r)
            : 0;
}
