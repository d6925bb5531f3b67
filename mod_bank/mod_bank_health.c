/* GET /health (docs/api.md): no bearer (the operator limits who may ask), no customer data.
 * 200 with status "ok" while the database answers; 503 with Retry-After and status
 * "unavailable" when it cannot be reached. Also the start-up notice. */
#include <apr_strings.h>
#include <apr_thread_mutex.h>
#include <http_protocol.h>
#include <http_log.h>
#include "mod_bank.h"
#include "mod_bank_health.h"
#include "mod_bank_db.h"
#include "mod_bank_http.h"
#include "mod_bank_idp.h"
#include "mod_bank_push.h"
#include "bank_json.h"
#include "bank_store.h"
#include "bank_version.h"

APLOG_USE_MODULE(bank);

/* Seconds a load balancer should wait before asking again while the database is gone. */
#define HEALTH_RETRY_AFTER 5

void bank_health_post_config(server_rec *s)
{
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                 BANKLOGNO(1501) "mod_bank %s configured, database driver: %s", BANK_VERSION,
                 bank_db_drivers());
}

/* How often each process asks the database again whether its role may write. */
#define WRITES_EVERY apr_time_from_sec(10)

/* The database answers when the schema's version can be read on a pooled connection (*db). */
static int database_ok(request_rec *r, bank_db_t **db)
{
    apr_int64_t version = 0;
    bank_db_rc rc;

    if (!(*db = bank_db(r))) {
        return 0;
    }
    if ((rc = bank_store_schema_version(*db, &version)) != BANK_DB_OK) {
        bank_db_failed(r, *db, rc, "health check");
        return 0;
    }
    return 1;
}

/* Whether the role may run every statement the writes need (bank_store_privileges_missing),
 * asked at most every WRITES_EVERY per process (again when another server asks): NULL when it may,
 * else what it lacks (in the process's memory, the last answer), "" when it could not be asked. */
static apr_thread_mutex_t *lock;
static apr_pool_t *keep;
static apr_time_t asked;
static const server_rec *asked_for; /* each server may have its own database and role */
static const char *last;

void bank_health_child_init(apr_pool_t *pchild)
{
    if (apr_thread_mutex_create(&lock, APR_THREAD_MUTEX_DEFAULT, pchild) != APR_SUCCESS ||
        apr_pool_create(&keep, pchild) != APR_SUCCESS) {
        lock = NULL;
    }
}

static const char *writes_missing(request_rec *r, bank_db_t *db)
{
    const char *missing = NULL, *answer;
    apr_time_t now = apr_time_now();

    if (!lock) {
        return "";
    }
    apr_thread_mutex_lock(lock);
    if (asked && asked_for == r->server && now - asked < WRITES_EVERY) {
        answer = last ? apr_pstrdup(r->pool, last) : NULL;
        apr_thread_mutex_unlock(lock);
        return answer;
    }
    apr_thread_mutex_unlock(lock);
    if (bank_store_privileges_missing(db, &missing) != BANK_DB_OK) {
        return "";
    }
    apr_thread_mutex_lock(lock);
    asked = now;
    asked_for = r->server;
    apr_pool_clear(keep);
    last = missing ? apr_pstrdup(keep, missing) : NULL;
    apr_thread_mutex_unlock(lock);
    if (missing) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(1503) "health: the database role lacks %s: writes will fail "
                                      "(docs/deployment.md, section 1)",
                      missing);
    }
    return missing;
}

int bank_health_handler(request_rec *r)
{
    json_object *body;
    bank_db_t *db = NULL;
    const char *missing = NULL;
    int rc, up;

    if ((rc = bank_allow_methods(r, AP_METHOD_BIT << M_GET, "GET, HEAD")) != OK) {
        return rc;
    }
    up = database_ok(r, &db);
    missing = up ? writes_missing(r, db) : "";
    body = bank_json_own(r->pool, json_object_new_object());
    json_object_object_add(body, "status", json_object_new_string(up ? "ok" : "unavailable"));
    json_object_object_add(body, "version", json_object_new_string(BANK_VERSION));
    json_object_object_add(body, "database", json_object_new_string(up ? "ok" : "unavailable"));
    json_object_object_add(body, "identityProvider", json_object_new_string(bank_idp_health()));
    json_object_object_add(body, "push", json_object_new_string(bank_push_status()));
    /* 200 all the same: the reads still work, and a 503 would take every server of the pool
     * out for a grant; the log and monitors say it (docs/api.md). */
    json_object_object_add(body, "writes",
                           json_object_new_string(!up || (missing && !*missing) ? "unknown"
                                                  : missing                     ? "refused"
                                                                                : "ok"));
    if (up && missing && *missing) {
        json_object_object_add(body, "missingPrivileges", json_object_new_string(missing));
    }
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    if (!up) {
        apr_table_setn(r->headers_out, "Retry-After", apr_itoa(r->pool, HEALTH_RETRY_AFTER));
    }
    return bank_send_json(r, up ? HTTP_OK : HTTP_SERVICE_UNAVAILABLE, body, NULL);
}
