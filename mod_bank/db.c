/* Database access through mod_dbd: statements prepared at config time, a pooled connection
 * per request, and failures mapped to 503 (unreachable, busy) or 500. */
#include <string.h>
#include <strings.h>
#include <apr_strings.h>
#include <apr_optional.h>
#include <http_protocol.h>
#include <http_request.h>
#include "mod_bank.h"
#include <mod_dbd.h>

APLOG_USE_MODULE(bank);

static APR_OPTIONAL_FN_TYPE(ap_dbd_prepare) *dbd_prepare = NULL;
static APR_OPTIONAL_FN_TYPE(ap_dbd_acquire) *dbd_acquire = NULL;

/* One per process (created before the fork): SQLite writers of a process take turns (sql.c). */
static apr_thread_mutex_t *sqlite_writer = NULL;

/* How long a client should wait before retrying after a 503 from the database. */
#define BANK_DB_RETRY_AFTER 5

void bank_db_retrieve_optional(void)
{
    dbd_prepare = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_prepare);
    dbd_acquire = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_acquire);
}

/* The last DBDriver among directives (descending into conditional sections, not into
 * virtual hosts, which have their own). */
static const char *find_driver(const ap_directive_t *d, const char *found)
{
    for (; d; d = d->next) {
        if (!strcasecmp(d->directive, "DBDriver") && d->args) {
            found = d->args;
        } else if (d->first_child && strcasecmp(d->directive, "<VirtualHost")) {
            found = find_driver(d->first_child, found);
        }
    }
    return found;
}

/* The <VirtualHost> section that defined server s, found by its file and line. */
static const ap_directive_t *find_vhost(const ap_directive_t *d, const server_rec *s)
{
    for (; d; d = d->next) {
        if (!strcasecmp(d->directive, "<VirtualHost") &&
            (unsigned)d->line_num == s->defn_line_number && d->filename && s->defn_name &&
            !strcmp(d->filename, s->defn_name)) {
            return d;
        }
        if (d->first_child) {
            const ap_directive_t *v = find_vhost(d->first_child, s);
            if (v) {
                return v;
            }
        }
    }
    return NULL;
}

/* Statements differ per driver only where PostgreSQL needs casts; the driver a server uses
 * is read from its configuration, the way mod_dbd itself will see it. */
int bank_db_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s)
{
    const char *main_driver = find_driver(ap_conftree, NULL);
    server_rec *sp;
    const bank_stmt_t *st;
    (void)plog;
    (void)ptemp;

    bank_db_retrieve_optional(); /* the optional_fn_retrieve hook runs after post_config */
    if (apr_thread_mutex_create(&sqlite_writer, APR_THREAD_MUTEX_DEFAULT, pconf) != APR_SUCCESS) {
        sqlite_writer = NULL;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     BANKLOGNO(0607) "no SQLite writer lock: concurrent writers may stall");
    }
    if (!dbd_prepare) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     BANKLOGNO(0201) "mod_dbd is not loaded: LoadModule dbd_module first");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    for (sp = s; sp; sp = sp->next) {
        const char *driver = main_driver;
        if (sp->is_virtual) {
            const ap_directive_t *v = find_vhost(ap_conftree, sp);
            if (v && v->first_child) {
                driver = find_driver(v->first_child, main_driver);
            }
        }
        if (!driver) {
            continue; /* no database here: the handlers answer 503 */
        }
        driver = apr_pstrdup(pconf, driver);
        if (driver[0] == '"' && strlen(driver) >= 2) {
            driver = apr_pstrndup(pconf, driver + 1, strlen(driver) - 2);
        }
        for (st = bank_statements; st->label; st++) {
            dbd_prepare(sp, bank_stmt_sql(st, driver), st->label);
        }
    }
    return OK;
}

bank_db_t *bank_db(request_rec *r)
{
    ap_dbd_t *dbd = dbd_acquire ? dbd_acquire(r) : NULL;
    bank_db_t *db;

    if (!dbd) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(0202) "no database connection (see mod_dbd's messages above)");
        return NULL;
    }
    db = apr_pcalloc(r->pool, sizeof(*db));
    db->driver = dbd->driver;
    db->handle = dbd->handle;
    db->prepared = dbd->prepared;
    db->pool = r->pool;
    if (strcmp(apr_dbd_name(dbd->driver), "sqlite3") == 0) {
        db->writer_lock = sqlite_writer;
    }
    return db;
}

int bank_error_db(request_rec *r, bank_db_t *db, bank_db_rc rc, const char *what)
{
    if (!db) {
        return bank_error_unavailable(r, NULL, BANK_DB_RETRY_AFTER);
    }
    if (db->txn) {
        bank_db_end(db, 0); /* never leave a transaction open on a pooled connection */
    }
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, BANKLOGNO(0203) "%s: %s", what,
                  db->error ? db->error : "failed");
    if (rc == BANK_DB_BUSY || rc == BANK_DB_NO_STMT) {
        return bank_error_unavailable(r, NULL, BANK_DB_RETRY_AFTER);
    }
    /* A lost connection also lands here: on pgsql, check whether it is still alive so the
     * client hears 503 (retry) rather than 500. */
    if (apr_dbd_check_conn(db->driver, r->pool, db->handle) != APR_SUCCESS) {
        return bank_error_unavailable(r, NULL, BANK_DB_RETRY_AFTER);
    }
    return bank_error(r, BANK_E_INTERNAL, NULL, NULL);
}
