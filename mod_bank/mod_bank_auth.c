/* Customer bearer tokens (CONTRACT C5): decode, look up by id, compare the SHA-256 of the
 * secret in constant time, refuse expired ones, check the endpoint's ability. */
#include <string.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <http_protocol.h>
#include "mod_bank.h"
#include "mod_bank_auth.h"
#include "mod_bank_http.h"
#include "mod_bank_db.h"
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
    const char *args[2];

    if (last_used && bank_time_parse(last_used, &last) == 0 && now - last < BANK_TOUCH_INTERVAL) {
        return;
    }
    args[0] = bank_time_iso(r->pool, now);
    args[1] = id;
    /* Best effort: a failed write must not fail an authorised request. */
    if (bank_db_exec(db, "bank_token_touch", NULL, 2, args) != BANK_DB_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      BANKLOGNO(0302) "could not record token use: %s", db->error);
    }
}

int bank_authenticate(request_rec *r, bank_db_t *db, const char *ability, bank_principal_t **out)
{
    const char *plain = bank_bearer(r), *id, *secret, *expires;
    const char *args[1];
    bank_rows_t rows;
    bank_db_rc rc;
    apr_time_t exp;
    bank_principal_t *pr;

    if (!plain) {
        return unauthorized(r, "no bearer token");
    }
    if (bank_token_decode(r->pool, plain, &id, &secret) != 0) {
        return unauthorized(r, "malformed token");
    }
    args[0] = id;
    if ((rc = bank_db_select(db, "bank_token_find", &rows, 1, args)) != BANK_DB_OK) {
        return bank_error_db(r, db, rc, "token lookup");
    }
    if (rows.nrows != 1 || !bank_token_verify(r->pool, secret, bank_rows_get(&rows, 0, 1))) {
        return unauthorized(r, "unknown or revoked token");
    }
    expires = bank_rows_get(&rows, 0, 3);
    if (expires && (bank_time_parse(expires, &exp) != 0 || exp <= apr_time_now())) {
        return unauthorized(r, "expired token");
    }
    pr = apr_pcalloc(r->pool, sizeof(*pr));
    pr->token_id = id;
    pr->customer_id = bank_rows_get(&rows, 0, 0);
    pr->abilities = bank_rows_get(&rows, 0, 2);
    if (ability &&
        !bank_abilities_allow(r->pool, pr->abilities ? pr->abilities : "[\"*\"]", ability)) {
        return bank_error(r, BANK_E_FORBIDDEN, NULL, NULL);
    }
    touch(r, db, id, bank_rows_get(&rows, 0, 4));
    /* Authenticated requests are logged with the customer, never with the token. */
    r->user = apr_pstrdup(r->pool, pr->customer_id);
    r->ap_auth_type = "Bearer";
    *out = pr;
    return OK;
}
