/* Database access through mod_dbd (reached through mod_bank_dbd.h, which answers its quirks):
 * statements prepared at config time, mod_dbd's pool as the data layer's connection source
 * (bank_db_source.h), and failures mapped to 503 (unreachable, busy) or 500. */
#include <apr_strings.h>
#include <http_protocol.h>
#include <http_request.h>
#include <ap_mpm.h>
#include <apr_global_mutex.h>
#include <util_mutex.h>
#include "mod_bank.h"
#include "mod_bank_db.h"
#include "mod_bank_dbd.h"
#include "bank_db_source.h"
#include "mod_bank_log.h"
#include "bank_metrics.h"

APLOG_USE_MODULE(bank);

/* One per process (created before the fork): SQLite writers of a process take turns
 * (bank_db_driver.h, D8). */
static apr_thread_mutex_t *sqlite_writer = NULL;

/* The drivers the servers use, as post_config found them ("sqlite3", "pgsql, sqlite3"). */
static const char *drivers_used = NULL;

const char *bank_db_drivers(void)
{
    return drivers_used && *drivers_used ? drivers_used : "none";
}

/* BankDatabaseTimeout, and the guard of this process (NULL in the parent). */
static apr_interval_time_t db_timeout = apr_time_from_sec(BANK_DB_TIMEOUT_DEFAULT);
static bank_db_guard_t *db_guard = NULL;
/* Some server of this configuration uses PostgreSQL (only those statements are guarded). */
static int uses_pgsql = 0;

static apr_status_t unset_timeout(void *unused)
{
    (void)unused;
    db_timeout = apr_time_from_sec(BANK_DB_TIMEOUT_DEFAULT);
    return APR_SUCCESS;
}

void bank_db_set_timeout(apr_pool_t *pconf, apr_interval_time_t timeout)
{
    db_timeout = timeout;
    apr_pool_cleanup_register(pconf, NULL, unset_timeout, apr_pool_cleanup_null);
}

void bank_db_child_init(apr_pool_t *pchild, server_rec *s)
{
    int threads = 0;

    if (db_timeout <= 0 || !uses_pgsql) {
        return;
    }
    /* one slot per thread that may run a statement at once (and a few for mod_watchdog's) */
    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS || threads < 1) {
        threads = 1;
    }
    if (!(db_guard = bank_db_guard_pgsql(pchild, threads + 8))) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     BANKLOGNO(2201) "no statement guard in this process: a PostgreSQL server "
                                     "that stops answering is waited for without bound");
    }
}

void bank_db_retrieve_optional(void)
{
    bank_dbd_retrieve();
}

/* Statements differ per driver only where PostgreSQL needs casts; the driver a server uses
 * is mod_dbd's own setting (mod_bank_dbd.h). */
int bank_db_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s)
{
    int loaded = bank_dbd_retrieve(); /* the optional_fn_retrieve hook runs after post_config */
    (void)plog;

    drivers_used = "";
    uses_pgsql = 0;
    if (apr_thread_mutex_create(&sqlite_writer, APR_THREAD_MUTEX_DEFAULT, pconf) != APR_SUCCESS) {
        sqlite_writer = NULL;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     BANKLOGNO(0607) "no SQLite writer lock: concurrent writers may stall");
    }
    if (!loaded) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     BANKLOGNO(0201) "mod_dbd is not loaded: LoadModule dbd_module first");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    drivers_used = bank_dbd_prepare_all(pconf, ptemp, s, &uses_pgsql);
    return OK;
}

/* ---- mod_dbd's pool as the data layer's connection source (bank_db_source.h) ----
 * mod_dbd opens each connection and runs its post_connect hooks; mod_bank then describes it
 * for the data layer (params, DBDInitSQL, every statement of its configuration, other
 * modules' too) once, in the connection's own pool, and the data layer sets up its session
 * and recovers it. */
#define BANK_DBD_CONN_KEY "mod_bank:conn"

/* The data layer's record of a mod_dbd connection (made by the post_connect hook). */
static bank_db_conn_t *conn_of(ap_dbd_t *dbd)
{
    bank_db_conn_t *conn = NULL;

    apr_pool_userdata_get((void **)&conn, BANK_DBD_CONN_KEY, dbd->pool);
    if (conn) {
        conn->handle = dbd->handle;
        conn->prepared = dbd->prepared;
    }
    return conn;
}

/* mod_dbd's post_connect hook, first (mod_bank_dbd.h, M4): describe the connection and set up
 * the session. mod_dbd prepared its statements before, and SQLite's session expires them:
 * prepared again. */
static apr_status_t bank_db_post_connect(apr_pool_t *pool, dbd_cfg_t *cfg, ap_dbd_t *rec)
{
    bank_db_conn_t *conn = apr_pcalloc(rec->pool, sizeof(*conn));
    mod_bank_where_t w = {NULL, cfg->server};

    conn->driver = rec->driver;
    conn->handle = rec->handle;
    conn->prepared = rec->prepared;
    conn->pool = rec->pool;
    conn->params = cfg->params;
    conn->init_sql = cfg->init_queries;
    conn->statements = bank_dbd_statements(cfg, rec);
    conn->timeout = db_timeout;
    conn->source_data = rec;
    apr_pool_userdata_setn(conn, BANK_DBD_CONN_KEY, NULL, rec->pool);
    bank_db_conn_setup(conn, pool, &w, 1);
    rec->prepared = conn->prepared;
    return OK;
}

/* mod_dbd's post_connect hook, last (M4): on PostgreSQL mod_bank's session settings again,
 * after DBDInitSQL (when that ran to its end), so they win over an operator's. */
static apr_status_t bank_db_post_connect_last(apr_pool_t *pool, dbd_cfg_t *cfg, ap_dbd_t *rec)
{
    bank_db_conn_t *conn = conn_of(rec);
    mod_bank_where_t w = {NULL, cfg->server};

    if (conn && bank_db_conn_is_pgsql(conn)) {
        bank_db_conn_setup(conn, pool, &w, 0);
    }
    return OK;
}

/* The background threads (the push sender, the token-use writer) ask for a connection only
 * once mod_dbd has made this process's pools (mod_bank_dbd.h, M5). */
int bank_db_background_ready(void)
{
    return bank_dbd_ready();
}

void bank_db_register_hooks(void)
{
    bank_dbd_register_hooks(bank_db_post_connect, bank_db_post_connect_last);
}

/* A connection the data layer re-opened: mod_dbd pools the new one from now on. */
static void dbd_replaced(bank_db_source_t *src, bank_db_conn_t *conn)
{
    ap_dbd_t *dbd = conn->source_data;
    (void)src;

    dbd->handle = conn->handle;
    dbd->prepared = conn->prepared;
}

static bank_db_conn_t *no_conn_record(const char **err)
{
    *err = "mod_dbd did not report how it opened this connection (mod_bank's post_connect "
           "hook did not run)";
    return NULL;
}

/* The request's connection (ap_dbd_acquire: mod_dbd gives it back when the request ends). */
static bank_db_conn_t *request_acquire(bank_db_source_t *src, apr_pool_t *p, const char **err)
{
    ap_dbd_t *dbd = bank_dbd_acquire(src->data);
    bank_db_conn_t *conn;
    (void)p;

    if (!dbd) {
        *err = "no database connection (see mod_dbd's messages above)";
        return NULL;
    }
    return (conn = conn_of(dbd)) != NULL ? conn : no_conn_record(err);
}

static const bank_db_source_ops request_ops = {request_acquire, NULL, dbd_replaced};

/* What a request holds of the pool (bank_db_held), in its pool's user data. */
typedef struct {
    int request; /* its connection for the whole request (bank_db) */
    int leases;  /* leases not given back (bank_db_take) */
} held_t;

#define HELD_KEY "bank-db-held"

static held_t *held_of(request_rec *r)
{
    void *v = NULL;

    apr_pool_userdata_get(&v, HELD_KEY, r->pool);
    if (!v) {
        v = apr_pcalloc(r->pool, sizeof(held_t));
        apr_pool_userdata_setn(v, HELD_KEY, NULL, r->pool);
    }
    return v;
}

int bank_db_held(request_rec *r)
{
    held_t *h = held_of(r);

    return h->request || h->leases > 0;
}

/* A connection for part of a request (ap_dbd_open; ap_dbd_close when its lease pool goes). */
typedef struct {
    server_rec *s;
    apr_pool_t *lease;
    ap_dbd_t *dbd;
    held_t *held; /* the request's count, or NULL (work outside a request) */
} lease_t;

static apr_status_t lease_end(void *data)
{
    lease_t *l = data;

    bank_dbd_close(l->s, l->dbd);
    if (l->held) {
        l->held->leases--;
    }
    return APR_SUCCESS;
}

static bank_db_conn_t *lease_acquire(bank_db_source_t *src, apr_pool_t *p, const char **err)
{
    lease_t *l = src->data;
    bank_db_conn_t *conn;
    (void)p;

    if (!(l->dbd = bank_dbd_open(l->lease, l->s))) {
        *err = "no database connection (see mod_dbd's messages above)";
        return NULL;
    }
    if (l->held) {
        l->held->leases++;
    }
    apr_pool_cleanup_register(l->lease, l, lease_end, apr_pool_cleanup_null);
    return (conn = conn_of(l->dbd)) != NULL ? conn : no_conn_record(err);
}

static const bank_db_source_ops lease_ops = {lease_acquire, NULL, dbd_replaced};

/* mod_bank's handle on a connection of mod_dbd's for this request. In the request's pool,
 * so what the core reads through it outlives a lease given back. */
static bank_db_t *acquire(request_rec *r, const bank_db_source_ops *ops, void *data)
{
    bank_db_source_t *src = apr_pcalloc(r->pool, sizeof(*src));
    const char *err = NULL;
    bank_db_t *db;

    src->ops = ops;
    src->data = data;
    src->writer_lock = sqlite_writer;
    src->guard = db_guard;
    if (!(db = bank_db_acquire(src, r->pool, mod_bank_where(r), &err))) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, BANKLOGNO(0202) "%s", err);
    }
    return db;
}

bank_db_t *bank_db(request_rec *r)
{
    /* counted from before the wait for it: mod_dbd keeps what it gets until the request ends */
    held_of(r)->request = 1;
    return acquire(r, &request_ops, r);
}

bank_db_t *bank_db_take(request_rec *r, apr_pool_t **lease)
{
    lease_t *l;
    bank_db_t *db;

    apr_pool_create(lease, r->pool);
    l = apr_pcalloc(*lease, sizeof(*l));
    l->s = r->server;
    l->lease = *lease;
    l->held = held_of(r);
    if (!(db = acquire(r, &lease_ops, l))) {
        apr_pool_destroy(*lease);
        *lease = NULL;
    }
    return db;
}
bank_db_t *bank_db_background(server_rec *s, apr_pool_t *parent, apr_pool_t **lease)
{
    bank_db_source_t *src = apr_pcalloc(parent, sizeof(*src));
    mod_bank_where_t *w = apr_pcalloc(parent, sizeof(*w));
    const char *err = NULL;
    lease_t *l;
    bank_db_t *db;

    if (!bank_db_background_ready()) {
        *lease = NULL;
        return NULL; /* a round that comes before the pools: the next one will do */
    }
    apr_pool_create(lease, parent);
    l = apr_pcalloc(*lease, sizeof(*l));
    l->s = s;
    l->lease = *lease;
    src->ops = &lease_ops;
    src->data = l;
    src->writer_lock = sqlite_writer;
    w->s = s;
    /* in parent, as acquire does in the request's pool: what was read outlives the lease */
    if (!(db = bank_db_acquire(src, parent, w, &err))) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, BANKLOGNO(1816) "%s", err);
        apr_pool_destroy(*lease);
        *lease = NULL;
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

    if (bank_metrics_shared()) {
        bank_metrics_count(bank_metrics_shared(), BANK_M_DB_ERRORS);
    }
    if (!db) {
        return 1;
    }
    error = bank_db_error(db);
    if (bank_db_in_txn(db)) {
        bank_db_end(db, 0); /* never leave a transaction open on a pooled connection */
    }
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, BANKLOGNO(0203) "%s: %s", what ? what : "database",
                  error ? error : "failed");
    /* A lost connection also lands here: the client hears 503 (retry) rather than 500. */
    return bank_db_transient(db, rc);
}

/* ---- turns across processes ---- */

#define TURN_MUTEX "bank-webhook"
static apr_global_mutex_t *turn = NULL; /* NULL: no turns (each process writes when it will) */

int bank_db_turn_pre_config(apr_pool_t *pconf)
{
    return ap_mutex_register(pconf, TURN_MUTEX, NULL, APR_LOCK_DEFAULT, 0) == APR_SUCCESS
               ? OK
               : HTTP_INTERNAL_SERVER_ERROR;
}

int bank_db_turn_post_config(apr_pool_t *pconf, server_rec *s)
{
    turn = NULL;
    /* ap_global_mutex_create logs its own failure (mechanism, file) */
    return ap_global_mutex_create(&turn, NULL, TURN_MUTEX, NULL, s, pconf, 0) == APR_SUCCESS
               ? OK
               : HTTP_INTERNAL_SERVER_ERROR;
}

void bank_db_turn_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv;

    if (turn && (rv = apr_global_mutex_child_init(&turn, apr_global_mutex_lockfile(turn),
                                                  pchild)) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                     BANKLOGNO(0709) "no %s mutex in this process; its writes do not take "
                                     "turns with the other processes'",
                     TURN_MUTEX);
        turn = NULL;
    }
}

apr_status_t bank_db_turn_take(apr_interval_time_t max, apr_interval_time_t *waited)
{
    apr_time_t start = apr_time_now();
    apr_status_t rv;

    *waited = 0;
    if (!turn) {
        return APR_ENOLOCK;
    }
    rv = apr_global_mutex_timedlock(turn, max);
    if (rv == APR_ENOTIMPL) { /* a Mutex mechanism without timed waits */
        rv = apr_global_mutex_lock(turn);
    }
    *waited = apr_time_now() - start;
    return rv;
}

void bank_db_turn_give(void)
{
    apr_global_mutex_unlock(turn);
}
