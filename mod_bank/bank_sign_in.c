/* Sign-in (bank_sign_in.h): throttle, verification, token. */
#include <string.h>
#include <apr_strings.h>
#include "bank_customer.h"
#include "bank_encoding.h"
#include "bank_password.h"
#include "bank_sign_in.h"
#include "bank_time.h"
#include "bank_token.h"

/* Expired throttle rows are pruned once they are older than this and than the window. */
#define THROTTLE_KEEP apr_time_from_sec(86400)

typedef struct {
    bank_db_t *db;
    apr_pool_t *pool;
    const bank_sign_in_t *in;
    bank_sign_in_result_t *out;
    const char *email_lc; /* throttle key */
    const char *now;
    const char *cutoff; /* now - window: rows older than this have expired */
    bank_throttle_t cleared;
} flow_t;

apr_int64_t bank_sign_in_retry_after(const char *window_start, apr_int64_t window, apr_time_t now)
{
    apr_time_t start;
    apr_int64_t wait;

    if (bank_time_parse(window_start, &start) != 0) {
        start = now;
    }
    wait = (start + apr_time_from_sec(window) - now + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC;
    return wait < 1 ? 1 : wait > window ? window : wait;
}

/* The verdict of a client over the limit, the same whichever check found it (so it never
 * tells a right password from a wrong one). */
static bank_db_rc over(flow_t *f, bank_sign_in_verdict v, const bank_throttle_t *t)
{
    f->out->verdict = v;
    f->out->failures = t->failures;
    f->out->retry_after = bank_sign_in_retry_after(t->window_start, f->in->window, apr_time_now());
    return BANK_DB_OK;
}

/* The verification, as one job for the host's runner. An unknown e-mail and an unreadable
 * stored hash still cost one verification, so the answer's timing does not tell them from a
 * wrong password. */
typedef struct {
    apr_pool_t *pool;
    const char *plain;
    const char *stored; /* NULL: unknown e-mail */
    int rc;
} verify_job;

static void verify(void *arg)
{
    verify_job *j = arg;

    j->rc = bank_password_verify(j->pool, j->plain, j->stored ? j->stored : bank_password_dummy());
    if (j->stored && j->rc == BANK_PW_MALFORMED) {
        bank_password_verify(j->pool, j->plain, bank_password_dummy());
    }
}

/* 1 if the password matches, 0 if not, -1 if the runner had no room for it. */
static int password_ok(flow_t *f, int known)
{
    verify_job j = {f->pool, f->in->password, known ? f->out->customer.password : NULL, 0};

    if (f->in->run) {
        if (f->in->run(f->in->run_baton, verify, &j) != 0) {
            return -1;
        }
    } else {
        verify(&j);
    }
    if (!j.stored) {
        f->out->why = "unknown e-mail";
        return 0;
    }
    f->out->malformed_hash = j.rc == BANK_PW_MALFORMED;
    f->out->why = "wrong password";
    return j.rc == BANK_PW_MATCH;
}

/* Counts the failure (one atomic upsert, shared by every process): REFUSED if it is one of
 * the window's attempts, OVER beyond. Requests that passed the first check at the same
 * moment are verified, but at most `attempts` answers per window say "wrong". */
static bank_db_rc refuse(flow_t *f)
{
    bank_throttle_t t;
    bank_db_rc rc;

    f->out->failed_at = "sign-in failure count";
    if ((rc = bank_store_throttle_fail(f->db, f->email_lc, f->in->ip, f->now, f->cutoff, &t)) !=
        BANK_DB_OK) {
        return rc;
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
 * ones is not revealed. */
static bank_db_rc issue(bank_db_t *db, void *baton)
{
    flow_t *f = baton;
    bank_db_rc rc;

    if ((rc = bank_token_issue(db, f->pool, f->out->customer.id, f->in->lifetime,
                               BANK_SIGN_IN_ABILITIES, &f->out->token, &f->out->expires)) !=
            BANK_DB_OK ||
        (rc = bank_store_device_upsert(db, f->out->customer.id, f->in->device, f->now)) !=
            BANK_DB_OK ||
        (rc = bank_store_throttle_clear(db, f->email_lc, f->in->ip, f->cutoff, &f->cleared)) !=
            BANK_DB_OK) {
        return rc;
    }
    return f->cleared.failures >= f->in->attempts ? BANK_DB_ROLLBACK : BANK_DB_OK;
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

    /* Before any password work: a throttled client costs no hashing, and is not counted. */
    out->failed_at = "sign-in throttle lookup";
    rc = bank_store_throttle_get(db, f.email_lc, in->ip, f.cutoff, &t);
    if (rc == BANK_DB_OK && t.failures >= in->attempts) {
        return over(&f, BANK_SIGN_IN_THROTTLED, &t);
    }
    if (rc != BANK_DB_OK && rc != BANK_DB_NOT_FOUND) {
        return rc;
    }
    out->failed_at = "customer lookup";
    rc = bank_store_customer_by_email(db, in->email, &out->customer);
    if (rc != BANK_DB_OK && rc != BANK_DB_NOT_FOUND) {
        return rc;
    }
    switch (password_ok(&f, rc == BANK_DB_OK)) {
    case -1:
        out->verdict = BANK_SIGN_IN_BUSY;
        out->failed_at = NULL;
        return BANK_DB_OK;
    case 0:
        return refuse(&f);
    default:
        break;
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
    bank_token_decode(f.pool, out->token, &out->token_id, &secret);
    out->verdict = BANK_SIGN_IN_OK;
    out->failed_at = NULL;
    return BANK_DB_OK;
}

bank_db_rc bank_sign_in_prune(bank_db_t *db, const bank_sign_in_t *in)
{
    apr_time_t window = apr_time_from_sec(in->window);
    apr_time_t keep = window > THROTTLE_KEEP ? window : THROTTLE_KEEP;

    return bank_store_throttle_prune(db, bank_time_iso(bank_db_pool(db), in->now - keep));
}
