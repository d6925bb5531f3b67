/* POST /onboarding/bvn (docs/api.md): the token before the body, the fields validated, then
 * the core's onboarding rule (bank_onboard.c) and its verdict mapped to an answer. Repeats
 * and concurrent requests answer with the one account. The BVN is never logged. */
#include <string.h>
#include <apr_strings.h>
#include <http_protocol.h>
#include <http_request.h>
#include "mod_bank.h"
#include "mod_bank_metrics.h"
#include "mod_bank_bvn.h"
#include "mod_bank_identity.h"
#include "mod_bank_config.h"
#include "mod_bank_http.h"
#include "mod_bank_auth.h"
#include "mod_bank_db.h"
#include "bank_account.h"
#include "bank_customer.h"
#include "bank_json.h"
#include "bank_limits.h"
#include "bank_onboard.h"
#include "bank_validate.h"
#include "mod_bank_idp.h"

APLOG_USE_MODULE(bank);

/* Seconds a client should wait while the identity keys are refused (an operator fixes them). */
#define BVN_KEYS_RETRY_AFTER 60

/* ---- the answer ---- */

/* The account object of docs/api.md, in its order: head, balance, tail, details, dates. */
#define F(name, kind, field) BANK_JSON_FIELD(name, kind, bank_account_t, field)
static const bank_json_field_t account_head[] = {F("accountId", TEXT, id),
                                                 F("customerId", TEXT, customer_id),
                                                 F("accountType", TEXT, account_type)};
static const bank_json_field_t account_tail[] = {F("currency", TEXT, currency),
                                                 F("status", TEXT, status)};
static const bank_json_field_t account_details[] = {
    F("bank", TEXT, bank_name), F("verified", BOOL, verified),
    F("accountId", TEXT, bank_account_id), F("accountName", TEXT, account_name),
    F("accountNumber", TEXT, account_number)};
static const bank_json_field_t account_dates[] = {F("createdAt", TIME, created_at),
                                                  F("updatedAt", TIME, updated_at)};
#undef F

static json_object *account_json(apr_pool_t *p, const bank_account_t *a)
{
    json_object *o = json_object_new_object(), *d = json_object_new_object();

    bank_json_add_fields(p, o, a, account_head, BANK_JSON_NFIELDS(account_head));
    json_object_object_add(o, "balance",
                           json_object_new_string(bank_money_text(p, a->balance_minor)));
    bank_json_add_fields(p, o, a, account_tail, BANK_JSON_NFIELDS(account_tail));
    bank_json_add_fields(p, d, a, account_details, BANK_JSON_NFIELDS(account_details));
    json_object_object_add(o, "details", d);
    bank_json_add_fields(p, o, a, account_dates, BANK_JSON_NFIELDS(account_dates));
    return o;
}

/* The verified customer of docs/api.md: the customer record and bvn, referralCode, account,
 * nin. */
static json_object *customer_json(apr_pool_t *p, const bank_onboard_t *st)
{
    json_object *o = bank_customer_json(p, &st->customer);

    json_object_object_add(o, "bvn", bank_json_str(st->customer.bvn));
    json_object_object_add(o, "referralCode", bank_json_str(st->customer.referral_code));
    json_object_object_add(o, "account", account_json(p, &st->account));
    json_object_object_add(o, "nin", NULL);
    return o;
}

/* Unknown BVN, another date of birth, other names: one answer, byte for byte, so the
 * endpoint tells nobody who holds a BVN or when they were born (docs/api.md). */
#define BVN_MISMATCH "The bvn_number and date_of_birth do not match a BVN record of this customer"

/* The reason of a mismatch, for the operator only. */
static const char *const record_reasons[] = {
    [BANK_RECORD_UNKNOWN] = "no record of this BVN",
    [BANK_RECORD_DOB] = "the date of birth differs from the record",
    [BANK_RECORD_NAMES] = "the names differ from the record"};

/* The one 422 of a mismatch, with what is left of the customer's allowance. */
static int record_refused(request_rec *r, const bank_onboard_t *st)
{
    apr_array_header_t *errs = bank_errors_new(r->pool);

    bank_errors_add(errs, "bvn_number", "bvn_mismatch", BVN_MISMATCH);
    bank_rate_headers(r, st->attempts, st->count.remaining);
    bank_metrics_outcome(r, BANK_M_BVN_MISMATCH);
    return bank_error_validation(r, errs);
}

/* 429: the customer's mismatches reached BankBvnThrottle. */
static int throttled(request_rec *r, const bank_onboard_t *st)
{
    ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r,
                  BANKLOGNO(1901) "%s throttled (%s %s): failure %" APR_INT64_T_FMT
                                  " in the window, limit %d per %" APR_INT64_T_FMT "s",
                  "BVN", "bvn", st->customer_id, st->count.failures, st->attempts, st->window);
    return bank_error_throttled(r, st->attempts, st->count.retry_after, "BVN");
}

/* What a repeat's answer is kept with (BankBvnCacheSeconds, mod_bank_auth.h): what it
 * answers, whether it may be kept, and when and at which epoch the database read began. */
typedef struct {
    bank_bvn_question_t q;
    int may;
    apr_time_t fetched;
    apr_uint64_t epoch;
} keep_t;

/* 200 with the verified customer. A repeat judged by what the database holds is kept for the
 * next (any change to it reaches every process through the revocation feed); one an identity
 * provider was asked about again (no record kept) is not. */
static int verified(request_rec *r, const bank_onboard_t *st, const keep_t *keep)
{
    json_object *body = bank_json_own(r->pool, json_object_new_object());
    const char *text;

    json_object_object_add(body, "customer", customer_json(r->pool, st));
    bank_metrics_outcome(r, st->opened ? BANK_M_BVN_VERIFIED : BANK_M_BVN_REPEAT);
    text = bank_answer_text(r, body,
                            st->opened ? "BVN verified successfully" : "BVN already verified");
    if (keep->may && !st->opened && !st->kept.bvn) {
        bank_bvn_answer_put(r, st->customer_id, &keep->q, text, keep->fetched, keep->epoch);
    }
    return bank_send_text(r, HTTP_OK, text, strlen(text));
}

/* The answer a settled verdict calls for. */
static int answer(request_rec *r, const bank_onboard_t *st, const bank_idp_onboard_t *idp,
                  const keep_t *keep)
{
    if (st->throttled || st->record != BANK_RECORD_OK) {
        bank_bvn_answer_forget(r, st->customer_id); /* the feed tells the other processes */
    }
    if (st->record == BANK_RECORD_UNAVAILABLE) {
        return bank_idp_unavailable(r, idp); /* logged where the provider failed */
    }
    if (st->record != BANK_RECORD_OK) {
        /* the reason is for the operator only; the answer is the same for all three */
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0605) "customer %s: BVN not verified (%s)", st->customer_id,
                      idp->why ? idp->why : record_reasons[st->record]);
    }
    if (st->throttled) {
        return throttled(r, st);
    }
    if (st->record != BANK_RECORD_OK) {
        return record_refused(r, st);
    }
    switch (st->verdict) {
    case BANK_ONBOARD_DONE:
        if (st->opened) {
            ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                          BANKLOGNO(0604) "customer %s verified; account %s opened",
                          st->customer_id, st->account.id ? st->account.id : "(not found)");
        }
        return verified(r, st, keep);
    case BANK_ONBOARD_OTHER:
        return bank_error(r, BANK_E_ALREADY_VERIFIED, NULL, NULL);
    case BANK_ONBOARD_TAKEN:
        /* Nothing about the other customer: not who, not when. */
        return bank_error(r, BANK_E_BVN_IN_USE, NULL, NULL);
    case BANK_ONBOARD_NO_CUSTOMER:
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0601) "token of customer %s, who no longer exists",
                      st->customer_id);
        return bank_error(r, BANK_E_UNAUTHORIZED_ACCESS, NULL, NULL);
    default:
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(0602) "customer %s has a BVN but no account: repair the data",
                      st->customer_id);
        return bank_error(r, BANK_E_INTERNAL, NULL, NULL);
    }
}

/* ---- the request ---- */

/* 422 with one entry per failed field, or OK with both values. */
static int validate(request_rec *r, json_object *body, const char **bvn, const char **dob)
{
    apr_array_header_t *errs = bank_errors_new(r->pool);

    *bvn = bank_v_string(errs, body, "bvn_number", 1, BANK_FIELD_MAX);
    if (*bvn && !bank_bvn_valid(*bvn)) {
        bank_errors_add(errs, "bvn_number", "regex",
                        "The bvn_number field must be exactly 11 digits");
    }
    *dob = bank_v_string(errs, body, "date_of_birth", 1, BANK_FIELD_MAX);
    if (*dob) {
        switch (bank_date_check(*dob, apr_time_now())) {
        case BANK_DATE_OK:
            break;
        case BANK_DATE_FORMAT:
            bank_errors_add(errs, "date_of_birth", "date",
                            "The date_of_birth field must be a date in the format YYYY-MM-DD");
            break;
        case BANK_DATE_UNREAL:
            bank_errors_add(errs, "date_of_birth", "date",
                            "The date_of_birth field must be a real calendar date");
            break;
        default:
            bank_errors_add(errs, "date_of_birth", "beforeOrEqual",
                            "The date_of_birth field must not be in the future");
            break;
        }
    }
    return errs->nelts ? bank_error_validation(r, errs) : OK;
}

/* The onboarding's rules for this customer: the throttle's, and the identity provider, if the
 * Location names one other than the table (idp is its baton). */
static void onboard_rules(request_rec *r, const bank_dir_conf *conf, const bank_principal_t *who,
                          bank_onboard_t *st, bank_onboard_provider_t *provider,
                          bank_idp_onboard_t *idp)
{
    memset(st, 0, sizeof(*st));
    st->customer_id = who->customer_id;
    st->attempts = bank_conf_bvn_attempts(conf);
    st->window = bank_conf_bvn_window(conf);
    if (bank_idp_kind_of(r) != BANK_IDP_TABLE) {
        provider->baton = idp;
        provider->source = bank_idp_kind_name(bank_idp_kind_of(r));
        st->provider = provider;
    }
}

/* The onboarding's steps worth a trace: an account being opened, referral codes tried again. */
static void log_steps(request_rec *r, const bank_onboard_t *st)
{
    if (st->opening) {
        ap_log_rerror(APLOG_MARK, APLOG_TRACE1, 0, r,
                      BANKLOGNO(0606) "customer %s: not verified yet, opening the account",
                      st->customer_id);
    }
    if (st->retries) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      BANKLOGNO(0603) "customer %s: %d attempts failed on a taken referral "
                                      "code before this one",
                      st->customer_id, st->retries);
    }
}

int bank_bvn_handler(request_rec *r)
{
    const bank_dir_conf *conf = bank_conf(r);
    bank_onboard_bank_t bank = {bank_conf_account_bank(conf), bank_conf_account_bank_code(conf)};
    bank_principal_t *who;
    bank_onboard_provider_t provider = {bank_idp_onboard_ask, NULL, NULL, bank_idp_onboard_hold};
    bank_idp_onboard_t idp = {r, 0, NULL};
    bank_onboard_t st;
    json_object *body;
    const char *dob, *text;
    keep_t keep;
    bank_db_t *db;
    bank_db_rc drc;
    int rc;

    /* The token before the body (docs/api.md): a caller without one gets 401, whatever
     * they sent, and nothing of the body is read or parsed for them. */
    if ((rc = bank_customer_request(r, AP_METHOD_BIT << M_POST, "POST", BANK_ABILITY_BVN, &db,
                                    &who)) != OK) {
        return rc;
    }
    if ((rc = bank_read_json(r, &body, NULL, NULL)) != OK) {
        return rc;
    }
    if (bank_identity_refused()) {
        /* the identity keys of this configuration were refused at its restart (BANK1705) */
        return bank_error_unavailable(r, NULL, BVN_KEYS_RETRY_AFTER);
    }
    onboard_rules(r, conf, who, &st, &provider, &idp);
    if ((rc = validate(r, body, &st.bvn, &dob)) != OK) {
        return rc;
    }
    /* A verified customer's repeat, answered before and unchanged since: no statement. */
    keep.q.bvn = st.bvn;
    keep.q.dob = dob;
    keep.q.rule = apr_psprintf(r->pool, "%d/%" APR_INT64_T_FMT "/%s", st.attempts, st.window,
                               st.provider ? st.provider->source : "table");
    if (bank_bvn_answer_get(r, &db, st.customer_id, &keep.q, &text)) {
        bank_metrics_outcome(r, BANK_M_BVN_REPEAT);
        return bank_send_text(r, HTTP_OK, text, strlen(text));
    }
    if (!db && !(db = bank_db(r))) {
        return bank_error_db(r, NULL, BANK_DB_ERROR, "BVN onboarding");
    }
    keep.may = bank_bvn_answer_epoch(r, &keep.epoch);
    keep.fetched = apr_time_now();
    drc = bank_onboard(db, &st, dob, &bank);
    log_steps(r, &st);
    if (drc != BANK_DB_OK) {
        return bank_error_db(r, db, drc, "BVN onboarding"); /* the step: logged by the core */
    }
    return answer(r, &st, &idp, &keep);
}
