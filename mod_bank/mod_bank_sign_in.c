/* POST /auth/sign_in (docs/api.md): client key, validation, then the core's sign-in rule
 * (bank_sign_in.c: throttle, verification, token) and its verdict mapped to an answer. */
#include <string.h>
#include <apr_strings.h>
#include <http_protocol.h>
#include <http_request.h>
#include "mod_bank.h"
#include "mod_bank_metrics.h"
#include "mod_bank_sign_in.h"
#include "mod_bank_config.h"
#include "mod_bank_http.h"
#include "mod_bank_db.h"
#include "mod_bank_auth.h"
#include "mod_bank_verify.h"
#include "bank_customer.h"
#include "bank_digest.h"
#include "bank_json.h"
#include "bank_limits.h"
#include "bank_sign_in.h"
#include "bank_validate.h"

APLOG_USE_MODULE(bank);

/* Retry-After when the verification queue is full: a verification is far shorter than the
 * smallest Retry-After, so the queue has room again by then. */
#define SIGN_IN_BUSY_RETRY 1

/* Every configured key is compared, none skipped after a match (bank_secret_in), so the
 * time taken shows neither which key matched nor a key's length. */
static int check_client_key(request_rec *r, const bank_dir_conf *conf)
{
    const apr_array_header_t *keys = conf->client_keys;

    if (!keys || keys->nelts == 0 ||
        bank_secret_in(bank_bearer(r), (const char *const *)keys->elts, keys->nelts)) {
        return OK;
    }
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  BANKLOGNO(0501) "sign-in refused: no valid client key (BankClientKey)");
    return bank_error(r, BANK_E_UNAUTHORIZED_ACCESS, "A valid client key is required.", NULL);
}

static int validate(request_rec *r, json_object *body, bank_sign_in_t *in)
{
    apr_array_header_t *errs = bank_errors_new(r->pool);

    in->email = bank_v_string(errs, body, "email", 1, BANK_EMAIL_MAX);
    if (in->email && !bank_email_plausible(in->email)) {
        bank_errors_add(errs, "email", "email", "The email field must be a valid email address");
    }
    in->password = bank_v_string(errs, body, "password", 1, BANK_PASSWORD_MAX);
    in->device = bank_v_string(errs, body, "deviceToken", 1, BANK_DEVICE_TOKEN_MAX);
    return errs->nelts > 0 ? bank_error_validation(r, errs) : OK;
}

/* The 429 of a client over a limit, the same whichever check found it. */
static int throttled(request_rec *r, const bank_sign_in_result_t *out)
{
    return bank_error_throttled(r, out->limit, out->retry_after, "sign-in");
}

static json_object *token_json(const char *plain, const char *expires)
{
    json_object *o = json_object_new_object(), *abilities = json_object_new_array();

    json_object_array_add(abilities, json_object_new_string(BANK_ABILITY_ALL));
    json_object_object_add(o, "type", json_object_new_string("bearer"));
    json_object_object_add(o, "token", json_object_new_string(plain));
    json_object_object_add(o, "abilities", abilities);
    json_object_object_add(o, "expiresAt", json_object_new_string(expires));
    json_object_object_add(o, "name", NULL);
    json_object_object_add(o, "lastUsedAt", NULL);
    return o;
}

/* The answer of a verdict other than OK. */
static int refused(request_rec *r, const bank_sign_in_t *in, const bank_sign_in_result_t *out)
{
    switch (out->verdict) {
    case BANK_SIGN_IN_THROTTLED:
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r,
                      BANKLOGNO(0502) "sign-in throttled: %d failures from this client within "
                                      "%" APR_INT64_T_FMT "s",
                      in->attempts, in->window);
        return throttled(r, out);
    case BANK_SIGN_IN_OVER:
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r,
                      BANKLOGNO(0509) "sign-in throttled: %s, failure %" APR_INT64_T_FMT
                                      " of this client in the window (limit %d)",
                      out->why, out->failures, in->attempts);
        return throttled(r, out);
    case BANK_SIGN_IN_FLOODED:
        /* a warning: a right password in a flood of failures may mean it was guessed */
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      BANKLOGNO(0510) "sign-in throttled: right password, but %" APR_INT64_T_FMT
                                      " failures of this client were counted meanwhile "
                                      "(limit %d); no token issued",
                      out->failures, in->attempts);
        return throttled(r, out);
    case BANK_SIGN_IN_ADDRESS:
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r,
                      BANKLOGNO(0901) "%s throttled (%s %s): failure %" APR_INT64_T_FMT
                                      " in the window, limit %d per %" APR_INT64_T_FMT "s",
                      "sign-in", "address", in->ip, out->failures, in->addr_attempts,
                      in->addr_window);
        return throttled(r, out);
    case BANK_SIGN_IN_ACCOUNT:
        /* the e-mail is not logged: the customer, if there is one, is known by the count */
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r,
                      BANKLOGNO(0512) "sign-in throttled (account): failure %" APR_INT64_T_FMT
                                      " of this e-mail from every address in the window, "
                                      "limit %d per %" APR_INT64_T_FMT "s",
                      out->failures, in->account_attempts, in->account_window);
        return throttled(r, out);
    case BANK_SIGN_IN_BUSY:
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0511) "sign-in refused: every password verification slot of "
                                      "this process is taken and its queue is full, or its "
                                      "verification could not start within %d ms "
                                      "(BankPasswordVerifyConcurrency)",
                      (int)apr_time_as_msec(bank_verify_max_wait()));
        return bank_error_unavailable(r,
                                      "Too many sign-ins are being verified right now; try "
                                      "again shortly.",
                                      SIGN_IN_BUSY_RETRY);
    default:
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, BANKLOGNO(0503) "sign-in refused: %s",
                      out->why);
        bank_rate_headers(r, out->limit, out->remaining);
        return bank_error(r, BANK_E_INVALID_CREDENTIALS, NULL, NULL);
    }
}

/* The connection is the request's for the throttle and customer lookups, given back while the
 * password is verified and taken again for the answer's writes (bank_sign_in_t). */
typedef struct {
    request_rec *r;
    apr_pool_t *lease;
} lease_baton;

static void give_back(void *baton)
{
    bank_db_give_back(&((lease_baton *)baton)->lease);
}

static bank_db_t *take(void *baton)
{
    lease_baton *b = baton;
    return bank_db_take(b->r, &b->lease);
}

int bank_sign_in_handler(request_rec *r)
{
    bank_dir_conf *conf = bank_conf(r);
    bank_sign_in_t in;
    bank_sign_in_result_t out;
    json_object *body, *doc;
    lease_baton lease = {r, NULL};
    bank_db_t *db;
    bank_db_rc drc;
    int rc;

    memset(&in, 0, sizeof(in));
    if ((rc = bank_allow_methods(r, AP_METHOD_BIT << M_POST, "POST")) != OK ||
        (rc = check_client_key(r, conf)) != OK ||
        (rc = bank_read_json(r, &body, NULL, NULL)) != OK || (rc = validate(r, body, &in)) != OK) {
        return rc;
    }
    in.run = bank_verify_run;
    in.run_baton = conf->verifier ? conf->verifier : bank_verifier_default();
    /* Under a flood the refusals must be quick: a process whose queue is full refuses before
     * any database work. */
    if (!bank_verify_has_room(in.run_baton)) {
        memset(&out, 0, sizeof(out));
        out.verdict = BANK_SIGN_IN_BUSY;
        return refused(r, &in, &out);
    }
    if (!(db = take(&lease))) {
        return bank_error_db(r, NULL, BANK_DB_ERROR, "sign-in");
    }
    in.give_back = give_back;
    in.take = take;
    in.db_baton = &lease;
    in.ip = bank_client_ip(r);
    in.attempts = bank_conf_throttle_attempts(conf);
    in.window = bank_conf_throttle_window(conf);
    in.addr_attempts = bank_conf_addr_attempts(conf);
    in.addr_window = bank_conf_addr_window(conf);
    in.account_attempts = bank_conf_account_attempts(conf);
    in.account_window = bank_conf_account_window(conf);
    in.lifetime = bank_conf_token_lifetime(conf);
    in.max_devices = bank_conf_max_devices(conf);
    in.now = apr_time_now();
    in.metrics = bank_metrics_shared();
    drc = bank_sign_in(db, &in, &out);
    db = out.db;
    if (drc != BANK_DB_OK) {
        return bank_error_db(r, db, drc, "sign-in"); /* the step: logged by the core */
    }
    if (out.verdict != BANK_SIGN_IN_OK) {
        return refused(r, &in, &out);
    }
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  BANKLOGNO(0507) "customer %s signed in, token id %s (%" APR_INT64_T_FMT
                                  " failures of this client cleared)",
                  out.customer.id, out.token_id, out.failures);
    r->user = apr_pstrdup(r->pool, out.customer.id);
    doc = bank_json_own(r->pool, json_object_new_object());
    json_object_object_add(doc, "token", token_json(out.token, out.expires));
    json_object_object_add(doc, "customer", bank_customer_json(r->pool, &out.customer));
    return bank_send_json(r, HTTP_OK, doc, NULL);
}
