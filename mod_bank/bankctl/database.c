/* bankctl: which database (--db, else the dev server's), opened through the core's handle
 * with the module's statements prepared. */
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <apr_strings.h>
#include <apr_file_io.h>
#include <apr_file_info.h>
#include <apr_lib.h>
#include "bankctl.h"
#include "bank_store.h"

/* The conninfo of the dev server's PostgreSQL database, which scripts/devserver writes to
 * $BANK_RUN_DIR/pg.conninfo while it serves from PostgreSQL, or NULL. */
static const char *dev_conninfo(ctl_t *c, const char *run)
{
    const char *path = apr_pstrcat(c->pool, run, "/pg.conninfo", (char *)NULL);
    apr_finfo_t fi;
    char *text;
    apr_size_t n;

    if (!run || apr_stat(&fi, path, APR_FINFO_TYPE, c->pool) != APR_SUCCESS) {
        return NULL;
    }
    text = ctl_slurp(c, path, 4096, path);
    for (n = strlen(text); n > 0 && apr_isspace(text[n - 1]); n--) {
        text[n - 1] = '\0';
    }
    return *text ? text : NULL;
}

static void resolve_db(ctl_t *c)
{
    const char *spec = c->db_spec, *kind = getenv("BANK_DB"), *run = getenv("BANK_RUN_DIR");

    if (!run || !*run) {
        run = c->checkout ? apr_pstrcat(c->pool, c->checkout, "/run", (char *)NULL) : NULL;
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
                run ? run : "$BANK_RUN_DIR");
        }
        c->driver_name = "pgsql";
    } else if (!kind && (c->params = dev_conninfo(c, run)) != NULL) {
        c->driver_name = "pgsql"; /* the dev server last started on PostgreSQL */
    } else if (run) {
        c->driver_name = "sqlite3";
        c->sqlite_path = apr_pstrcat(c->pool, run, "/bank.db", (char *)NULL);
    } else {
        /* An installed bankctl has no dev server to fall back on. */
        die(EXIT_USAGE, "which database? give --db sqlite:PATH or --db postgresql://... (or "
                        "set BANK_RUN_DIR to a dev server's run directory)");
    }
    if (c->sqlite_path) {
        c->params = c->sqlite_path;
    }
}

/* Run as root on an SQLite file of another account (httpd's User): from here on bankctl works
 * as that account, so that what SQLite writes beside the file (-wal, -shm, a journal) is
 * httpd's too, and root's rights go no further than reading the identity keys, which the
 * caller has done. */
static void become_owner(ctl_t *c)
{
    struct stat st;
    struct passwd *pw;

    if (geteuid() != 0 || stat(c->sqlite_path, &st) != 0 || st.st_uid == 0) {
        return;
    }
    pw = getpwuid(st.st_uid);
    if (setgid(pw ? pw->pw_gid : st.st_gid) != 0 ||
        (pw ? initgroups(pw->pw_name, pw->pw_gid) : setgroups(0, NULL)) != 0 ||
        setuid(st.st_uid) != 0) {
        die(1, "cannot switch to the owner (uid %ld) of %s", (long)st.st_uid, c->sqlite_path);
    }
}

/* Opens the connection. creating: the SQLite file may be new (migrate, which reads its SQL
 * files after this and stays the user it was started as); otherwise a missing file is an
 * error, since sqlite would silently create an empty database, and an existing SQLite file of
 * another account is opened as that account (become_owner). */
void ctl_open(ctl_t *c, int creating)
{
    const char *err = NULL;
    apr_finfo_t fi;

    resolve_db(c);
    if (c->sqlite_path && !creating) {
        become_owner(c);
    }
    if (c->sqlite_path) {
        if (creating) {
            const char *slash = strrchr(c->sqlite_path, '/');
            if (slash && slash != c->sqlite_path) {
                apr_dir_make_recursive(
                    apr_pstrndup(c->pool, c->sqlite_path, (apr_size_t)(slash - c->sqlite_path)),
                    APR_OS_DEFAULT, c->pool);
            }
        } else if (apr_stat(&fi, c->sqlite_path, APR_FINFO_TYPE, c->pool) != APR_SUCCESS) {
            die(1,
                "no database at %s: run 'bankctl migrate' first, or name the database with "
                "--db sqlite:PATH or --db postgresql://... (or set BANK_RUN_DIR)",
                c->sqlite_path);
        }
    }
    if (!(c->db = bank_db_open(c->pool, c->driver_name, c->params, &err))) {
        die(1, "%s", err);
    }
}

void ctl_open_db(ctl_t *c)
{
    const char *err;

    ctl_open(c, 0);
    if ((err = bank_db_prepare_all(c->db)) != NULL) {
        die(1, "the database schema is missing or out of date (%s): run 'bankctl migrate'", err);
    }
}

void ctl_db_fail(ctl_t *c, const char *what)
{
    const char *err = bank_db_error(c->db);
    die(1, "%s: %s", what, err ? err : "database error");
}

const char *ctl_customer_id(ctl_t *c, const char *email, int must)
{
    bank_customer_t cust;
    bank_db_rc rc = bank_store_customer_by_email(c->db, email, &cust);

    if (rc != BANK_DB_OK && rc != BANK_DB_NOT_FOUND) {
        ctl_db_fail(c, "cannot look up the customer");
    }
    if (rc == BANK_DB_NOT_FOUND && must) {
        die(1, "no customer with e-mail %s", email);
    }
    return cust.id;
}

/* The pause after a batch that took `took`: twice that (2 ms at least, a second at most), so
 * that httpd's writers, which SQLite's busy handler wakes at growing intervals (up to 100 ms),
 * find the write lock free two thirds of the time at least. */
static apr_interval_time_t pause_after(apr_interval_time_t took)
{
    apr_interval_time_t pause = 2 * took;

    return pause < apr_time_from_msec(2)  ? apr_time_from_msec(2)
           : pause > apr_time_from_sec(1) ? apr_time_from_sec(1)
                                          : pause;
}

apr_int64_t ctl_batches(ctl_t *c, ctl_batch_fn fn, void *baton, const char *what)
{
    apr_int64_t total = 0;
    apr_pool_t *bp, *before;
    int done, more = 1, tries;
    long i;
    bank_db_rc rc;

    apr_pool_create(&bp, c->pool);
    if (!(before = bank_db_use_pool(c->db, bp))) {
        die(1, "%s: a transaction was left open", what);
    }
    for (i = 0; more; i++) {
        apr_time_t took = apr_time_now();

        tries = 0;
        while ((rc = fn(c, baton, i, &done, &more)) != BANK_DB_OK && bank_db_transient(c->db, rc) &&
               ++tries <= 2) {
            apr_sleep(apr_time_from_sec(1));
        }
        took = apr_time_now() - took;
        if (rc != BANK_DB_OK) {
            ctl_db_fail(c, apr_psprintf(c->pool, "%s (%" APR_INT64_T_FMT " before the failure)",
                                        what, total));
        }
        total += done;
        apr_pool_clear(bp);
        if (more) {
            apr_sleep(pause_after(took));
        }
    }
    bank_db_use_pool(c->db, before);
    return total;
}
