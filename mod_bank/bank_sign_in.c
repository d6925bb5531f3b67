/* Sign-in (bank_sign_in.h): throttle, verification, token. */
#include <string.h>
#include <apr_strings.h>
#include "bank_customer.h"
#include "bank_encoding.h"
#include "bank_password.h"
#include "bank_sign_in.h"
#include "bank_time.h"
#include "bank_token.h"

typedef struct {
    bank_db_t *db;
    apr_pool_t *pool;
    const bank_sign_in_t *in;
    bank_sign_in_result_t *out;
    const char *email_lc; /* throttle key */
    const char *now;
    const char *cutoff; /* now - window: rows older than this have expired */
    bank_throttle_t cleared;
    bank_counter_t address; /* the client IP's budget, any e-mail */
} flow_t;

/* The verdict of a client over the limit, the same whichever check found it (so it never
 * tells a right password from a wrong one). */
static bank_db_rc over(flow_t *f, bank_sign_in_verdict v, const bank_throttle_t *t)
{
    f->out->verdict = v;
    f->out->failures = t->failures;
    f->out->limit = f->in->attempts;
    f->out->retry_after = bank_throttle_retry_after(t->window_start, f->in->window, apr_time_now());
    return BANK_DB_OK;
}

/* The client IP's budget is spent: the same 429 whatever the e-mail or the password. */
static bank_db_rc address_over(flow_t *f)
{
    f->out->verdict = BANK_SIGN_IN_ADDRESS;
    f->out->failures = f->out->address.failures;
    f->out->limit = f->in->addr_attempts;
    f->out->retry_after = f->out->address.retry_after;
    return BANK_DB_OK;
}

/* Best effort, after each success and each failure: drops rows long expired, so e-mail
 * addresses that never sign in (a flood of random ones) do not pile up. */
static void prune(flow_t *f)
{
    if (bank_store_count_prune(f->db, BANK_COUNTS_SIGN_IN, NULL,
                               bank_throttle_prune_before(f->pool, f->in->now, f->in->window)) !=
        BANK_DB_OK) {
        f->out->prune_failed = 1;
    }
}

/* 1 if the password matches. An unknown e-mail and an unreadable stored hash still cost one
 * verification, so the answer's timing does not tell them from a wrong password. */
static int password_ok(flow_t *f, int known)
{
    const char *stored = known ? f->out->customer.password : NULL;
    int rc =
        bank_password_verify(f->pool, f->in->password, stored ? stored : bank_password_dummy());

    if (!stored) {
        f->out->why = "unknown e-mail";
        return 0;
    }
    if (rc == BANK_PW_MALFORMED) {
        f->out->malformed_hash = 1;
        bank_password_verify(f->pool, f->in->password, bank_password_dummy());
    }
    f->out->why = "wrong password";
    return rc == BANK_PW_MATCH;
}

/* Counts the failure (one atomic upsert, shared by every process): REFUSED if it is one of
 * the window's attempts, OVER beyond. Requests that passed the first check at the same
 * moment are verified, but at most `attempts` answers per window say "wrong". The same for
 * the IP's own count, whatever the e-mail. */
static bank_db_rc refuse(flow_t *f)
{
    bank_throttle_t t;
    bank_db_rc rc;

    f->out->failed_at = "sign-in failure count";
    if ((rc = bank_store_count_fail(f->db, BANK_COUNTS_SIGN_IN, f->email_lc, f->in->ip, f->now,
                                    f->cutoff, &t)) != BANK_DB_OK) {
        return rc;
    }
    prune(f);
    f->out->failed_at = "throttle count";
    if ((rc = bank_counter_fail(f->db, &f->address, &f->out->address)) != BANK_DB_OK) {
        return rc;
    }
    f->out->prune_failed |= f->out->address.prune_failed;
    if (f->out->address.over) {
        return address_over(f);
    }
    if (t.failures > f->in->attempts) {
        return over(f, BANK_SIGN_IN_OVER, &t);
    }
    f->out->verdict = BANK_SIGN_IN_REFUSED;
    f->out->failures = t.failures;
    f->out->remaining = f->in->attempts - (int)t.failures;
    return BANK_DB_OK;
}

/* Inside the transaction: token, device, cleared throttle. The failures the clear removes
 * are read at the end, before the commit: if the limit was reached while this password was
 * verified, nothing is issued (rolled back), so a right password hidden in a flood of wrong
 * ones is not revealed. The same for the IP's own count, which a success does not clear (a
 * sprayer's own account must not refill the budget). */
static bank_db_rc issue(bank_db_t *db, void *baton)
{
    flow_t *f = baton;
    bank_db_rc rc;

    if ((rc = bank_token_issue(db, f->pool, f->out->customer.id, f->in->lifetime,
                               BANK_SIGN_IN_ABILITIES, &f->out->token, &f->out->expires)) !=
            BANK_DB_OK ||
        (rc = bank_store_device_upsert(db, f->out->customer.id, f->in->device, f->now)) !=
            BANK_DB_OK ||
        (rc = bank_store_count_clear(db, BANK_COUNTS_SIGN_IN, f->email_lc, f->in->ip, f->cutoff,
                                     &f->cleared)) != BANK_DB_OK) {
        return rc;
    }
    if (f->cleared.failures >= f->in->attempts) {
        return BANK_DB_ROLLBACK;
    }
    if ((rc = bank_counter_check(db, &f->address, &f->out->address)) != BANK_DB_OK) {
        return rc;
    }
    return f->out->address.over ? BANK_DB_ROLLBACK : BANK_DB_OK;
}

bank_db_rc bank_sign_in(bank_db_t *db, const bank_sign_in_t *in, bank_sign_in_result_t *out)
{
    flow_t f;
    bank_throttle_t t;
    const char *secret;
    bank_db_rc rc;

    memset(out, 0, sizeof(*out));
    memset(&f, 0, sizeof(f));
    f.db = db;
    f.pool = bank_db_pool(db);
    f.in = in;
    f.out = out;
    f.email_lc = bank_ascii_lower(f.pool, in->email);
    f.now = bank_time_iso(f.pool, in->now);
    f.cutoff = bank_time_iso(f.pool, in->now - apr_time_from_sec(in->window));
    f.address.scope = "address";
    f.address.subject = in->ip;
    f.address.attempts = in->addr_attempts;
    f.address.window = in->addr_window;
    f.address.now = in->now;

    /* Before any password work: a throttled client costs no hashing, and is not counted. */
    out->failed_at = "sign-in throttle lookup";
    rc = bank_store_count_get(db, BANK_COUNTS_SIGN_IN, f.email_lc, in->ip, f.cutoff, &t);
    if (rc == BANK_DB_OK && t.failures >= in->attempts) {
        return over(&f, BANK_SIGN_IN_THROTTLED, &t);
    }
    if (rc != BANK_DB_OK) {
        return rc;
    }
    out->failed_at = "throttle lookup";
    if ((rc = bank_counter_check(db, &f.address, &out->address)) != BANK_DB_OK) {
        return rc;
    }
    if (out->address.over) {
        return address_over(&f);
    }
    out->failed_at = "customer lookup";
    rc = bank_store_customer_by_email(db, in->email, &out->customer);
    if (rc != BANK_DB_OK && rc != BANK_DB_NOT_FOUND) {
        return rc;
    }
    if (!password_ok(&f, rc == BANK_DB_OK)) {
        return refuse(&f);
    }
    out->failed_at = "sign-in";
    if ((rc = bank_db_transaction(db, issue, &f)) != BANK_DB_OK) {
        return rc;
    }
    out->failures = f.cleared.failures;
    if (f.cleared.failures >= in->attempts) {
        out->token = out->expires = NULL;
        return over(&f, BANK_SIGN_IN_FLOODED, &f.cleared);
    }
    if (out->address.over) {
        out->token = out->expires = NULL;
        return address_over(&f);
    }
    prune(&f);
    bank_token_decode(f.pool, out->token, &out->token_id, &secret);
    out->verdict = BANK_SIGN_IN_OK;
    out->failed_at = NULL;
    return BANK_DB_OK;
}
