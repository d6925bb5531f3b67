/* Failure counters shared by every httpd process and server: one per key, at most
 * `attempts` failures answered as such per window of `window` seconds. Each failure is one
 * atomic upsert that returns the new count, so however many requests run at once, the rest
 * are told to wait. Used by BankSignInThrottle (per e-mail and IP, table sign_in_attempts),
 * BankSignInAddressThrottle (per client IP) and BankBvnThrottle (per customer), both in
 * table throttle_counts. No httpd. */
#ifndef BANK_THROTTLE_H
#define BANK_THROTTLE_H

#include <apr_pools.h>
#include <apr_time.h>
#include "bank_db.h"
#include "bank_store.h"

/* Rows expired for at least this long (and for the window) are pruned. */
#define BANK_THROTTLE_KEEP apr_time_from_sec(86400)

typedef struct {
    bank_counts_table table;
    const char *scope;   /* SHARED: "bvn", "address", "account"; SIGN_IN: the folded e-mail */
    const char *subject; /* SHARED: customer id, client address (bank_throttle_address), folded
                            e-mail; SIGN_IN: the client address */
    int attempts;
    apr_int64_t window; /* seconds */
    apr_time_t now;
} bank_counter_t;

/* What a counter says. */
typedef struct {
    int over;                /* the limit is reached: answer 429 */
    apr_int64_t failures;    /* of the current window */
    int remaining;           /* failures still answered as such (fail) */
    apr_int64_t retry_after; /* over: seconds left of the window */
} bank_count_t;

/* The failures of the current window; over when they reach the limit. Counts nothing. */
bank_db_rc bank_counter_check(bank_db_t *db, const bank_counter_t *c, bank_count_t *out);
/* The same judgement on a row read elsewhere (in a statement that reads more with it). */
void bank_counter_judge(const bank_counter_t *c, const bank_throttle_t *t, bank_count_t *out);
/* A window that started at or before this has expired (for such a statement). */
const char *bank_counter_cutoff(bank_db_t *db, const bank_counter_t *c);
/* Counts one failure (and prunes long-expired rows of the table, or of the scope); over
 * beyond the limit. */
bank_db_rc bank_counter_fail(bank_db_t *db, const bank_counter_t *c, bank_count_t *out);
/* Inside the caller's transaction: deletes the counter and reads what it held; over when
 * the limit was reached (the caller then rolls back, so the count stays). */
bank_db_rc bank_counter_take(bank_db_t *db, const bank_counter_t *c, bank_count_t *out);
/* Best effort: drops the rows (of the scope) expired long ago; a failure is logged here. */
bank_db_rc bank_counter_prune(bank_db_t *db, const bank_counter_t *c);
/* A success: deletes the counter and reads what it held, in a transaction of its own (call
 * it outside one); when the limit was reached meanwhile (failures at the same moment) the
 * delete is rolled back and the answer is over: the success must not be revealed. */
bank_db_rc bank_counter_clear(bank_db_t *db, const bank_counter_t *c, bank_count_t *out);

/* The client address a budget counts: an IPv4 address as it is (also one written as an
 * IPv4-mapped IPv6 address), an IPv6 address by its /64 ("2001:db8:1:2::/64": one subscriber's
 * network, whose 2^64 addresses one client may rotate through); anything else as it is. */
const char *bank_throttle_address(apr_pool_t *p, const char *ip);

/* What is left of a window that started at window_start (as the database gives it) at
 * `now`: whole seconds rounded up, from 1 to the window (the window may have been started
 * by a request that began after this one, or on a server whose clock is ahead). */
apr_int64_t bank_throttle_retry_after(const char *window_start, apr_int64_t window, apr_time_t now);
/* Rows whose window started before this have expired for BANK_THROTTLE_KEEP and the window:
 * Locations with other windows share the tables. */
const char *bank_throttle_prune_before(apr_pool_t *p, apr_time_t now, apr_int64_t window);

#endif
