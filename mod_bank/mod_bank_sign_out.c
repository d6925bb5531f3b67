/* POST /auth/sign_out (docs/api.md): revokes the bearer token the request carries, as
 * AdonisJS's invalidateToken does: its row is deleted, so every endpoint refuses it from
 * then on. Any valid token may revoke itself, whatever its abilities. A body is read to its
 * end and ignored, before the token is looked at and anything is revoked: one that cannot
 * be read (over BankMaxBody, a malformed chunk, a read time-out) is answered in the API's
 * shape and revokes nothing, so the client can tell a sign-out that failed and send it
 * again. */
#include <http_protocol.h>
#include "mod_bank.h"
#include "mod_bank_sign_out.h"
#include "mod_bank_auth.h"
#include "mod_bank_http.h"
#include "mod_bank_db.h"
#include "bank_json.h"
#include "bank_store.h"

APLOG_USE_MODULE(bank);

int bank_sign_out_handler(request_rec *r)
{
    bank_db_t *db;
    bank_principal_t *who;
    json_object *body;
    bank_db_rc drc;
    const char *ignored;
    apr_size_t ignored_len;
    int rc, deleted = 0;

    /* the body first: a slow one holds no database connection while it arrives */
    if ((rc = bank_allow_methods(r, AP_METHOD_BIT << M_POST, "POST")) != OK ||
        (rc = bank_read_any_body(r, &ignored, &ignored_len)) != OK ||
        (rc = bank_customer_request(r, AP_METHOD_BIT << M_POST, "POST", NULL, &db, &who)) != OK) {
        return rc;
    }
    /* a token answered from the cache may come with no connection */
    if (!db && !(db = bank_db(r))) {
        return bank_error_db(r, NULL, BANK_DB_ERROR, "token revocation");
    }
    if ((drc = bank_store_token_delete(db, who->token_id, &deleted)) != BANK_DB_OK) {
        return bank_error_db(r, db, drc, "token revocation");
    }
    bank_auth_forget(r, who->token_id);
    /* deleted is 0 when a concurrent sign-out with the same token came first: revoked too. */
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  BANKLOGNO(1001) "customer %s signed out, token id %s revoked%s", who->customer_id,
                  who->token_id, deleted ? "" : " (already, concurrently)");
    body = bank_json_own(r->pool, json_object_new_object());
    json_object_object_add(body, "revoked", json_object_new_boolean(1));
    return bank_send_json(r, HTTP_OK, body, NULL);
}
