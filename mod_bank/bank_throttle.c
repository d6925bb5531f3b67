/* Failure counters (bank_throttle.h). */
#include <string.h>
#include <arpa/inet.h>
#include <apr_strings.h>
#include "bank_log.h"
#include "bank_store.h"
#include "bank_throttle.h"
#include "bank_time.h"

apr_int64_t bank_throttle_retry_after(const char *window_start, apr_int64_t window, apr_time_t now)
{
    apr_time_t start;
    apr_int64_t wait;

    if (bank_time_parse(window_start, &start) != 0) {
        start = now;
    }
    wait = (start + apr_time_from_sec(window) - now + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC;
    return wait < 1 ? 1 : wait > window ? window : wait;
}

const char *bank_throttle_prune_before(apr_pool_t *p, apr_time_t now, apr_int64_t window)
{
    apr_time_t keep = apr_time_from_sec(window);
    return bank_time_iso(p, now - (keep > BANK_THROTTLE_KEEP ? keep : BANK_THROTTLE_KEEP));
}

const char *bank_counter_cutoff(bank_db_t *db, const bank_counter_t *c)
{
    return bank_time_iso(bank_db_pool(db), c->now - apr_time_from_sec(c->window));
}

/* Fills out from a row; over when failures reach `limit`. */
static bank_db_rc judge(const bank_counter_t *c, const bank_throttle_t *t, apr_int64_t limit,
                        bank_count_t *out)
{
    out->failures = t->failures;
    out->over = t->failures >= limit;
    out->remaining = out->over ? 0 : c->attempts - (int)t->failures;
    if (out->over) {
        out->retry_after = bank_throttle_retry_after(t->window_start, c->window, apr_time_now());
    }
    return BANK_DB_OK;
}

void bank_counter_judge(const bank_counter_t *c, const bank_throttle_t *t, bank_count_t *out)
{
    memset(out, 0, sizeof(*out));
    judge(c, t, c->attempts, out);
}

/* The count as `read` gives it (bank_store_count_get or _clear: the same arguments), judged. */
static bank_db_rc read_judged(bank_db_t *db, const bank_counter_t *c,
                              bank_db_rc (*read)(bank_db_t *, bank_counts_table, const char *,
                                                 const char *, const char *, bank_throttle_t *),
                              bank_count_t *out)
{
    bank_throttle_t t;
    bank_db_rc rc = read(db, c->table, c->scope, c->subject, bank_counter_cutoff(db, c), &t);

    memset(out, 0, sizeof(*out));
    return rc != BANK_DB_OK ? rc : judge(c, &t, c->attempts, out);
}

bank_db_rc bank_counter_check(bank_db_t *db, const bank_counter_t *c, bank_count_t *out)
{
    return read_judged(db, c, bank_store_count_get, out);
}

bank_db_rc bank_counter_fail(bank_db_t *db, const bank_counter_t *c, bank_count_t *out)
{
    apr_pool_t *p = bank_db_pool(db);
    bank_throttle_t t;
    bank_db_rc rc = bank_store_count_fail(db, c->table, c->scope, c->subject,
                                          bank_time_iso(p, c->now), bank_counter_cutoff(db, c), &t);

    memset(out, 0, sizeof(*out));
    if (rc != BANK_DB_OK) {
        return rc;
    }
    /* Best effort: failures never followed by a success (random e-mails, abandoned
     * customers) must not pile up. A failed prune is logged there and costs nothing else. */
    (void)bank_counter_prune(db, c);
    return judge(c, &t, (apr_int64_t)c->attempts + 1, out);
}

bank_db_rc bank_counter_prune(bank_db_t *db, const bank_counter_t *c)
{
    bank_db_rc rc = bank_store_count_prune(
        db, c->table, c->scope, bank_throttle_prune_before(bank_db_pool(db), c->now, c->window));

    if (rc != BANK_DB_OK) {
        /* The scope names a counter ("bvn", "address"), except sign-in's: an e-mail, not logged. */
        bank_log(bank_db_where(db), BANK_LOG_MARK, BANK_LOG_WARNING,
                 BANKLOGNO(0508) "could not prune %s throttle rows: %s",
                 c->table == BANK_COUNTS_SIGN_IN ? "sign-in" : c->scope,
                 bank_db_error(db) ? bank_db_error(db) : "failed");
    }
    return rc;
}

/* The DELETE and the read of what it removed commit together, or not at all when the limit
 * was reached: the count then stays. On PostgreSQL the DELETE waits for a failure being
 * counted on the row, and a failure counted after it waits for the commit. */
bank_db_rc bank_counter_take(bank_db_t *db, const bank_counter_t *c, bank_count_t *out)
{
    return read_judged(db, c, bank_store_count_clear, out);
}

typedef struct {
    const bank_counter_t *c;
    bank_count_t *out;
} clear_t;

static bank_db_rc clear_txn(bank_db_t *db, void *baton)
{
    clear_t *x = baton;
    bank_db_rc rc = bank_counter_take(db, x->c, x->out);
    return rc != BANK_DB_OK ? rc : x->out->over ? BANK_DB_ROLLBACK : BANK_DB_OK;
}

bank_db_rc bank_counter_clear(bank_db_t *db, const bank_counter_t *c, bank_count_t *out)
{
    clear_t x = {c, out};
    return bank_db_transaction(db, clear_txn, &x);
}

const char *bank_throttle_address(apr_pool_t *p, const char *ip)
{
    unsigned char a[16];
    char text[INET6_ADDRSTRLEN];
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    if (!ip || !strchr(ip, ':') || inet_pton(AF_INET6, ip, a) != 1) {
        return ip;
    }
    if (memcmp(a, mapped, sizeof(mapped)) == 0) {
        return inet_ntop(AF_INET, a + 12, text, sizeof(text)) ? apr_pstrdup(p, text) : ip;
    }
    memset(a + 8, 0, 8);
    if (!inet_ntop(AF_INET6, a, text, sizeof(text))) {
        return ip;
    }
    return apr_pstrcat(p, text, "/64", (char *)NULL);
}
