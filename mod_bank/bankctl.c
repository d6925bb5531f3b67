/* bankctl: the operator's front door to mod_bank's core (CONTRACT C12). It opens its own
 * apr_dbd connection, prepares the module's statements (sql.c) and uses the same token codec,
 * password hashing and validators, so every rule has one implementation. No httpd.
 * Exit status: 0 done, 1 failed, 2 bad arguments. Secrets are never printed, except the
 * token that `token issue` exists to print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_file_io.h>
#include <apr_file_info.h>
#include <apr_lib.h>
#include <apr_dbd.h>
#include <json-c/json.h>
#include "bank_sql.h"
#include "bank_customer.h"
#include "bank_token.h"
#include "bank_password.h"
#include "bank_util.h"
#include "bank_validate.h"
#include "bank_json.h"

#define EXIT_USAGE 2
#define TTL_DEFAULT 86400
#define TTL_MIN 60
#define TTL_MAX 315360000 /* ten years */
#define LIMIT_DEFAULT 20
#define LIMIT_MAX 10000
#define SQL_FILE_MAX (64 * 1024 * 1024)
#define SECRET_INPUT_MAX 8192 /* 1024 characters of up to 4 bytes, and a newline */

static const char usage_text[] =
    "usage: bankctl [--db sqlite:PATH | --db postgresql://...] COMMAND [OPTIONS]\n"
    "\n"
    "  migrate [--demo] [--sql-dir DIR]\n"
    "      apply sql/<driver>/NNN_*.sql not yet applied, then the seeds (--demo: also demo*)\n"
    "  customer add --email E (--password P | --password - | --password-file F)\n"
    "               --first F --last L --phone PH [--verified]\n"
    "      add a customer and print its customerId (--password -: read it from stdin)\n"
    "  bvn add --bvn B --dob YYYY-MM-DD --first F --last L [--phone PH]\n"
    "      add or replace an identity-provider BVN record\n"
    "  token issue --email E [--ttl SECONDS] [--abilities a,b]\n"
    "      print a new access token (default ttl 86400, min 60; abilities default *)\n"
    "  token revoke --email E\n"
    "      delete every token of a customer and print how many\n"
    "  notices [--limit N] [--json]\n"
    "      list payment notices, newest first (default 20); --json: one object a line\n"
    "\n"
    "Database: --db; without it, the dev server's: with BANK_DB=pgsql, the libpq conninfo\n"
    "or URI in BANK_PG_PARAMS, else the one the dev server wrote to $BANK_RUN_DIR/pg.conninfo;\n"
    "with BANK_DB=sqlite3, sqlite:$BANK_RUN_DIR/bank.db; with BANK_DB unset, pg.conninfo if\n"
    "the dev server last started on PostgreSQL, else bank.db (BANK_RUN_DIR defaults to\n"
    "$BANK_CHECKOUT/run). SQL files come from $BANK_CHECKOUT/sql unless --sql-dir is given.\n"
    "Exit status: 0 done, 1 failed, 2 bad arguments.\n";

typedef struct {
    const char *name; /* without the leading -- */
    int has_value;
} opt_t;

typedef struct {
    apr_pool_t *pool;
    const char *checkout;
    const char *db_spec; /* --db as given */
    const char *driver_name;
    const char *params;
    const char *sqlite_path; /* NULL for PostgreSQL */
    bank_db_t db;
} ctl_t;

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

static void die(int code, const char *fmt, ...)
{
    va_list ap;

    fputs("bankctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

/* ---- arguments ---- */

static apr_table_t *parse_opts(ctl_t *c, int argc, const char *const *argv, const opt_t *spec,
                               const char *cmd)
{
    apr_table_t *t = apr_table_make(c->pool, 8);
    int i;

    for (i = 0; i < argc; i++) {
        const char *a = argv[i], *eq, *name, *val = NULL;
        const opt_t *o;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            exit(0);
        }
        /* Values are never echoed: a stray argument may be a password or a BVN. */
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            die(EXIT_USAGE, "%s: unexpected argument (options are --name VALUE)", cmd);
        }
        eq = strchr(a, '=');
        name = eq ? apr_pstrndup(c->pool, a + 2, (apr_size_t)(eq - a - 2)) : a + 2;
        if (strcmp(name, "db") == 0) {
            static const opt_t db_opt = {"db", 1};
            o = &db_opt;
        } else {
            for (o = spec; o->name && strcmp(o->name, name) != 0; o++) {
            }
        }
        if (!o->name) {
            die(EXIT_USAGE, "%s: unknown option --%s", cmd, name);
        }
        if (o->has_value) {
            val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val || (!eq && strncmp(val, "--", 2) == 0)) {
                die(EXIT_USAGE, "%s: --%s needs a value", cmd, name);
            }
        } else if (eq) {
            die(EXIT_USAGE, "%s: --%s takes no value", cmd, name);
        }
        if (strcmp(name, "db") == 0) {
            if (c->db_spec) {
                die(EXIT_USAGE, "--db given twice");
            }
            c->db_spec = val;
            continue;
        }
        if (apr_table_get(t, name)) {
            die(EXIT_USAGE, "%s: --%s given twice", cmd, name);
        }
        apr_table_setn(t, name, val ? val : "1");
    }
    return t;
}

static const char *need(apr_table_t *o, const char *name, const char *cmd)
{
    const char *v = apr_table_get(o, name);
    if (!v) {
        die(EXIT_USAGE, "%s: --%s is required", cmd, name);
    }
    return v;
}

/* A name-like value: 1..max characters, no control characters. */
static void check_text(const char *cmd, const char *opt, const char *v, apr_size_t max)
{
    const char *s;
    apr_size_t n = bank_utf8_length(v);

    for (s = v; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f) {
            die(EXIT_USAGE, "%s: --%s must not contain control characters", cmd, opt);
        }
    }
    if (n < 1 || n > max || v[strspn(v, " ")] == '\0') {
        die(EXIT_USAGE, "%s: --%s must be 1 to %" APR_SIZE_T_FMT " characters", cmd, opt, max);
    }
}

static void check_phone(const char *cmd, const char *v)
{
    if (v[0] == '\0' || strlen(v) > 32 || v[strspn(v, "+0123456789 -()")] != '\0') {
        die(EXIT_USAGE, "%s: --phone must be 1 to 32 of the characters +0-9, space, -()", cmd);
    }
}

static long parse_range(const char *cmd, const char *opt, const char *v, long min, long max)
{
    apr_size_t len = strlen(v);
    long n;

    if (len == 0 || len > 9 || v[strspn(v, "0123456789")] != '\0' ||
        (n = strtol(v, NULL, 10)) < min || n > max) {
        die(EXIT_USAGE, "%s: --%s must be a whole number from %ld to %ld", cmd, opt, min, max);
    }
    return n;
}

/* ---- files ---- */

/* A whole text file of at most max bytes, or stdin for "-"; dies on failure. what names it in
 * messages (never the content: it may be a password). */
static char *slurp(ctl_t *c, const char *path, apr_size_t max, const char *what)
{
    apr_file_t *f = NULL;
    apr_finfo_t fi;
    apr_size_t n = 0, cap = max;
    char *buf, err[120];
    apr_status_t rv =
        strcmp(path, "-") == 0
            ? apr_file_open_stdin(&f, c->pool)
            : apr_file_open(&f, path, APR_FOPEN_READ | APR_FOPEN_BINARY, APR_OS_DEFAULT, c->pool);

    if (rv == APR_SUCCESS && strcmp(path, "-") != 0 &&
        apr_file_info_get(&fi, APR_FINFO_SIZE, f) == APR_SUCCESS && fi.size < (apr_off_t)max) {
        cap = (apr_size_t)fi.size;
    }
    buf = apr_palloc(c->pool, cap + 2);
    /* One byte more than allowed: reading it means the input is too long. */
    if (rv == APR_SUCCESS && (rv = apr_file_read_full(f, buf, cap + 1, &n)) == APR_EOF) {
        rv = APR_SUCCESS;
    }
    if (rv != APR_SUCCESS) {
        die(1, "cannot read %s: %s", what, apr_strerror(rv, err, sizeof(err)));
    }
    if (n > cap) {
        die(EXIT_USAGE, "%s is too long (or changed while read)", what);
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        die(EXIT_USAGE, "%s contains a NUL byte", what);
    }
    return buf;
}

static const char *read_password(ctl_t *c, apr_table_t *o, const char *cmd)
{
    const char *arg = apr_table_get(o, "password"), *file = apr_table_get(o, "password-file");
    char *pw;
    apr_size_t n;

    if (!arg == !file) {
        die(EXIT_USAGE, "%s: give one of --password P, --password - or --password-file F", cmd);
    }
    if (arg && strcmp(arg, "-") != 0) {
        pw = apr_pstrdup(c->pool, arg);
    } else {
        pw = slurp(c, file ? file : "-", SECRET_INPUT_MAX, "the password");
        n = strlen(pw);
        /* One trailing line end is the file's, not the password's. */
        if (n > 0 && pw[n - 1] == '\n') {
            pw[--n] = '\0';
        }
        if (n > 0 && pw[n - 1] == '\r') {
            pw[--n] = '\0';
        }
    }
    n = bank_utf8_length(pw);
    if (n < 1 || n > 1024) {
        die(EXIT_USAGE, "%s: the password must be 1 to 1024 characters", cmd);
    }
    return pw;
}

/* ---- database ---- */

/* The conninfo of the dev server's PostgreSQL database, which scripts/devserver writes to
 * $BANK_RUN_DIR/pg.conninfo while it serves from PostgreSQL, or NULL. */
static const char *dev_conninfo(ctl_t *c, const char *run)
{
    const char *path = apr_pstrcat(c->pool, run, "/pg.conninfo", (char *)NULL);
    apr_finfo_t fi;
    char *text;
    apr_size_t n;

    if (apr_stat(&fi, path, APR_FINFO_TYPE, c->pool) != APR_SUCCESS) {
        return NULL;
    }
    text = slurp(c, path, 4096, path);
    for (n = strlen(text); n > 0 && apr_isspace(text[n - 1]); n--) {
        text[n - 1] = '\0';
    }
    return *text ? text : NULL;
}

static void resolve_db(ctl_t *c)
{
    const char *spec = c->db_spec, *kind = getenv("BANK_DB"), *run = getenv("BANK_RUN_DIR");

    if (!run || !*run) {
        run = apr_pstrcat(c->pool, c->checkout, "/run", (char *)NULL);
    }
    if (kind && !*kind) {
        kind = NULL;
    }
    if (spec && strncmp(spec, "sqlite:", 7) == 0 && spec[7] != '\0') {
        c->driver_name = "sqlite3";
        c->sqlite_path = spec + 7;
    } else if (spec &&
               (strncmp(spec, "postgresql://", 13) == 0 || strncmp(spec, "postgres://", 11) == 0)) {
        c->driver_name = "pgsql";
        c->params = spec; /* libpq takes URIs as conninfo */
    } else if (spec) {
        die(EXIT_USAGE, "--db must be sqlite:PATH or postgresql://...");
    } else if (kind && strcmp(kind, "pgsql") != 0 && strcmp(kind, "sqlite3") != 0) {
        die(EXIT_USAGE, "BANK_DB must be sqlite3 or pgsql");
    } else if (kind && strcmp(kind, "pgsql") == 0) {
        c->params = getenv("BANK_PG_PARAMS");
        if (!c->params || !*c->params) {
            c->params = dev_conninfo(c, run);
        }
        if (!c->params) {
            die(EXIT_USAGE,
                "BANK_DB=pgsql needs BANK_PG_PARAMS, a dev server started with "
                "BANK_DB=pgsql (%s/pg.conninfo), or --db postgresql://...",
                run);
        }
        c->driver_name = "pgsql";
    } else if (!kind && (c->params = dev_conninfo(c, run)) != NULL) {
        c->driver_name = "pgsql"; /* the dev server last started on PostgreSQL */
    } else {
        c->driver_name = "sqlite3";
        c->sqlite_path = apr_pstrcat(c->pool, run, "/bank.db", (char *)NULL);
    }
    if (c->sqlite_path) {
        c->params = c->sqlite_path;
    }
}

static apr_status_t close_db(void *data)
{
    bank_db_t *db = data;
    apr_dbd_close(db->driver, db->handle);
    return APR_SUCCESS;
}

static const char *db_error(ctl_t *c, int rv)
{
    return bank_db_error_line(c->pool, apr_dbd_error(c->db.driver, c->db.handle, rv));
}

/* Opens the connection. creating: the SQLite file may be new (migrate); otherwise a missing
 * file is an error, since sqlite would silently create an empty database. */
static void open_db(ctl_t *c, int creating)
{
    const char *err = NULL;
    apr_finfo_t fi;
    apr_status_t rv;

    resolve_db(c);
    if (c->sqlite_path) {
        if (creating) {
            const char *slash = strrchr(c->sqlite_path, '/');
            if (slash && slash != c->sqlite_path) {
                apr_dir_make_recursive(
                    apr_pstrndup(c->pool, c->sqlite_path, (apr_size_t)(slash - c->sqlite_path)),
                    APR_OS_DEFAULT, c->pool);
            }
        } else if (apr_stat(&fi, c->sqlite_path, APR_FINFO_TYPE, c->pool) != APR_SUCCESS) {
            die(1, "no database at %s: run 'bankctl migrate' first", c->sqlite_path);
        }
    }
    apr_dbd_init(c->pool);
    rv = apr_dbd_get_driver(c->pool, c->driver_name, &c->db.driver);
    if (rv != APR_SUCCESS) {
        die(1, "apr_dbd driver %s is not available (install libaprutil1-dbd-%s)", c->driver_name,
            strcmp(c->driver_name, "pgsql") == 0 ? "pgsql" : "sqlite3");
    }
    rv = apr_dbd_open_ex(c->db.driver, c->pool, c->params, &c->db.handle, &err);
    if (rv != APR_SUCCESS || !c->db.handle) {
        die(1, "cannot open the database: %s", bank_db_error_line(c->pool, err));
    }
    c->db.pool = c->pool;
    c->db.prepared = apr_hash_make(c->pool);
    apr_pool_cleanup_register(c->pool, &c->db, close_db, apr_pool_cleanup_null);
    if (!c->sqlite_path) {
        int n = 0;
        if ((rv = apr_dbd_query(c->db.driver, c->db.handle, &n, BANK_PG_SESSION_SQL)) != 0) {
            die(1, "cannot set up the database session: %s", db_error(c, (int)rv));
        }
    }
}

/* Prepares sql under label in the connection's table; the error text, or NULL. named: the
 * module's statements, which pgsql PREPAREs on the server under their label; bankctl's own
 * bookkeeping stays unnamed there, so it never collides with a label. */
static const char *prepare(ctl_t *c, const char *label, const char *sql, int named)
{
    apr_dbd_prepared_t *st = NULL;
    int rv = apr_dbd_prepare(c->db.driver, c->pool, c->db.handle, sql, named ? label : NULL, &st);
    if (rv != 0 || !st) {
        return db_error(c, rv);
    }
    apr_hash_set(c->db.prepared, label, APR_HASH_KEY_STRING, st);
    return NULL;
}

/* Every statement of the module: one that does not prepare means a schema out of step. */
static const char *prepare_all(ctl_t *c)
{
    const bank_stmt_t *st;

    for (st = bank_statements; st->label; st++) {
        const char *err = prepare(c, st->label, bank_stmt_sql(st, c->driver_name), 1);
        if (err) {
            return apr_psprintf(c->pool, "statement %s: %s", st->label, err);
        }
    }
    return NULL;
}

static void open_ready(ctl_t *c)
{
    const char *err;

    open_db(c, 0);
    if ((err = prepare_all(c)) != NULL) {
        die(1, "the database schema is missing or out of date (%s): run 'bankctl migrate'", err);
    }
}

static void db_fail(ctl_t *c, const char *what)
{
    die(1, "%s: %s", what, c->db.error ? c->db.error : "database error");
}

static const char *customer_id(ctl_t *c, const char *email, int must)
{
    /* the lookup key folds A-Z only, as sign-in does (sql/sqlite/004_email_key.sql) */
    const char *args[] = {bank_ascii_lower(c->pool, email)};
    bank_rows_t r;

    if (bank_db_select(&c->db, "bank_customer_by_email", &r, BANK_NARGS(args), args) !=
        BANK_DB_OK) {
        db_fail(c, "cannot look up the customer");
    }
    if (r.nrows == 0 && must) {
        die(1, "no customer with e-mail %s", email);
    }
    return bank_rows_get(&r, 0, 0);
}

/* ---- migrate ---- */

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

/* Runs a script file in one transaction, with its schema_version row when version > 0. */
static void run_file(ctl_t *c, const char *dir, const char *name, int version)
{
    const char *path = apr_pstrcat(c->pool, dir, "/", name, (char *)NULL);
    const char *text = slurp(c, path, SQL_FILE_MAX, path), *stmt, *err = NULL;
    int n = 0, rv = 0;

    if (bank_db_begin(&c->db) != BANK_DB_OK) {
        db_fail(c, "cannot start a transaction");
    }
    if (c->sqlite_path) {
        while (rv == 0 && (stmt = next_statement(c->pool, &text)) != NULL) {
            rv = apr_dbd_query(c->db.driver, c->db.handle, &n, stmt);
        }
    } else {
        rv = apr_dbd_query(c->db.driver, c->db.handle, &n, text);
    }
    if (rv != 0) {
        err = db_error(c, rv);
        c->db.txn_failed = 1;
    } else if (version > 0) {
        const char *args[] = {apr_itoa(c->pool, version), bank_time_iso(c->pool, apr_time_now())};
        /* Prepared after the script: the sqlite3 driver's statements do not survive a schema
         * change (SQLITE_SCHEMA, reported as "not an error"). */
        err = prepare(c, "bankctl_version_insert",
                      "INSERT INTO schema_version (version, applied_at) VALUES (%d, %pDz)", 0);
        if (err) {
            c->db.txn_failed = 1;
        } else if (bank_db_exec(&c->db, "bankctl_version_insert", NULL, BANK_NARGS(args), args) !=
                   BANK_DB_OK) {
            err = c->db.error;
        }
    }
    if (bank_db_end(&c->db, 1) != BANK_DB_OK && !err) {
        err = c->db.error;
    }
    if (err) {
        die(1, "%s: %s (rolled back)", path, err);
    }
}

typedef struct {
    const char *name;
    int version;
} script_t;

static int by_version(const void *a, const void *b)
{
    return ((const script_t *)a)->version - ((const script_t *)b)->version;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const script_t *)a)->name, ((const script_t *)b)->name);
}

/* The *.sql files of dir. versioned: only NNN_*.sql, with their number. */
static apr_array_header_t *list_scripts(ctl_t *c, const char *dir, int versioned)
{
    apr_array_header_t *out = apr_array_make(c->pool, 8, sizeof(script_t));
    apr_dir_t *d;
    apr_finfo_t fi;
    apr_status_t rv;
    char err[120];
    int i;

    if ((rv = apr_dir_open(&d, dir, c->pool)) != APR_SUCCESS) {
        die(1, "cannot read %s: %s", dir, apr_strerror(rv, err, sizeof(err)));
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
        s->name = apr_pstrdup(c->pool, fi.name);
        s->version = versioned ? atoi(fi.name) : 0;
    }
    apr_dir_close(d);
    qsort(out->elts, (size_t)out->nelts, sizeof(script_t), versioned ? by_version : by_name);
    for (i = 1; versioned && i < out->nelts; i++) {
        if (APR_ARRAY_IDX(out, i, script_t).version ==
            APR_ARRAY_IDX(out, i - 1, script_t).version) {
            die(1, "%s: two schema files have version %d", dir,
                APR_ARRAY_IDX(out, i, script_t).version);
        }
    }
    return out;
}

/* PostgreSQL: one migrate at a time per database (two servers deployed at once), held until
 * bankctl disconnects. SQLite needs none: each file runs under BEGIN IMMEDIATE, and a second
 * run that lost the race fails on schema_version's key and rolls back. */
static void pg_migrate_lock(ctl_t *c)
{
    bank_rows_t r;
    /* the key is "mod_bank" in ASCII */
    int rv = bank_db_select_sql(&c->db, "SELECT pg_advisory_lock(7885631833384250987)", &r);

    if (rv != 0) {
        die(1, "cannot take the migration lock: %s", db_error(c, rv));
    }
}

static int cmd_migrate(ctl_t *c, apr_table_t *o)
{
    const char *root = apr_table_get(o, "sql-dir"), *dir, *err;
    apr_array_header_t *files, *seeds;
    apr_hash_t *done = apr_hash_make(c->pool);
    bank_rows_t r;
    int i, pass, applied = 0, top = 0;

    root = root ? root : apr_pstrcat(c->pool, c->checkout, "/sql", (char *)NULL);
    open_db(c, 1);
    dir = apr_pstrcat(c->pool, root, c->sqlite_path ? "/sqlite" : "/postgresql", (char *)NULL);
    files = list_scripts(c, dir, 1);
    if (files->nelts == 0) {
        die(1, "no NNN_*.sql schema files in %s", dir);
    }
    /* Bookkeeping SQL is migrate's own: it runs before any table of sql.c exists. */
    if (c->sqlite_path) {
        int rv = bank_db_select_sql(&c->db, "PRAGMA journal_mode=WAL", &r);
        const char *mode = bank_rows_get(&r, 0, 0);
        if (rv != 0 || !mode || strcasecmp(mode, "wal") != 0) {
            die(1, "cannot switch %s to WAL mode: %s", c->sqlite_path,
                rv ? db_error(c, rv) : "journal mode unchanged");
        }
    }
    if (!c->sqlite_path) {
        pg_migrate_lock(c);
    }
    if ((i = apr_dbd_query(c->db.driver, c->db.handle, &pass,
                           c->sqlite_path ? "CREATE TABLE IF NOT EXISTS schema_version (version"
                                            " INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
                                          : "CREATE TABLE IF NOT EXISTS schema_version (version"
                                            " integer PRIMARY KEY, applied_at timestamptz NOT"
                                            " NULL)")) != 0) {
        die(1, "cannot create schema_version: %s", db_error(c, i));
    }
    if ((err = prepare(c, "bankctl_versions", "SELECT version FROM schema_version", 0))) {
        die(1, "cannot read schema_version: %s", err);
    }
    if (bank_db_select(&c->db, "bankctl_versions", &r, 0, NULL) != BANK_DB_OK) {
        db_fail(c, "cannot read schema_version");
    }
    for (i = 0; i < r.nrows; i++) {
        apr_hash_set(done, apr_itoa(c->pool, atoi(r.rows[i][0])), APR_HASH_KEY_STRING, "");
    }
    for (i = 0; i < files->nelts; i++) {
        const script_t *s = &APR_ARRAY_IDX(files, i, script_t);
        top = s->version;
        if (!apr_hash_get(done, apr_itoa(c->pool, s->version), APR_HASH_KEY_STRING)) {
            run_file(c, dir, s->name, s->version);
            printf("applied %s/%s\n", dir, s->name);
            applied++;
        }
    }
    if (!applied) {
        printf("schema up to date (version %d)\n", top);
    }
    dir = apr_pstrcat(c->pool, root, "/seed", (char *)NULL);
    seeds = list_scripts(c, dir, 0);
    for (pass = 0; pass < (apr_table_get(o, "demo") ? 2 : 1); pass++) {
        for (i = 0; i < seeds->nelts; i++) {
            const script_t *s = &APR_ARRAY_IDX(seeds, i, script_t);
            if ((strncmp(s->name, "demo", 4) == 0) == pass) {
                run_file(c, dir, s->name, 0);
                printf("loaded %s/%s\n", dir, s->name);
            }
        }
    }
    if ((err = prepare_all(c)) != NULL) {
        die(1, "the schema does not support the module's %s", err);
    }
    printf("ready: all statements prepare\n");
    return 0;
}

/* ---- customers, BVN records, tokens ---- */

static int cmd_customer_add(ctl_t *c, apr_table_t *o)
{
    const char *cmd = "customer add", *email = need(o, "email", cmd), *pw, *hash, *id, *now;
    const char *first = need(o, "first", cmd), *last = need(o, "last", cmd);
    const char *phone = need(o, "phone", cmd);

    if (strlen(email) > 254 || !bank_email_plausible(email)) {
        die(EXIT_USAGE, "%s: --email is not a plausible e-mail address (254 at most)", cmd);
    }
    check_text(cmd, "first", first, 100);
    check_text(cmd, "last", last, 100);
    check_phone(cmd, phone);
    pw = read_password(c, o, cmd);
    open_ready(c);
    if (customer_id(c, email, 0)) {
        die(1, "a customer with e-mail %s already exists", email);
    }
    if (!(hash = bank_password_hash(c->pool, pw)) || !(id = bank_uuid4(c->pool))) {
        die(1, "cannot hash the password (no randomness?)");
    }
    now = bank_time_iso(c->pool, apr_time_now());
    {
        const char *args[] = {
            id,  email, hash, first, last, phone, apr_table_get(o, "verified") ? "1" : "0",
            now, now};
        if (bank_db_exec(&c->db, "bank_customer_insert", NULL, BANK_NARGS(args), args) !=
            BANK_DB_OK) {
            /* Lost a race with another insert of the same address: say so plainly. */
            if (customer_id(c, email, 0)) {
                die(1, "a customer with e-mail %s already exists", email);
            }
            db_fail(c, "cannot add the customer");
        }
    }
    printf("%s\n", id);
    return 0;
}

static int cmd_bvn_add(ctl_t *c, apr_table_t *o)
{
    const char *cmd = "bvn add", *bvn = need(o, "bvn", cmd), *dob = need(o, "dob", cmd);
    const char *first = need(o, "first", cmd), *last = need(o, "last", cmd);
    const char *phone = apr_table_get(o, "phone");
    apr_time_t now = apr_time_now();

    if (!bank_bvn_valid(bvn)) {
        die(EXIT_USAGE, "%s: --bvn must be exactly 11 digits", cmd);
    }
    switch (bank_date_check(dob, now)) {
    case BANK_DATE_OK:
        break;
    case BANK_DATE_UNREAL:
        die(EXIT_USAGE, "%s: --dob is not a real calendar date", cmd);
    case BANK_DATE_FUTURE:
        die(EXIT_USAGE, "%s: --dob is in the future", cmd);
    default:
        die(EXIT_USAGE, "%s: --dob must be a date YYYY-MM-DD", cmd);
    }
    check_text(cmd, "first", first, 100);
    check_text(cmd, "last", last, 100);
    if (phone) {
        check_phone(cmd, phone);
    }
    open_ready(c);
    {
        const char *args[] = {bvn, first, last, dob, phone, bank_time_iso(c->pool, now)};
        if (bank_db_exec(&c->db, "bank_bvn_record_upsert", NULL, BANK_NARGS(args), args) !=
            BANK_DB_OK) {
            db_fail(c, "cannot store the BVN record");
        }
    }
    printf("ok\n");
    return 0;
}

/* --abilities a,b as the JSON array text the tokens table stores. */
static const char *abilities_json(ctl_t *c, const char *list)
{
    json_object *arr = bank_json_own(c->pool, json_object_new_array());
    const char *s = list ? list : "*";

    for (;;) {
        apr_size_t n = strcspn(s, ",");
        const char *a = apr_pstrndup(c->pool, s, n);
        if (n == 0 || a[strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                  "0123456789:*_.-")] != '\0') {
            die(EXIT_USAGE, "token issue: --abilities must be names like banks:read, "
                            "separated by commas");
        }
        json_object_array_add(arr, json_object_new_string(a));
        if (s[n] == '\0') {
            break;
        }
        s += n + 1;
    }
    return bank_json_text(c->pool, arr);
}

static int cmd_token_issue(ctl_t *c, apr_table_t *o)
{
    const char *cmd = "token issue", *email = need(o, "email", cmd),
               *ttl_s = apr_table_get(o, "ttl");
    long ttl = ttl_s ? parse_range(cmd, "ttl", ttl_s, TTL_MIN, TTL_MAX) : TTL_DEFAULT;
    const char *abilities = abilities_json(c, apr_table_get(o, "abilities"));
    const char *plain = NULL, *expires = NULL;

    open_ready(c);
    if (bank_token_issue(&c->db, c->pool, customer_id(c, email, 1), ttl, abilities, &plain,
                         &expires) != BANK_DB_OK) {
        db_fail(c, "cannot issue the token");
    }
    printf("%s\n", plain);
    return 0;
}

static int cmd_token_revoke(ctl_t *c, apr_table_t *o)
{
    const char *email = need(o, "email", "token revoke");
    int n = 0;

    open_ready(c);
    {
        const char *args[] = {customer_id(c, email, 1)};
        if (bank_db_exec(&c->db, "bank_token_revoke_all", &n, BANK_NARGS(args), args) !=
            BANK_DB_OK) {
            db_fail(c, "cannot revoke the tokens");
        }
    }
    printf("revoked %d\n", n);
    return 0;
}

/* ---- notices ---- */

/* Columns of bank_notices_list, in order, with the interface's names. */
enum {
    N_PARTNER,
    N_STATUS,
    N_AMOUNT,
    N_CHARGES,
    N_CURRENCY, /* first of text_fields */
    N_STATUS_CODE = N_CURRENCY + 6,
    N_REFERENCE = N_CURRENCY + 8,
    N_WALLET,
    N_CLIENT_REF,
    N_CUST_REF,
    N_CUSTOMER,
    N_RECEIVED
};
static const char *const text_fields[] = {
    "currency",  "narration",  "receiverAccountName", "receiverAccountNumber", "receiverBankCode",
    "sessionId", "statusCode", "statusMessage",       "transactionReference",  "walletId"};

/* Stored JSON text back to JSON (a number, or clientRef/customerReference), else null. The
 * value belongs to c->pool: the caller takes a reference to add it to an object. */
static json_object *json_back(ctl_t *c, const char *text)
{
    const char *why;
    return text ? bank_json_parse(c->pool, text, strlen(text), &why) : NULL;
}

static void notice_json(ctl_t *c, const char *const *row)
{
    json_object *o = bank_json_own(c->pool, json_object_new_object()), *charges;
    const char *amount = row[N_AMOUNT];
    int i;

    json_object_object_add(o, "amount",
                           amount && amount[strspn(amount, "-0123456789")] == '\0' && *amount
                               ? json_object_new_int64(apr_atoi64(amount))
                               : NULL);
    /* json-c keeps a parsed number's text: charges come out as they were sent. */
    charges = json_back(c, row[N_CHARGES]);
    if (!json_object_is_type(charges, json_type_double) &&
        !json_object_is_type(charges, json_type_int)) {
        charges = NULL;
    }
    json_object_object_add(o, "charges", json_object_get(charges));
    for (i = 0; i < (int)(sizeof(text_fields) / sizeof(text_fields[0])); i++) {
        json_object_object_add(o, text_fields[i], bank_json_str(row[N_CURRENCY + i]));
    }
    json_object_object_add(o, "clientRef", json_object_get(json_back(c, row[N_CLIENT_REF])));
    json_object_object_add(o, "customerReference", json_object_get(json_back(c, row[N_CUST_REF])));
    json_object_object_add(o, "partner", bank_json_str(row[N_PARTNER]));
    json_object_object_add(o, "status", bank_json_str(row[N_STATUS]));
    json_object_object_add(o, "receivedAt", bank_json_time(c->pool, row[N_RECEIVED]));
    json_object_object_add(o, "customerId", bank_json_str(row[N_CUSTOMER]));
    printf("%s\n", bank_json_text(c->pool, o));
}

/* Partner-sent text on a terminal: control characters become '?'. */
static const char *show(ctl_t *c, const char *s)
{
    char *out, *p;

    if (!s) {
        return "-";
    }
    out = apr_pstrdup(c->pool, s);
    for (p = out; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            *p = '?';
        }
    }
    return out;
}

static int cmd_notices(ctl_t *c, apr_table_t *o)
{
    const char *lim = apr_table_get(o, "limit");
    long limit = lim ? parse_range("notices", "limit", lim, 1, LIMIT_MAX) : LIMIT_DEFAULT;
    const char *args[] = {apr_ltoa(c->pool, limit)};
    int json = apr_table_get(o, "json") != NULL, i;
    bank_rows_t r;

    open_ready(c);
    if (bank_db_select(&c->db, "bank_notices_list", &r, BANK_NARGS(args), args) != BANK_DB_OK) {
        db_fail(c, "cannot list the notices");
    }
    if (!json && r.nrows == 0) {
        printf("no payment notices\n");
    } else if (!json) {
        printf("%-24s  %-12s  %-8s  %-6s  %14s  %-3s  %-42s  %-20s  %s\n", "RECEIVED", "PARTNER",
               "STATUS", "CODE", "AMOUNT", "CUR", "REFERENCE", "WALLET", "CUSTOMER");
    }
    for (i = 0; i < r.nrows; i++) {
        const char *const *row = r.rows[i];
        if (json) {
            notice_json(c, row);
            continue;
        }
        printf("%-24s  %-12s  %-8s  %-6s  %14s  %-3s  %-42s  %-20s  %s\n",
               show(c, bank_time_api(c->pool, row[N_RECEIVED])), show(c, row[N_PARTNER]),
               show(c, row[N_STATUS]), show(c, row[N_STATUS_CODE]), show(c, row[N_AMOUNT]),
               show(c, row[N_CURRENCY]), show(c, row[N_REFERENCE]), show(c, row[N_WALLET]),
               show(c, row[N_CUSTOMER]));
    }
    return 0;
}

/* ---- main ---- */

static const opt_t o_migrate[] = {{"demo", 0}, {"sql-dir", 1}, {NULL, 0}};
static const opt_t o_customer_add[] = {{"email", 1},    {"password", 1}, {"password-file", 1},
                                       {"first", 1},    {"last", 1},     {"phone", 1},
                                       {"verified", 0}, {NULL, 0}};
static const opt_t o_bvn_add[] = {{"bvn", 1},  {"dob", 1},   {"first", 1},
                                  {"last", 1}, {"phone", 1}, {NULL, 0}};
static const opt_t o_token_issue[] = {{"email", 1}, {"ttl", 1}, {"abilities", 1}, {NULL, 0}};
static const opt_t o_email[] = {{"email", 1}, {NULL, 0}};
static const opt_t o_notices[] = {{"limit", 1}, {"json", 0}, {NULL, 0}};

static const struct {
    const char *word, *sub, *name;
    const opt_t *opts;
    int (*run)(ctl_t *, apr_table_t *);
} commands[] = {{"migrate", NULL, "migrate", o_migrate, cmd_migrate},
                {"customer", "add", "customer add", o_customer_add, cmd_customer_add},
                {"bvn", "add", "bvn add", o_bvn_add, cmd_bvn_add},
                {"token", "issue", "token issue", o_token_issue, cmd_token_issue},
                {"token", "revoke", "token revoke", o_email, cmd_token_revoke},
                {"notices", NULL, "notices", o_notices, cmd_notices},
                {NULL, NULL, NULL, NULL, NULL}};

/* Where the checkout is: $BANK_CHECKOUT (the wrapper sets it), else build/bankctl's parent. */
static const char *find_checkout(apr_pool_t *p, const char *argv0)
{
    const char *env = getenv("BANK_CHECKOUT"), *slash = strrchr(argv0, '/');

    if (env && *env) {
        return env;
    }
    if (!slash) {
        return ".";
    }
    return apr_pstrcat(p, apr_pstrndup(p, argv0, (apr_size_t)(slash - argv0)), "/..", (char *)NULL);
}

int main(int argc, const char *const *argv)
{
    apr_pool_t *pool;
    ctl_t *c;
    int i = 1, k;

    if (apr_app_initialize(&argc, &argv, NULL) != APR_SUCCESS) {
        fputs("bankctl: cannot initialise APR\n", stderr);
        return 1;
    }
    atexit(apr_terminate);
    /* A database it creates holds password hashes, BVNs and dates of birth: owner only
     * (SQLite gives -wal and -shm the database file's mode). docs/operations.md */
    umask(077);
    apr_pool_create(&pool, NULL);
    /* In the pool, not on main's stack: the pool's cleanups (closing the database) run from
     * apr_terminate after main has returned. */
    c = apr_pcalloc(pool, sizeof(*c));
    c->pool = pool;
    c->checkout = find_checkout(pool, argv[0]);
    for (; i < argc && strncmp(argv[i], "-", 1) == 0; i++) {
        if (c->db_spec && strncmp(argv[i], "--db", 4) == 0) {
            die(EXIT_USAGE, "--db given twice");
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
            c->db_spec = argv[++i];
        } else if (strncmp(argv[i], "--db=", 5) == 0) {
            c->db_spec = argv[i] + 5;
        } else if (strcmp(argv[i], "--db") == 0) {
            die(EXIT_USAGE, "--db needs a value");
        } else {
            /* The name only: "--password=..." before the command must not echo a secret. */
            die(EXIT_USAGE, "unknown option %s (see bankctl --help)",
                apr_pstrndup(c->pool, argv[i], strcspn(argv[i], "=")));
        }
    }
    if (i >= argc) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[i], "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    for (k = 0; commands[k].word; k++) {
        if (strcmp(argv[i], commands[k].word) == 0 &&
            (!commands[k].sub || (i + 1 < argc && strcmp(argv[i + 1], commands[k].sub) == 0))) {
            int skip = commands[k].sub ? 2 : 1;
            apr_table_t *o =
                parse_opts(c, argc - i - skip, argv + i + skip, commands[k].opts, commands[k].name);
            return commands[k].run(c, o);
        }
    }
    /* Only known words are echoed: a mistyped line may carry a password or a BVN. */
    for (k = 0; commands[k].word; k++) {
        if (commands[k].sub && strcmp(argv[i], commands[k].word) == 0) {
            die(EXIT_USAGE, "%s: unknown or missing subcommand (see bankctl --help)",
                commands[k].word);
        }
    }
    die(EXIT_USAGE, "unknown command (see bankctl --help)");
}
