/* POST /webhook/<partner> (docs/api.md): the payment partner's fund-transfer notices.
 * Fails closed without a secret; the bearer is checked against every configured secret,
 * then the HMAC of the raw bytes when BankWebhookSignature is set; the payload is validated
 * (notice.c) and committed before the answer. The table's UNIQUE (partner,
 * transaction_reference, status_code) makes a repeat insert nothing, whichever process
 * and connection it reaches, and the affected-row count tells the partner so. */
#include <apr_strings.h>
#include <http_protocol.h>
#include "mod_bank.h"
#include "mod_bank_webhook.h"
#include "mod_bank_config.h"
#include "mod_bank_http.h"
#include "mod_bank_db.h"
#include "mod_bank_auth.h"
#include "mod_bank_metrics.h"
#include "bank_json.h"
#include "bank_notice.h"
#include "bank_store.h"
#include "bank_digest.h"
#include "bank_time.h"
#include "bank_uuid.h"

APLOG_USE_MODULE(bank);

/* Retry-After when no secret is configured: fixing that takes an operator, not seconds. */
#define WEBHOOK_UNCONFIGURED_RETRY 300

static int authenticate(request_rec *r, const bank_dir_conf *conf, const char *partner)
{
    const apr_array_header_t *secrets = conf->webhook_secrets;
    const char *bearer = bank_bearer(r);

    if (!secrets || secrets->nelts == 0) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(0701) "no BankWebhookSecret for partner %s (Location %s): "
                                      "every payment notice is refused with 503 until one is set",
                      partner, bank_location(r) ? bank_location(r) : "(none)");
        return bank_error_unavailable(r, NULL, WEBHOOK_UNCONFIGURED_RETRY);
    }
    if (!bank_secret_in(bearer, (const char *const *)secrets->elts, secrets->nelts)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0702) "payment notice for partner %s refused: %s bearer", partner,
                      bearer ? "wrong" : "no");
        return bank_error(r, BANK_E_UNAUTHORIZED_ACCESS, NULL, NULL);
    }
    /* The access log names the partner, never the secret. */
    r->user = apr_pstrdup(r->pool, partner);
    r->ap_auth_type = "Bearer";
    return OK;
}

static int check_signature(request_rec *r, const bank_dir_conf *conf, const char *raw,
                           apr_size_t len)
{
    const char *given;

    if (!conf->sig_set) {
        return OK;
    }
    given = apr_table_get(r->headers_in, conf->sig_header);
    if (!bank_notice_signature_ok(conf->sig_alg == BANK_HMAC_SHA512 ? 512 : 256, conf->sig_key, raw,
                                  len, given)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0703) "payment notice refused: %s %s header",
                      given ? "wrong" : "no", conf->sig_header);
        return bank_error(r, BANK_E_INVALID_SIGNATURE, NULL, NULL);
    }
    return OK;
}

/* Commits the notice; *duplicate is set when the key was already there (nothing written). */
static int store(request_rec *r, const bank_notice_t *n, const char *partner, const char *raw,
                 int *duplicate)
{
    bank_db_t *db = bank_db(r);
    const char *id = bank_uuid4(r->pool), *account = NULL, *customer = NULL;
    bank_account_t acct;
    bank_db_rc rc;
    int added = 0;

    if (!db) {
        return bank_error_db(r, NULL, BANK_DB_ERROR, "payment notice");
    }
    if (!id) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, BANKLOGNO(0704) "no randomness for an id");
        return bank_error(r, BANK_E_INTERNAL, NULL, NULL);
    }
    /* The account whose bank-side id is the notice's walletId (an ignored notice may carry
     * none). */
    if (n->wallet_id) {
        rc = bank_store_account_by_bank_id(db, n->wallet_id, &acct);
        if (rc != BANK_DB_OK && rc != BANK_DB_NOT_FOUND) {
            return bank_error_db(r, db, rc, "payment notice: account lookup");
        }
        account = acct.id;
        customer = acct.customer_id;
    }
    rc = bank_store_notice_insert(db, n, id, partner, account, customer, raw,
                                  bank_time_iso(r->pool, apr_time_now()), &added);
    if (rc != BANK_DB_OK) {
        return bank_error_db(r, db, rc, "storing a payment notice");
    }
    *duplicate = added == 0;
    /* Partner-sent text is escaped: it must not forge log lines. */
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  BANKLOGNO(0705) "payment notice %s: partner %s, reference %s, status code %s, %s",
                  *duplicate ? "repeated (nothing written)" : "stored", partner,
                  ap_escape_logitem(r->pool, n->transaction_reference),
                  ap_escape_logitem(r->pool, n->status_code), n->status);
    if (!*duplicate && n->wallet_id && !account) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0706) "payment notice %s from partner %s: walletId %s matches "
                                      "no account; stored without one",
                      ap_escape_logitem(r->pool, n->transaction_reference), partner,
                      ap_escape_logitem(r->pool, n->wallet_id));
    }
    return OK;
}

int bank_webhook_handler(request_rec *r)
{
    const bank_dir_conf *conf = bank_conf(r);
    const char *partner = bank_conf_partner(r, conf), *raw = NULL;
    apr_array_header_t *errs = bank_errors_new(r->pool);
    apr_size_t len = 0;
    json_object *body = NULL, *answer;
    bank_notice_t *n;
    int rc, duplicate = 0;

    /* The order matters: nothing of the body is read before the partner is known, and
     * nothing is parsed before its signature holds. (The parser refuses NUL bytes, so the
     * raw body stored as text is all of it.) */
    if ((rc = bank_allow_methods(r, AP_METHOD_BIT << M_POST, "POST")) != OK) {
        return rc;
    }
    if ((rc = authenticate(r, conf, partner)) != OK) {
        return rc;
    }
    if ((rc = bank_read_body(r, &raw, &len)) != OK) {
        return rc;
    }
    if ((rc = check_signature(r, conf, raw, len)) != OK) {
        return rc;
    }
    if ((rc = bank_parse_json(r, raw, len, &body)) != OK) {
        return rc;
    }
    if (!(n = bank_notice_read(r->pool, body, errs))) {
        return bank_error_validation(r, errs);
    }
    if ((rc = store(r, n, partner, raw, &duplicate)) != OK) {
        return rc;
    }
    bank_metrics_outcome(r, duplicate ? BANK_M_NOTICE_DUPLICATE : BANK_M_NOTICE_STORED);
    answer = bank_json_own(r->pool, json_object_new_object());
    json_object_object_add(answer, "received", json_object_new_boolean(1));
    json_object_object_add(answer, "duplicate", json_object_new_boolean(duplicate));
    json_object_object_add(answer, "transactionReference",
                           json_object_new_string(n->transaction_reference));
    return bank_send_json(r, HTTP_OK, answer, NULL);
}
