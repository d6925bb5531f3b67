/* POST /auth/sign_in (CONTRACT C4, C5, C6): client key, validation, throttling per
 * (lower-cased e-mail, client IP) in the database, password verification with no timing
 * oracle, then a new access token, the device and the cleared throttle in one transaction.
 * At most ATTEMPTS answers per window say "wrong", however many requests run at once. */
#include <string.h>
#include <apr_strings.h>
#include <http_protocol.h>
#include <http_request.h>
#include "mod_bank.h"
#include "mod_bank_metrics.h"
#include "bank_customer.h"
#include "bank_json.h"
#include "bank_password.h"
#include "bank_token.h"
#include "bank_util.h"

APLOG_USE_MODULE(bank);

/* Tokens issued here may do everything; narrower ones come from bankctl token issue. */
#define SIGN_IN_ABILITIES "[\"*\"]"

typedef struct {
    request_rec *r;
    bank_db_t *db;
    const char *email;    /* as sent */
    const char *email_lc; /* throttle key */
    const char *ip;
    const char *password;
    const char *device;
    int attempts;         /* BankSignInThrottle */
    apr_int64_t window;   /* seconds */
    apr_int64_t lifetime; /* BankTokenLifetime, seconds */
    apr_time_t now;
    const char *cutoff;   /* now - window: rows older than this have expired */
    bank_throttle_t addr; /* BankSignInAddressThrottle: failures of the IP, any e-mail */
} sign_in_t;

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

static int validate(request_rec *r, json_object *body, sign_in_t *s)
{
    apr_array_header_t *errs = bank_errors_new(r->pool);

    s->email = bank_v_string(errs, body, "email", 1, 254);
    if (s->email && !bank_email_plausible(s->email)) {
        bank_errors_add(errs, "email", "email", "The email field must be a valid email address");
    }
    s->password = bank_v_string(errs, body, "password", 1, 1024);
    s->device = bank_v_string(errs, body, "deviceToken", 1, 4096);
    if (errs->nelts > 0) {
        return bank_error_validation(r, errs);
    }
    s->email_lc = bank_ascii_lower(r->pool, s->email);
    return OK;
}

/* The 429 of a client over the limit, the same whichever check found it (so it never tells
 * a right password from a wrong one). window_start: the window's start as the database
 * gives it. */
static int throttled(sign_in_t *s, const char *window_start)
{
    return bank_error_throttled(s->r, s->attempts, s->window, window_start, "sign-in");
}

/* Before any password work: 429 while the failures in the current window reach the limit,
 * of this e-mail from this IP or of this IP whatever the e-mail, so a throttled client costs
 * no hashing. Not counted as a failure. */
static int throttle_check(sign_in_t *s)
{
    const char *args[] = {s->email_lc, s->ip, s->cutoff};
    bank_rows_t rows;
    bank_db_rc rc;

    if ((rc = bank_db_select(s->db, "bank_signin_throttle_get", &rows, BANK_NARGS(args), args)) !=
        BANK_DB_OK) {
        return bank_error_db(s->r, s->db, rc, "sign-in throttle lookup");
    }
    if (rows.nrows == 0 || apr_atoi64(bank_rows_get(&rows, 0, 0)) < s->attempts) {
        return bank_throttle_check(&s->addr);
    }
    ap_log_rerror(
        APLOG_MARK, APLOG_NOTICE, 0, s->r,
        BANKLOGNO(0502) "sign-in throttled: %d failures from this client within %" APR_INT64_T_FMT
                        "s",
        s->attempts, s->window);
    return throttled(s, bank_rows_get(&rows, 0, 1));
}

static void prune(sign_in_t *s);

/* Counts the failure (one atomic upsert, shared by every process) and answers 400 if it is
 * one of the ATTEMPTS of the window, 429 beyond: requests that passed throttle_check at the
 * same moment are verified, but at most ATTEMPTS answers per window say "wrong". The same
 * for the IP's own count (BankSignInAddressThrottle), whatever the e-mail. */
static int refuse(sign_in_t *s, const char *why)
{
    const char *now = bank_time_iso(s->r->pool, s->now);
    const char *args[] = {s->email_lc, s->ip, now, s->cutoff, s->cutoff};
    bank_rows_t rows;
    bank_db_rc rc;
    apr_int64_t failures;
    int rv, addr_left = 0;

    if ((rc = bank_db_select(s->db, "bank_signin_fail", &rows, BANK_NARGS(args), args)) !=
        BANK_DB_OK) {
        return bank_error_db(s->r, s->db, rc, "sign-in failure count");
    }
    prune(s);
    failures = apr_atoi64(bank_rows_get(&rows, 0, 0));
    if ((rv = bank_throttle_fail(&s->addr, &addr_left)) != OK) {
        return rv;
    }
    if (failures > s->attempts) {
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, s->r,
                      BANKLOGNO(0509) "sign-in throttled: %s, failure %" APR_INT64_T_FMT
                                      " of this client in the window (limit %d)",
                      why, failures, s->attempts);
        return throttled(s, bank_rows_get(&rows, 0, 1));
    }
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, s->r, BANKLOGNO(0503) "sign-in refused: %s", why);
    bank_rate_headers(s->r, s->attempts, s->attempts - (int)failures);
    return bank_error(s->r, BANK_E_INVALID_CREDENTIALS, NULL, NULL);
}

/* bank_password_verify, counted while it runs (bank_password_verifications_waiting). */
static int verify(sign_in_t *s, const char *stored)
{
    int rc;

    bank_metrics_password(1);
    rc = bank_password_verify(s->r->pool, s->password, stored);
    bank_metrics_password(-1);
    return rc;
}

/* 1 if the password matches. An unknown e-mail and an unreadable stored hash still cost one
 * verification, so the answer's timing does not tell them from a wrong password. */
static int password_ok(sign_in_t *s, const bank_rows_t *rows, const char **why)
{
    const char *stored = rows->nrows == 1 ? bank_rows_get(rows, 0, BANK_CUST_PASSWORD) : NULL;
    int rc = verify(s, stored ? stored : bank_password_dummy());

    if (!stored) {
        *why = "unknown e-mail";
        return 0;
    }
    if (rc == BANK_PW_MALFORMED) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, s->r,
                      BANKLOGNO(0504) "customer %s: stored password hash is in no format "
                                      "mod_bank reads (scrypt or bcrypt)",
                      bank_rows_get(rows, 0, BANK_CUST_ID));
        verify(s, bank_password_dummy());
    }
    *why = "wrong password";
    return rc == BANK_PW_MATCH;
}

static json_object *token_json(const char *plain, const char *expires)
{
    json_object *o = json_object_new_object(), *abilities = json_object_new_array();

    json_object_array_add(abilities, json_object_new_string("*"));
    json_object_object_add(o, "type", json_object_new_string("bearer"));
    json_object_object_add(o, "token", json_object_new_string(plain));
    json_object_object_add(o, "abilities", abilities);
    json_object_object_add(o, "expiresAt", json_object_new_string(expires));
    json_object_object_add(o, "name", NULL);
    json_object_object_add(o, "lastUsedAt", NULL);
    return o;
}

/* Token, device and cleared throttle in one transaction; the plaintext token on success.
 * The failures the clear removes are read at the end, before the commit: if the limit was
 * reached while this password was verified (failures counted by requests at the same
 * moment), nothing is issued and the answer is the throttle's 429, so a right password
 * hidden in a flood of wrong ones is not revealed. The same for the IP's own count, which a
 * success does not clear (a sprayer's own account must not refill the budget). */
static int issue(sign_in_t *s, const char *customer_id, const char **plain, const char **expires)
{
    const char *now = bank_time_iso(s->r->pool, s->now), *id = NULL, *secret;
    const char *device_args[] = {customer_id, s->device, now, now};
    const char *clear_args[] = {s->email_lc, s->ip, s->cutoff};
    apr_int64_t failures;
    bank_rows_t rows;
    bank_db_rc rc;
    int rv;

    if ((rc = bank_db_begin(s->db)) != BANK_DB_OK ||
        (rc = bank_token_issue(s->db, s->r->pool, customer_id, s->lifetime, SIGN_IN_ABILITIES,
                               plain, expires)) != BANK_DB_OK ||
        (rc = bank_db_exec(s->db, "bank_device_upsert", NULL, BANK_NARGS(device_args),
                           device_args)) != BANK_DB_OK ||
        (rc = bank_db_select(s->db, "bank_signin_clear", &rows, BANK_NARGS(clear_args),
                             clear_args)) != BANK_DB_OK) {
        return bank_error_db(s->r, s->db, rc, "sign-in");
    }
    failures = rows.nrows > 0 ? apr_atoi64(bank_rows_get(&rows, 0, 0)) : 0;
    if (failures >= s->attempts) {
        bank_db_end(s->db, 0);
        /* a warning: a right password in a flood of failures may mean it was guessed */
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, s->r,
                      BANKLOGNO(0510) "sign-in throttled: right password, but %" APR_INT64_T_FMT
                                      " failures of this client were counted meanwhile "
                                      "(limit %d); no token issued",
                      failures, s->attempts);
        return throttled(s, bank_rows_get(&rows, 0, 1));
    }
    if ((rv = bank_throttle_check(&s->addr)) != OK) {
        if (s->db->in_txn) {
            bank_db_end(s->db, 0);
        }
        return rv;
    }
    if ((rc = bank_db_end(s->db, 1)) != BANK_DB_OK) {
        return bank_error_db(s->r, s->db, rc, "sign-in commit");
    }
    bank_token_decode(s->r->pool, *plain, &id, &secret);
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, s->r,
                  BANKLOGNO(0507) "customer %s signed in, token id %s (%" APR_INT64_T_FMT
                                  " failures of this client cleared)",
                  customer_id, id, failures);
    return OK;
}

/* Best effort, after each success and each failure: drops throttle rows long expired, so
 * e-mail addresses that never sign in (a flood of random ones) do not pile up. */
static void prune(sign_in_t *s)
{
    const char *args[] = {bank_throttle_prune_cutoff(s->r->pool, s->now, s->window)};

    if (bank_db_exec(s->db, "bank_signin_prune", NULL, 1, args) != BANK_DB_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, s->r,
                      BANKLOGNO(0508) "could not prune sign-in throttle rows: %s", s->db->error);
    }
}

int bank_sign_in_handler(request_rec *r)
{
    bank_dir_conf *conf = bank_conf(r);
    sign_in_t s = {r};
    json_object *body, *out;
    bank_rows_t rows;
    bank_db_rc dbrc;
    const char *why = NULL, *plain = NULL, *expires = NULL;
    int rc;

    if ((rc = bank_allow_methods(r, AP_METHOD_BIT << M_POST, "POST")) != OK ||
        (rc = check_client_key(r, conf)) != OK ||
        (rc = bank_read_json(r, &body, NULL, NULL)) != OK || (rc = validate(r, body, &s)) != OK) {
        return rc;
    }
    if (!(s.db = bank_db(r))) {
        return bank_error_db(r, NULL, BANK_DB_ERROR, "sign-in");
    }
    s.ip = bank_client_ip(r);
    s.attempts = bank_conf_throttle_attempts(conf);
    s.window = bank_conf_throttle_window(conf);
    s.lifetime = bank_conf_token_lifetime(conf);
    s.now = apr_time_now();
    s.cutoff = bank_time_iso(r->pool, s.now - apr_time_from_sec(s.window));
    bank_throttle_init(&s.addr, r, s.db, "address", s.ip, "sign-in", bank_conf_addr_attempts(conf),
                       bank_conf_addr_window(conf));
    if ((rc = throttle_check(&s)) != OK) {
        return rc;
    }
    if ((dbrc = bank_db_select(s.db, "bank_customer_by_email", &rows, 1, &s.email_lc)) !=
        BANK_DB_OK) {
        return bank_error_db(r, s.db, dbrc, "customer lookup");
    }
    if (!password_ok(&s, &rows, &why)) {
        return refuse(&s, why);
    }
    if ((rc = issue(&s, bank_rows_get(&rows, 0, BANK_CUST_ID), &plain, &expires)) != OK) {
        return rc;
    }
    prune(&s);
    r->user = apr_pstrdup(r->pool, bank_rows_get(&rows, 0, BANK_CUST_ID));
    out = bank_json_own(r->pool, json_object_new_object());
    json_object_object_add(out, "token", token_json(plain, expires));
    json_object_object_add(out, "customer", bank_customer_json(r->pool, rows.rows[0]));
    return bank_send_json(r, HTTP_OK, out, NULL);
}
