/* GET /health (docs/api.md): no bearer (the operator limits who may ask), no customer data.
 * 200 with status "ok" while the database answers; 503 with Retry-After and status
 * "unavailable" when it cannot be reached. Also the start-up notice. */
#include <apr_strings.h>
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

/* The database answers when the schema's version can be read on a pooled connection. */
static int database_ok(request_rec *r)
{
    bank_db_t *db = bank_db(r);
    apr_int64_t version = 0;
    bank_db_rc rc;

    if (!db) {
        return 0;
    }
    if ((rc = bank_store_schema_version(db, &version)) != BANK_DB_OK) {
        bank_db_failed(r, db, rc, "health check");
        return 0;
    }
    return 1;
}

int bank_health_handler(request_rec *r)
{
    json_object *body;
    int rc, up;

    if ((rc = bank_allow_methods(r, AP_METHOD_BIT << M_GET, "GET, HEAD")) != OK) {
        return rc;
    }
    up = database_ok(r);
    body = bank_json_own(r->pool, json_object_new_object());
    json_object_object_add(body, "status", json_object_new_string(up ? "ok" : "unavailable"));
    json_object_object_add(body, "version", json_object_new_string(BANK_VERSION));
    json_object_object_add(body, "database", json_object_new_string(up ? "ok" : "unavailable"));
    json_object_object_add(body, "identityProvider", json_object_new_string(bank_idp_health()));
    json_object_object_add(body, "push", json_object_new_string(bank_push_status()));
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    if (!up) {
        apr_table_setn(r->headers_out, "Retry-After", apr_itoa(r->pool, HEALTH_RETRY_AFTER));
    }
    return bank_send_json(r, up ? HTTP_OK : HTTP_SERVICE_UNAVAILABLE, body, NULL);
}
