/* Customer bearer tokens (docs/api.md): decode, look up by id, compare the SHA-256 of the
 * secret in constant time, refuse expired ones, check the endpoint's ability. */
#include <string.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <http_protocol.h>
#include "mod_bank.h"
#include "mod_bank_auth.h"
#include "mod_bank_http.h"
#include "mod_bank_db.h"
#include "bank_store.h"
#include "bank_token.h"
#include "bank_time.h"

APLOG_USE_MODULE(bank);

/* last_used_at is written at most this often per token, not on every request. */
#define BANK_TOUCH_INTERVAL apr_time_from_sec(60)

int bank_customer_request(request_rec *r, apr_int64_t methods, const char *allow,
                          const char *ability, bank_db_t **db, bank_principal_t **out)
{
    int rc;

    if ((rc = bank_allow_methods(r, methods, allow)) != OK) {
        return rc;
    }
    if (!(*db = bank_db(r))) {
        return bank_error_db(r, NULL, BANK_DB_ERROR, r->handler);
    }
    return bank_authenticate(r, *db, ability, out);
}

const char *bank_bearer(request_rec *r)
{
    const char *h = apr_table_get(r->headers_in, "Authorization");
    const char *v;

    if (!h || strncasecmp(h, "Bearer ", 7)) {
        return NULL;
    }
    for (v = h + 7; *v == ' '; v++) {
    }
    return *v ? v : NULL;
}

static int unauthorized(request_rec *r, const char *why)
{
    /* why is ours (no token material), for the operator at debug level */
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, BANKLOGNO(0301) "bearer refused: %s", why);
    return bank_error(r, BANK_E_UNAUTHORIZED_ACCESS, NULL, NULL);
}

static void touch(request_rec *r, bank_db_t *db, const char *id, const char *last_used)
{
    apr_time_t now = apr_time_now(), last;

    if (last_used && bank_time_parse(last_used, &last) == 0 && now - last < BANK_TOUCH_INTERVAL) {
        return;
    }
    /* Best effort: a failed write must not fail an authorised request. */
    if (bank_store_token_touch(db, id, bank_time_iso(r->pool, now)) != BANK_DB_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      BANKLOGNO(0302) "could not record token use: %s", bank_db_error(db));
    }
}

int bank_authenticate(request_rec *r, bank_db_t *db, const char *ability, bank_principal_t **out)
{
    const char *plain = bank_bearer(r), *id, *secret;
    bank_token_row_t row;
    bank_db_rc rc;
    apr_time_t exp;
    bank_principal_t *pr;

    if (!plain) {
        return unauthorized(r, "no bearer token");
    }
    if (bank_token_decode(r->pool, plain, &id, &secret) != 0) {
        return unauthorized(r, "malformed token");
    }
    rc = bank_store_token_find(db, id, &row);
    if (rc != BANK_DB_OK && rc != BANK_DB_NOT_FOUND) {
        return bank_error_db(r, db, rc, "token lookup");
    }
    if (rc == BANK_DB_NOT_FOUND || !bank_token_verify(r->pool, secret, row.hash)) {
        return unauthorized(r, "unknown or revoked token");
    }
    if (row.expires_at && (bank_time_parse(row.expires_at, &exp) != 0 || exp <= apr_time_now())) {
        return unauthorized(r, "expired token");
    }
    pr = apr_pcalloc(r->pool, sizeof(*pr));
    pr->token_id = id;
    pr->customer_id = row.customer_id;
    pr->abilities = row.abilities;
    if (ability &&
        !bank_abilities_allow(r->pool, pr->abilities ? pr->abilities : "[\"*\"]", ability)) {
        return bank_error(r, BANK_E_FORBIDDEN, NULL, NULL);
    }
    touch(r, db, id, row.last_used_at);
    /* Authenticated requests are logged with the customer, never with the token. */
    r->user = apr_pstrdup(r->pool, pr->customer_id);
    r->ap_auth_type = "Bearer";
    *out = pr;
    return OK;
}
