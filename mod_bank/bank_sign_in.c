/* Sign-in (bank_sign_in.h): throttle, verification, token. */
#include <string.h>
#include <apr_strings.h>
#include "bank_customer.h"
#include "bank_encoding.h"
#include "bank_log.h"
#include "bank_password.h"
#include "bank_sign_in.h"
#include "bank_time.h"
#include "bank_token.h"
#include "bank_uuid.h"

typedef struct {
    bank_db_t *db;
    bank_log_where where; /* the first connection's: the host's place in the log */
    apr_pool_t *pool;
    const bank_sign_in_t *in;
    bank_sign_in_result_t *out;
    const char *now;
    bank_counter_t email; /* BankSignInThrottle: this e-mail from this IP */
    /* The budgets no success clears: BankSignInAddressThrottle (this IP, any e-mail) and
     * BankSignInAccountThrottle (this e-mail, any IP); each with its verdict and its count in
     * the result. */
    bank_counter_t shared[2];
    bank_sign_in_verdict shared_verdict[2];
    bank_count_t *shared_out[2];
    bank_sign_in_verdict late; /* a shared budget found spent inside the token's transaction */
    bank_count_t cleared;      /* what the success cleared of the e-mail's count */
} flow_t;

/* A step that failed on the database, logged where it failed; its code returned. */
static bank_db_rc failed(flow_t *f, bank_db_rc rc, const char *step)
{
    bank_log(f->where, BANK_LOG_MARK, BANK_LOG_ERR, BANKLOGNO(1903) "sign-in: %s failed: %s", step,
             f->db && bank_db_error(f->db) ? bank_db_error(f->db) : "no connection");
    return rc;
}

/* A verdict of a client over a limit, the same whichever check found it (so it never tells
 * a right password from a wrong one). */
static bank_db_rc over(flow_t *f, bank_sign_in_verdict v, const bank_counter_t *c,
                       const bank_count_t *n)
{
    f->out->verdict = v;
    f->out->failures = n->failures;
    f->out->limit = c->attempts;
    f->out->retry_after = n->retry_after;
    return BANK_DB_OK;
}

/* The verification, as one job for the host's runner. An unknown e-mail and an unreadable
 * stored hash still cost one verification, so the answer's timing does not tell them from a
 * wrong password. Counted in metrics from admission to the end
 * (bank_password_verifications_waiting). */
typedef struct {
    apr_pool_t *pool;
    const char *plain;
    const char *stored;  /* NULL: unknown e-mail */
    const char *against; /* stored, or the dummy for an unknown e-mail */
    int rc;
} verify_job;

/* After the verification: an unreadable stored hash costs a verification of the dummy. */
static void verify_unreadable(verify_job *j)
{
    if (j->stored && j->rc == BANK_PW_MALFORMED) {
        bank_password_verify(j->pool, j->plain, bank_password_dummy_copy(j->pool));
    }
}

static void verify(void *arg)
{
    verify_job *j = arg;

    j->rc = bank_password_verify(j->pool, j->plain, j->against);
    verify_unreadable(j);
}

/* Two sign-ins' verifications together (the runner pairs jobs of one kind). Both requests wait
 * for it, so the first one's pool serves both. */
static void verify_two(void *arg, void *other)
{
    verify_job *j[2] = {arg, other};
    const char *plain[2] = {j[0]->plain, j[1]->plain}, *against[2] = {j[0]->against, j[1]->against};
    int rc[2], c;

    bank_password_verify_two(j[0]->pool, plain, against, rc);
    for (c = 0; c < 2; c++) {
        j[c]->rc = rc[c];
        verify_unreadable(j[c]);
    }
}

/* When this process last sampled the stored hashes (0: never), and whether a sign-in is
 * sampling now: one at a time, the others go on with the dummy they have. */
static apr_time_t dummy_sampled;
static int dummy_sampling;
static int dummy_refresh = BANK_PW_DUMMY_REFRESH;

static apr_status_t default_dummy_refresh(void *unused)
{
    (void)unused;
    dummy_refresh = BANK_PW_DUMMY_REFRESH;
    return APR_SUCCESS;
}

void bank_sign_in_set_dummy_refresh(apr_pool_t *pconf, int seconds)
{
    dummy_refresh = seconds;
    /* the configuration is read again on every restart, and may no longer set it */
    apr_pool_cleanup_register(pconf, NULL, default_dummy_refresh, apr_pool_cleanup_null);
}

/* The dummy follows the stored hashes (bank_password.h): every BankPasswordDummyRefresh seconds
 * one sign-in of the process reads a random sample of them and makes a hash of their most
 * common algorithm and parameters the dummy. Whichever sign-in it is, known e-mail or not: the
 * moment of a refresh tells nothing about the e-mail. A failed read keeps the dummy there is. */
static void sample_dummy(flow_t *f)
{
    apr_time_t last = __atomic_load_n(&dummy_sampled, __ATOMIC_ACQUIRE);
    const char *const *hashes;
    const char *dummy, *cost = NULL, *was = NULL;
    int n;

    if ((last && f->in->now - last < apr_time_from_sec(dummy_refresh) && f->in->now >= last) ||
        __atomic_exchange_n(&dummy_sampling, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    if (bank_store_password_sample(f->db, bank_uuid4(f->pool), BANK_PW_DUMMY_SAMPLE, &hashes, &n) ==
            BANK_DB_OK &&
        n < BANK_PW_DUMMY_SAMPLE / 4 &&
        bank_store_password_sample(f->db, NULL, BANK_PW_DUMMY_SAMPLE, &hashes, &n) != BANK_DB_OK) {
        n = 0; /* near the end of the id order: from the start instead */
    }
    if (n > 0 && (dummy = bank_password_dummy_of(f->pool, hashes, n, &cost)) != NULL) {
        if (!bank_password_dummy_like(f->pool, bank_password_dummy_copy(f->pool), &was) ||
            strcmp(was, cost) != 0) {
            bank_log(f->where, BANK_LOG_MARK, BANK_LOG_INFO,
                     BANKLOGNO(2001) "unknown e-mails are now verified against a %s hash, the "
                                     "most common of %d stored hashes sampled",
                     cost, n);
        }
        bank_password_set_dummy(dummy);
    }
    __atomic_store_n(&dummy_sampled, f->in->now, __ATOMIC_RELEASE);
    __atomic_store_n(&dummy_sampling, 0, __ATOMIC_RELEASE);
}

void bank_sign_in_forget_dummy(void)
{
    __atomic_store_n(&dummy_sampled, 0, __ATOMIC_RELEASE);
    bank_password_reset_dummy();
}

/* 1 if the password matches, 0 if not, -1 if the runner had no room for it. */
static int password_ok(flow_t *f, int known)
{
    verify_job j = {f->pool, f->in->password, known ? f->out->customer.password : NULL, NULL, 0};
    bank_sign_in_job_t job;
    int refused = 0;

    j.against = j.stored ? j.stored : bank_password_dummy_copy(f->pool);
    job.one = verify, job.two = verify_two, job.arg = &j;
    job.kind = bank_password_pair_kind(f->pool, j.against);

    /* counted from admission to the end: waiting for a turn, then computing */
    if (f->in->metrics) {
        bank_metrics_waiting(f->in->metrics, 1);
    }
    if (f->in->run) {
        refused = f->in->run(f->in->run_baton, &job) != 0;
    } else {
        verify(&j);
    }
    if (f->in->metrics) {
        bank_metrics_waiting(f->in->metrics, -1);
    }
    if (refused) {
        return -1;
    }
    if (!j.stored) {
        f->out->why = "unknown e-mail";
        return 0;
    }
    if (j.rc == BANK_PW_MALFORMED) {
        bank_log(f->where, BANK_LOG_MARK, BANK_LOG_WARNING,
                 BANKLOGNO(0504) "customer %s: stored password hash is in no format mod_bank "
                                 "reads (scrypt, bcrypt or argon2)",
                 f->out->customer.id);
    }
    f->out->why = "wrong password";
    return j.rc == BANK_PW_MATCH;
}

/* The shared budgets' counts (check: read only; else one failure counted in each): the
 * verdict of the first one over, with its count; BANK_SIGN_IN_OK when none is. A database
 * error is returned, for the caller to log. */
static bank_db_rc shared_budgets(flow_t *f, int check, bank_sign_in_verdict *v)
{
    bank_db_rc rc;
    int k;

    *v = BANK_SIGN_IN_OK;
    for (k = 0; k < 2; k++) {
        rc = check ? bank_counter_check(f->db, &f->shared[k], f->shared_out[k])
                   : bank_counter_fail(f->db, &f->shared[k], f->shared_out[k]);
        if (rc != BANK_DB_OK) {
            return rc;
        }
    }
    for (k = 0; k < 2 && *v == BANK_SIGN_IN_OK; k++) {
        if (f->shared_out[k]->over) {
            *v = f->shared_verdict[k];
            over(f, *v, &f->shared[k], f->shared_out[k]);
        }
    }
    return BANK_DB_OK;
}

/* Counts the failure (one atomic upsert, shared by every process): REFUSED if it is one of
 * the window's attempts, OVER beyond. Requests that passed the first check at the same
 * moment are verified, but at most `attempts` answers per window say "wrong". The same for
 * the IP's own count, whatever the e-mail, and the e-mail's, whatever the IP. Each count
 * prunes rows long expired. */
static bank_db_rc refuse(flow_t *f)
{
    bank_sign_in_verdict v;
    bank_count_t n;
    bank_db_rc rc;
    int k;

    if ((rc = bank_counter_fail(f->db, &f->email, &n)) != BANK_DB_OK) {
        return failed(f, rc, "sign-in failure count");
    }
    if ((rc = shared_budgets(f, 0, &v)) != BANK_DB_OK) {
        return failed(f, rc, "throttle count");
    }
    if (v != BANK_SIGN_IN_OK) {
        return BANK_DB_OK;
    }
    if (n.over) {
        return over(f, BANK_SIGN_IN_OVER, &f->email, &n);
    }
    f->out->verdict = BANK_SIGN_IN_REFUSED;
    f->out->failures = n.failures;
    /* what the client may still try is the smallest of its budgets */
    f->out->remaining = n.remaining;
    f->out->limit = f->email.attempts;
    for (k = 0; k < 2; k++) {
        if (f->shared_out[k]->remaining < f->out->remaining) {
            f->out->remaining = f->shared_out[k]->remaining;
            f->out->limit = f->shared[k].attempts;
        }
    }
    return BANK_DB_OK;
}

/* Inside the transaction: token, device, cleared throttle. The failures the clear removes
 * are read at the end, before the commit: if the limit was reached while this password was
 * verified, nothing is issued (rolled back), so a right password hidden in a flood of wrong
 * ones is not revealed. The same for the shared budgets, which a success does not clear (a
 * sprayer's own account must not refill the address's budget, nor the account's owner the
 * budget of everyone guessing at it). */
static bank_db_rc issue(bank_db_t *db, void *baton)
{
    flow_t *f = baton;
    const char *secret;
    bank_db_rc rc;

    if ((rc = bank_token_issue(db, f->pool, f->out->customer.id, f->in->lifetime,
                               BANK_SIGN_IN_ABILITIES, &f->out->token, &f->out->expires)) !=
        BANK_DB_OK) {
        return rc;
    }
    /* the device is the new session's: signing it out removes the device (C6) */
    (void)bank_token_decode(f->pool, f->out->token, &f->out->token_id, &secret);
    if ((rc = bank_store_device_upsert(db, f->out->customer.id, f->in->device, f->out->token_id,
                                       f->now)) != BANK_DB_OK ||
        (f->in->max_devices > 0 &&
         (rc = bank_store_device_trim(db, f->out->customer.id, f->in->device,
                                      f->in->max_devices)) != BANK_DB_OK) ||
        (rc = bank_counter_take(db, &f->email, &f->cleared)) != BANK_DB_OK) {
        return rc;
    }
    if (f->cleared.over) {
        return BANK_DB_ROLLBACK;
    }
    if ((rc = shared_budgets(f, 1, &f->late)) != BANK_DB_OK) {
        return rc;
    }
    return f->late != BANK_SIGN_IN_OK ? BANK_DB_ROLLBACK : BANK_DB_OK;
}

static void counters(flow_t *f)
{
    const bank_sign_in_t *in = f->in;
    const char *ip = bank_throttle_address(f->pool, in->ip); /* IPv6: its /64 */
    bank_counter_t email = {BANK_COUNTS_SIGN_IN,
                            bank_ascii_lower(f->pool, in->email),
                            ip,
                            in->attempts,
                            in->window,
                            in->now};
    bank_counter_t address = {BANK_COUNTS_SHARED, "address",       ip,
                              in->addr_attempts,  in->addr_window, in->now};
    bank_counter_t account = {BANK_COUNTS_SHARED,   "account",          email.scope,
                              in->account_attempts, in->account_window, in->now};

    f->email = email;
    f->shared[0] = address;
    f->shared_verdict[0] = BANK_SIGN_IN_ADDRESS;
    f->shared_out[0] = &f->out->address;
    f->shared[1] = account;
    f->shared_verdict[1] = BANK_SIGN_IN_ACCOUNT;
    f->shared_out[1] = &f->out->account;
}

bank_db_rc bank_sign_in(bank_db_t *db, const bank_sign_in_t *in, bank_sign_in_result_t *out)
{
    flow_t f;
    bank_sign_in_verdict v;
    bank_count_t n;
    bank_db_rc rc;
    int ok;

    memset(out, 0, sizeof(*out));
    memset(&f, 0, sizeof(f));
    f.db = db;
    f.where = bank_db_where(db);
    out->db = db;
    f.pool = bank_db_pool(db);
    f.in = in;
    f.out = out;
    f.now = bank_time_iso(f.pool, in->now);
    counters(&f);

    /* Before any password work: a throttled client costs no hashing, and is not counted. */
    if ((rc = bank_counter_check(db, &f.email, &n)) != BANK_DB_OK || n.over) {
        return rc != BANK_DB_OK ? failed(&f, rc, "sign-in throttle lookup")
                                : over(&f, BANK_SIGN_IN_THROTTLED, &f.email, &n);
    }
    if ((rc = shared_budgets(&f, 1, &v)) != BANK_DB_OK || v != BANK_SIGN_IN_OK) {
        return rc != BANK_DB_OK ? failed(&f, rc, "throttle lookup") : BANK_DB_OK;
    }
    sample_dummy(&f);
    rc = bank_store_customer_by_email(db, in->email, &out->customer);
    if (rc != BANK_DB_OK && rc != BANK_DB_NOT_FOUND) {
        return failed(&f, rc, "customer lookup");
    }
    if (in->take) {
        in->give_back(in->db_baton);
        f.db = db = out->db = NULL;
    }
    ok = password_ok(&f, rc == BANK_DB_OK);
    if (ok == -1) {
        out->verdict = BANK_SIGN_IN_BUSY;
        return BANK_DB_OK;
    }
    if (in->take && !(f.db = db = out->db = in->take(in->db_baton))) {
        return failed(&f, BANK_DB_ERROR, "connection after the password check");
    }
    if (ok == 0) {
        return refuse(&f);
    }
    if ((rc = bank_db_transaction(db, issue, &f)) != BANK_DB_OK) {
        return failed(&f, rc, "issuing the token");
    }
    if (f.cleared.over || f.late != BANK_SIGN_IN_OK) {
        /* rolled back; the late budget's verdict is set already */
        out->token = out->expires = out->token_id = NULL;
        return f.cleared.over ? over(&f, BANK_SIGN_IN_FLOODED, &f.email, &f.cleared) : BANK_DB_OK;
    }
    out->failures = f.cleared.failures;
    (void)bank_counter_prune(db, &f.email); /* best effort: a failure is logged there */
    out->verdict = BANK_SIGN_IN_OK;
    return BANK_DB_OK;
}

int bank_sign_in_default_concurrency(int cpus, int threads)
{
    int half = threads / 2;
    return cpus < half ? cpus : half > 1 ? half : 1;
}

int bank_sign_in_default_waiting(int concurrency, int threads)
{
    int room = threads / 2 - concurrency, most = concurrency * BANK_SIGN_IN_WAIT_FACTOR;
    return room <= 0 ? 0 : room < most ? room : most;
}
