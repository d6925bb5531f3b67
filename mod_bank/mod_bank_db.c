/* Database access through mod_dbd: statements prepared at config time, a pooled connection
 * per request, and failures mapped to 503 (unreachable, busy) or 500. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <apr_strings.h>
#include <apr_optional.h>
#include <http_protocol.h>
#include <http_request.h>
#include "mod_bank.h"
#include "mod_bank_db.h"
#include "bank_sql.h"
#include "mod_bank_metrics.h"
#include <mod_dbd.h>

APLOG_USE_MODULE(bank);

static APR_OPTIONAL_FN_TYPE(ap_dbd_prepare) *dbd_prepare = NULL;
static APR_OPTIONAL_FN_TYPE(ap_dbd_acquire) *dbd_acquire = NULL;
static APR_OPTIONAL_FN_TYPE(ap_dbd_open) *dbd_open = NULL;
static APR_OPTIONAL_FN_TYPE(ap_dbd_close) *dbd_close = NULL;

/* One per process (created before the fork): SQLite writers of a process take turns (sql.c). */
static apr_thread_mutex_t *sqlite_writer = NULL;

void bank_db_retrieve_optional(void)
{
    dbd_prepare = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_prepare);
    dbd_acquire = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_acquire);
    dbd_open = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_open);
    dbd_close = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_close);
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

/* 1 if server sp shares its mod_dbd configuration with a server before it in the list. A
 * <VirtualHost> with no DBD directive of its own gets the main server's mod_dbd record itself
 * (httpd's merge copies the pointer), and preparing our labels a second time into the same
 * record makes mod_dbd warn "conflicting SQL statements with label" (AH02653) once per
 * statement and virtual host, on every start and graceful restart. */
static int dbd_config_prepared(server_rec *sp, server_rec *first)
{
    module *dbd = ap_find_linked_module("mod_dbd.c");
    const void *mine;
    server_rec *prev;

    if (!dbd || !(mine = ap_get_module_config(sp->module_config, dbd))) {
        return 0;
    }
    for (prev = first; prev != sp; prev = prev->next) {
        if (ap_get_module_config(prev->module_config, dbd) == mine) {
            return 1;
        }
    }
    return 0;
}

/* Statements differ per driver only where PostgreSQL needs casts; the driver a server uses
 * is read from its configuration, the way mod_dbd itself will see it. */
int bank_db_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s)
{
    const char *main_driver = find_driver(ap_conftree, NULL);
    server_rec *sp;
    const bank_stmt_t *st;
    int i;
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
        if (dbd_config_prepared(sp, s)) {
            continue;
        }
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
        for (i = 0; (st = bank_stmt_at(i)) != NULL; i++) {
            dbd_prepare(sp, bank_stmt_expand(pconf, st->sql, strcmp(driver, "pgsql") == 0),
                        st->label);
        }
    }
    return OK;
}

/* ---- connections lost or re-opened under mod_dbd ----
 * apr_dbd_pgsql's check_conn (mod_dbd calls it on every acquire, mod_bank after a failure)
 * answers a closed connection with PQreset: a new session, without the statements mod_dbd
 * prepared or its DBDInitSQL, which mod_dbd then keeps pooling as healthy. Every statement on
 * it fails ("prepared statement ... does not exist") until the process ends. So mod_bank
 * remembers each connection's mod_dbd configuration when mod_dbd opens it, and after a
 * failed statement restores a session it finds empty, the way mod_dbd built it. */
#define BANK_DBD_CFG_KEY "mod_bank:dbd_cfg"

/* What recover needs beside the handle: the request (for its log) and mod_dbd's record. */
typedef struct {
    request_rec *r;
    ap_dbd_t *dbd;
} bank_dbd_conn;

/* The driver's last error, first line only (PostgreSQL's DETAIL lines quote values). */
static const char *last_error(apr_pool_t *p, const apr_dbd_driver_t *driver, apr_dbd_t *handle)
{
    return bank_db_error_line(p, apr_dbd_error(driver, handle, 0));
}

/* ---- SQLite connections opened read-only ----
 * SQLite opens a database file that httpd's User cannot write read-only, without an error,
 * and such a connection stays read-only after the file is writable again: every write on it
 * fails (SQLITE_READONLY) for as long as mod_dbd pools it, and mod_dbd's check cannot tell.
 * So a connection that may be one is marked, and mod_bank replaces it (same DBDParams,
 * DBDInitSQL and statements) once a write succeeds on a new one. */
#define BANK_SQLITE_RO_KEY "mod_bank:sqlite_ro"

/* The connection's mark (allocated with it). */
static int *sqlite_ro_mark(ap_dbd_t *dbd)
{
    int *mark = NULL;

    apr_pool_userdata_get((void **)&mark, BANK_SQLITE_RO_KEY, dbd->pool);
    if (!mark) {
        mark = apr_pcalloc(dbd->pool, sizeof(*mark));
        apr_pool_userdata_setn(mark, BANK_SQLITE_RO_KEY, NULL, dbd->pool);
    }
    return mark;
}

/* Prepares every statement of a connection's configuration (other modules' too) on handle,
 * under its label, into a new *prepared. NULL, or the label that failed. */
static const char *prepare_all(apr_pool_t *pool, dbd_cfg_t *cfg, const apr_dbd_driver_t *driver,
                               apr_dbd_t *handle, apr_hash_t **prepared)
{
    apr_hash_index_t *hi;

    *prepared = apr_hash_make(pool);
    for (hi = apr_hash_first(pool, cfg->queries); hi; hi = apr_hash_next(hi)) {
        const void *label;
        void *query;
        apr_dbd_prepared_t *st = NULL;

        apr_hash_this(hi, &label, NULL, &query);
        if (*(const char *)query && apr_dbd_prepare(driver, pool, handle, query, label, &st) != 0) {
            return label;
        }
        if (st) {
            apr_hash_set(*prepared, label, APR_HASH_KEY_STRING, st);
        }
    }
    return NULL;
}

/* What mod_bank needs in every session, set on each new connection. On SQLite the foreign
 * keys are enforced (each SQLite connection starts with them off) and read back, so the log
 * shows what the session really has. Setting that flag expires every statement already
 * prepared on the connection, and apr_dbd's SQLite driver then fails them: a caller whose
 * statements were prepared before (mod_dbd prepares before its post_connect hooks) passes
 * cfg and *prepared to have them prepared again. */
static void session_setup(apr_pool_t *pool, server_rec *s, const apr_dbd_driver_t *driver,
                          apr_dbd_t *handle, dbd_cfg_t *cfg, apr_hash_t **prepared)
{
    bank_db_t *db = bank_db_wrap(pool, driver, handle, NULL);
    const char *on = NULL, *cache = NULL, *label;

    if (bank_dbd_is_pgsql(driver)) {
        if (bank_db_query(db, BANK_PG_SESSION_SQL) != 0) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                         BANKLOGNO(0801) "cannot set up the database session: %s",
                         last_error(pool, driver, handle));
        }
        return;
    }
    if (bank_db_query(db, BANK_SQLITE_SESSION_SQL) == 0) {
        bank_db_query_value(db, "PRAGMA foreign_keys", &on);
    }
    /* A bounded page cache (BANK_SQLITE_CACHE_KIB); SQLite reads a negative size as KiB. */
    if (bank_db_query(db, apr_psprintf(pool, "PRAGMA cache_size = -%d", BANK_SQLITE_CACHE_KIB)) ==
        0) {
        bank_db_query_value(db, "PRAGMA cache_size", &cache);
    }
    if (!on || strcmp(on, "1") != 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(0812) "SQLite connection: cannot turn foreign keys on: %s",
                     last_error(pool, driver, handle));
    } else {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s,
                     BANKLOGNO(0813) "SQLite connection: foreign_keys=%s cache_size=%s", on,
                     cache ? cache : "(unknown)");
    }
    if (prepared && (label = prepare_all(pool, cfg, driver, handle, prepared)) != NULL) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(0814) "cannot prepare %s again on a new SQLite connection: %s",
                     label, last_error(pool, driver, handle));
    }
}

/* Opens the connection again as mod_dbd opened it and, if the new one can write, puts it in
 * place of the old one (in mod_dbd's record too, so the pool keeps the new one), then closes
 * the old one. 0 if replaced; -1 (the old one kept) if not. Never inside a transaction. */
static int sqlite_reopen(request_rec *r, bank_db_t *db, ap_dbd_t *dbd)
{
    dbd_cfg_t *cfg = NULL;
    apr_dbd_t *handle = NULL, *old = dbd->handle;
    apr_hash_t *prepared;
    const char *err = NULL, *label;
    int i, n = 0;

    apr_pool_userdata_get((void **)&cfg, BANK_DBD_CFG_KEY, dbd->pool);
    if (!cfg || bank_db_in_txn(db)) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      BANKLOGNO(0811) "SQLite connection not replaced: %s",
                      cfg ? "inside a transaction" : "mod_dbd did not report how it opened it");
        return -1;
    }
    if (apr_dbd_open_ex(dbd->driver, dbd->pool, cfg->params, &handle, &err) != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      BANKLOGNO(0809) "cannot open a new SQLite connection: %s",
                      err ? err : "no reason given");
        return -1;
    }
    for (i = 0; i < cfg->init_queries->nelts; i++) {
        apr_dbd_query(dbd->driver, handle, &n, APR_ARRAY_IDX(cfg->init_queries, i, const char *));
    }
    session_setup(r->pool, r->server, dbd->driver, handle, cfg, NULL);
    if (!bank_db_writable(db, handle)) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      BANKLOGNO(0810) "a new SQLite connection cannot write either: %s",
                      last_error(r->pool, dbd->driver, handle));
        apr_dbd_close(dbd->driver, handle);
        return -1;
    }
    if ((label = prepare_all(dbd->pool, cfg, dbd->driver, handle, &prepared)) != NULL) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(0807) "cannot prepare %s on a new SQLite connection: %s", label,
                      last_error(r->pool, dbd->driver, handle));
        apr_dbd_close(dbd->driver, handle);
        return -1;
    }
    dbd->handle = handle;
    dbd->prepared = prepared;
    bank_db_replace(db, handle, prepared);
    apr_dbd_close(dbd->driver, old);
    *sqlite_ro_mark(dbd) = 0;
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                  BANKLOGNO(0808) "SQLite connection opened while the database was read-only "
                                  "replaced by a new one that can write");
    return 0;
}

/* mod_dbd's post_connect hook, first: remember the configuration and set up the session.
 * First, because mod_dbd's own post_connect runs DBDInitSQL and stops at the first
 * statement that returns a row, such as SQLite's "PRAGMA busy_timeout = 2000": any
 * DBDInitSQL after that one never runs, and neither does a later hook. */
static apr_status_t bank_db_post_connect(apr_pool_t *pool, dbd_cfg_t *cfg, ap_dbd_t *rec)
{
    apr_pool_userdata_setn(cfg, BANK_DBD_CFG_KEY, NULL, rec->pool);
    /* A file httpd's User cannot write now is opened read-only, for good (see above). */
    if (!bank_dbd_is_pgsql(rec->driver) && access(cfg->params, W_OK) != 0) {
        *sqlite_ro_mark(rec) = 1;
    }
    session_setup(pool, cfg->server, rec->driver, rec->handle, cfg, &rec->prepared);
    return OK;
}

/* mod_dbd's post_connect hook, last: on PostgreSQL mod_bank's session settings again, after
 * DBDInitSQL (when that ran to its end), so they win over an operator's. */
static apr_status_t bank_db_post_connect_last(apr_pool_t *pool, dbd_cfg_t *cfg, ap_dbd_t *rec)
{
    if (bank_dbd_is_pgsql(rec->driver)) {
        session_setup(pool, cfg->server, rec->driver, rec->handle, cfg, NULL);
    }
    return OK;
}

void bank_db_register_hooks(void)
{
    APR_OPTIONAL_HOOK(dbd, post_connect, bank_db_post_connect, NULL, NULL, APR_HOOK_FIRST);
    APR_OPTIONAL_HOOK(dbd, post_connect, bank_db_post_connect_last, NULL, NULL, APR_HOOK_LAST);
}

/* Prepared statements in the session: -1 if it cannot be asked (connection lost). */
static int pg_statement_count(bank_db_t *db)
{
    const char *v = NULL;

    if (bank_db_query_value(db, "SELECT count(*) FROM pg_prepared_statements", &v) != 0) {
        return -1;
    }
    return v ? atoi(v) : -1;
}

/* Rebuilds an empty session as mod_dbd's constructor did: DBDInitSQL, mod_bank's session
 * settings, then every statement of the connection's configuration (other modules' too)
 * under its label. The apr_dbd_prepared_t records mod_dbd holds name those labels, so they
 * work again. */
static int pg_restore(request_rec *r, bank_db_t *db, ap_dbd_t *dbd)
{
    dbd_cfg_t *cfg = NULL;
    apr_hash_index_t *hi;
    apr_pool_t *p = bank_db_pool(db);
    int i, count = 0;

    apr_pool_userdata_get((void **)&cfg, BANK_DBD_CFG_KEY, dbd->pool);
    if (!cfg) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(0802) "cannot restore the database session: mod_dbd did not "
                                      "report how it opened this connection");
        return -1;
    }
    for (i = 0; i < cfg->init_queries->nelts; i++) {
        const char *q = APR_ARRAY_IDX(cfg->init_queries, i, const char *);
        if (bank_db_query(db, q) != 0) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                          BANKLOGNO(0803) "DBDInitSQL failed on the re-opened connection: %s",
                          bank_db_error(db));
        }
    }
    if (bank_db_query(db, BANK_PG_SESSION_SQL) != 0) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      BANKLOGNO(0804) "cannot set up the re-opened database session: %s",
                      bank_db_error(db));
    }
    /* A private iterator: the configuration is shared by every thread. */
    for (hi = apr_hash_first(p, cfg->queries); hi; hi = apr_hash_next(hi)) {
        const void *label;
        void *query;
        apr_dbd_prepared_t *st = NULL;

        apr_hash_this(hi, &label, NULL, &query);
        if (!*(const char *)query) {
            continue;
        }
        if (apr_dbd_prepare(bank_db_driver(db), p, bank_db_handle(db), query, label, &st) != 0) {
            ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                          BANKLOGNO(0805) "cannot prepare %s again on the re-opened database "
                                          "connection: %s",
                          (const char *)label,
                          last_error(p, bank_db_driver(db), bank_db_handle(db)));
            return -1;
        }
        count++;
    }
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                  BANKLOGNO(0806) "database connection was re-opened (server restarted or "
                                  "connection lost): session restored, %d statements prepared",
                  count);
    return 0;
}

/* The recover function of mod_dbd connections (see bank_db_set_recover). */
static bank_conn_state recover(bank_db_t *db, void *baton)
{
    bank_dbd_conn *c = baton;
    bank_conn_state st = BANK_CONN_FRESH;
    int n;

    if (!bank_db_is_pgsql(db)) {
        /* A refused write: a new connection if the database can be written now (FRESH, so
         * the statement, which wrote nothing, runs again), else 503 (DOWN). */
        if (bank_db_read_only(db)) {
            *sqlite_ro_mark(c->dbd) = 1;
            return sqlite_reopen(c->r, db, c->dbd) == 0 ? BANK_CONN_FRESH : BANK_CONN_DOWN;
        }
        /* SQLite has no session to lose; a handle that fails the check is unusable. */
        return apr_dbd_check_conn(bank_db_driver(db), bank_db_pool(db), bank_db_handle(db)) ==
                       APR_SUCCESS
                   ? BANK_CONN_INTACT
                   : BANK_CONN_DOWN;
    }
    if ((n = pg_statement_count(db)) > 0) {
        return BANK_CONN_INTACT;
    }
    if (n < 0) {
        /* Lost: PQreset re-opens it, if the server is back. */
        if (apr_dbd_check_conn(bank_db_driver(db), bank_db_pool(db), bank_db_handle(db)) !=
                APR_SUCCESS ||
            (n = pg_statement_count(db)) < 0) {
            return BANK_CONN_DOWN;
        }
        if (n > 0) {
            return BANK_CONN_INTACT;
        }
        st = BANK_CONN_RESTORED;
    }
    return pg_restore(c->r, db, c->dbd) != 0 ? BANK_CONN_DOWN : st;
}

/* mod_bank's handle on a connection mod_dbd gave this request. Allocated in the request's pool,
 * so what the core reads through it outlives a lease given back. */
static bank_db_t *wrap(request_rec *r, ap_dbd_t *dbd)
{
    bank_dbd_conn *c = apr_pcalloc(r->pool, sizeof(*c));
    bank_db_t *db;

    c->r = r;
    c->dbd = dbd;
    db = bank_db_wrap(r->pool, dbd->driver, dbd->handle, dbd->prepared);
    bank_db_set_recover(db, recover, c);
    if (!bank_dbd_is_pgsql(dbd->driver)) {
        bank_db_set_writer_lock(db, sqlite_writer);
        /* marked read-only, and the file looks writable again: replace it before use */
        if (*sqlite_ro_mark(dbd)) {
            dbd_cfg_t *cfg = NULL;
            apr_pool_userdata_get((void **)&cfg, BANK_DBD_CFG_KEY, dbd->pool);
            if (cfg && access(cfg->params, W_OK) == 0) {
                sqlite_reopen(r, db, dbd);
            }
        }
    }
    return db;
}

static bank_db_t *no_connection(request_rec *r)
{
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                  BANKLOGNO(0202) "no database connection (see mod_dbd's messages above)");
    return NULL;
}

bank_db_t *bank_db(request_rec *r)
{
    ap_dbd_t *dbd = dbd_acquire ? dbd_acquire(r) : NULL;

    return dbd ? wrap(r, dbd) : no_connection(r);
}

typedef struct {
    server_rec *s;
    ap_dbd_t *dbd;
} lease_t;

static apr_status_t lease_end(void *data)
{
    lease_t *l = data;

    dbd_close(l->s, l->dbd);
    return APR_SUCCESS;
}

bank_db_t *bank_db_take(request_rec *r, apr_pool_t **lease)
{
    lease_t *l;

    *lease = NULL;
    if (!dbd_open || !dbd_close) {
        return no_connection(r);
    }
    apr_pool_create(lease, r->pool);
    l = apr_palloc(*lease, sizeof(*l));
    l->s = r->server;
    if (!(l->dbd = dbd_open(*lease, r->server))) {
        apr_pool_destroy(*lease);
        *lease = NULL;
        return no_connection(r);
    }
    apr_pool_cleanup_register(*lease, l, lease_end, apr_pool_cleanup_null);
    return wrap(r, l->dbd);
}

bank_db_t *bank_db_background(server_rec *s, apr_pool_t *parent, apr_pool_t **lease)
{
    lease_t *l;
    bank_db_t *db;

    *lease = NULL;
    if (!dbd_open || !dbd_close) {
        return NULL;
    }
    apr_pool_create(lease, parent);
    l = apr_palloc(*lease, sizeof(*l));
    l->s = s;
    if (!(l->dbd = dbd_open(*lease, s))) {
        apr_pool_destroy(*lease);
        *lease = NULL;
        return NULL;
    }
    apr_pool_cleanup_register(*lease, l, lease_end, apr_pool_cleanup_null);
    /* in parent, as wrap does in the request's pool: what was read outlives the lease */
    db = bank_db_wrap(parent, l->dbd->driver, l->dbd->handle, l->dbd->prepared);
    if (!bank_dbd_is_pgsql(l->dbd->driver)) {
        bank_db_set_writer_lock(db, sqlite_writer);
    }
    return db;
}

void bank_db_give_back(apr_pool_t **lease)
{
    if (*lease) {
        apr_pool_destroy(*lease);
        *lease = NULL;
    }
}

int bank_db_failed(request_rec *r, bank_db_t *db, bank_db_rc rc, const char *what)
{
    const char *error;

    bank_metrics_count_one(BANK_M_DB_ERRORS);
    if (!db) {
        return 1;
    }
    error = bank_db_error(db);
    if (bank_db_in_txn(db)) {
        bank_db_end(db, 0); /* never leave a transaction open on a pooled connection */
    }
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, BANKLOGNO(0203) "%s: %s", what ? what : "database",
                  error ? error : "failed");
    if (rc == BANK_DB_BUSY || rc == BANK_DB_NO_STMT) {
        return 1;
    }
    /* A lost connection also lands here: the client hears 503 (retry) rather than 500, and
     * recover leaves the pooled connection whole for the next request. */
    return bank_db_conn_lost(db) || bank_db_recover(db) != BANK_CONN_INTACT;
}
