/* Failure counters in the database (table throttle_counts), shared by every httpd process
 * and server: BankBvnThrottle per customer (bvn.c) and BankSignInAddressThrottle per client
 * IP (sign_in.c). Each failure is one atomic upsert that returns the new count, so however
 * many requests run at once, at most ATTEMPTS of them per window are answered as failures;
 * the rest get 429. */
#include <apr_strings.h>
#include "mod_bank.h"
#include "bank_util.h"

APLOG_USE_MODULE(bank);

void bank_throttle_init(bank_throttle_t *t, request_rec *r, bank_db_t *db, const char *scope,
                        const char *subject, const char *what, int attempts, apr_int64_t window)
{
    t->r = r;
    t->db = db;
    t->scope = scope;
    t->subject = subject;
    t->what = what;
    t->attempts = attempts;
    t->window = window;
    t->now = apr_time_now();
    t->cutoff = bank_time_iso(r->pool, t->now - apr_time_from_sec(window));
}

const char *bank_throttle_prune_cutoff(apr_pool_t *p, apr_time_t now, apr_int64_t window)
{
    apr_time_t keep = apr_time_from_sec(window);

    /* Locations with other windows share the table: keep rows at least a day. */
    return bank_time_iso(p, now - (keep > BANK_THROTTLE_KEEP ? keep : BANK_THROTTLE_KEEP));
}

static int over(bank_throttle_t *t, apr_int64_t failures, const char *window_start)
{
    ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, t->r,
                  BANKLOGNO(0901) "%s throttled (%s %s): failure %" APR_INT64_T_FMT
                                  " in the window, limit %d per %" APR_INT64_T_FMT "s",
                  t->what, t->scope, t->subject, failures, t->attempts, t->window);
    return bank_error_throttled(t->r, t->attempts, t->window, window_start, t->what);
}

int bank_throttle_check(bank_throttle_t *t)
{
    const char *args[] = {t->scope, t->subject, t->cutoff};
    bank_rows_t rows;
    bank_db_rc rc;
    apr_int64_t failures;

    if ((rc = bank_db_select(t->db, "bank_throttle_get", &rows, BANK_NARGS(args), args)) !=
        BANK_DB_OK) {
        return bank_error_db(t->r, t->db, rc, "throttle lookup");
    }
    failures = rows.nrows > 0 ? apr_atoi64(bank_rows_get(&rows, 0, 0)) : 0;
    return failures < t->attempts ? OK : over(t, failures, bank_rows_get(&rows, 0, 1));
}

/* Best effort: rows whose window ended long ago go, so failures that are never followed by
 * a success (random e-mails, abandoned customers) do not pile up. */
static void prune(bank_throttle_t *t)
{
    const char *args[] = {t->scope, bank_throttle_prune_cutoff(t->r->pool, t->now, t->window)};

    if (bank_db_exec(t->db, "bank_throttle_prune", NULL, BANK_NARGS(args), args) != BANK_DB_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, t->r,
                      BANKLOGNO(0902) "could not prune %s throttle rows: %s", t->scope,
                      t->db->error);
    }
}

int bank_throttle_fail(bank_throttle_t *t, int *remaining)
{
    const char *now = bank_time_iso(t->r->pool, t->now);
    const char *args[] = {t->scope, t->subject, now, t->cutoff, t->cutoff};
    bank_rows_t rows;
    bank_db_rc rc;
    apr_int64_t failures;

    if ((rc = bank_db_select(t->db, "bank_throttle_fail", &rows, BANK_NARGS(args), args)) !=
        BANK_DB_OK) {
        return bank_error_db(t->r, t->db, rc, "throttle count");
    }
    prune(t);
    failures = apr_atoi64(bank_rows_get(&rows, 0, 0));
    if (failures > t->attempts) {
        return over(t, failures, bank_rows_get(&rows, 0, 1));
    }
    *remaining = t->attempts - (int)failures;
    return OK;
}

/* The DELETE and the read of what it removed commit together, or not at all when the limit
 * was reached: the count then stays. On PostgreSQL the DELETE waits for a failure being
 * counted on the row, and a failure counted after it waits for this commit. */
int bank_throttle_clear(bank_throttle_t *t)
{
    const char *args[] = {t->scope, t->subject, t->cutoff};
    bank_rows_t rows;
    bank_db_rc rc;
    apr_int64_t failures;

    if ((rc = bank_db_begin(t->db)) != BANK_DB_OK ||
        (rc = bank_db_select(t->db, "bank_throttle_clear", &rows, BANK_NARGS(args), args)) !=
            BANK_DB_OK) {
        return bank_error_db(t->r, t->db, rc, "throttle clear");
    }
    failures = rows.nrows > 0 ? apr_atoi64(bank_rows_get(&rows, 0, 0)) : 0;
    if (failures >= t->attempts) {
        bank_db_end(t->db, 0);
        return over(t, failures, bank_rows_get(&rows, 0, 1));
    }
    if ((rc = bank_db_end(t->db, 1)) != BANK_DB_OK) {
        return bank_error_db(t->r, t->db, rc, "throttle clear commit");
    }
    return OK;
}
