/* BVN onboarding (bank_onboard.h): the state, the identity record, and the account opened
 * once, whatever concurrent requests of the same customer do. The BVN is never in a failure
 * text (those go to logs). */
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "bank_account.h"
#include "bank_log.h"
#include "bank_nuban.h"
#include "bank_onboard.h"
#include "bank_time.h"
#include "bank_uuid.h"

/* The customer's mismatch counter (BankBvnThrottle), as of now. */
static bank_counter_t counter_of(const bank_onboard_t *st)
{
    bank_counter_t c = {BANK_COUNTS_SHARED, "bvn",      st->customer_id,
                        st->attempts,       st->window, apr_time_now()};
    return c;
}

bank_db_rc bank_onboard_state(bank_db_t *db, bank_onboard_t *st)
{
    bank_counter_t c = counter_of(st);
    bank_onboard_row_t row;
    /* One statement: the state, and the counter and record the rule needs next (a verified
     * customer's repeat is this one round trip); while the customer has no BVN, a second
     * reads which other customer holds it. */
    bank_db_rc rc = bank_store_onboard_read(db, st->customer_id, st->bvn, c.scope,
                                            bank_counter_cutoff(db, &c), &row);

    st->customer = row.customer;
    st->account = row.account; /* all zero (id NULL) when the customer has no account */
    st->seen_count = row.count;
    st->seen_record = row.record;
    st->owner = NULL;
    if (rc == BANK_DB_NOT_FOUND) {
        st->verdict = BANK_ONBOARD_NO_CUSTOMER;
        return BANK_DB_OK;
    }
    if (rc != BANK_DB_OK) {
        return rc;
    }
    if (st->customer.bvn) {
        st->verdict = strcmp(st->customer.bvn, st->bvn) != 0 ? BANK_ONBOARD_OTHER
                      : st->account.id                       ? BANK_ONBOARD_DONE
                                                             : BANK_ONBOARD_NO_ACCOUNT;
        return BANK_DB_OK;
    }
    st->owner = row.owner;
    st->verdict = row.owner ? BANK_ONBOARD_TAKEN : BANK_ONBOARD_OPEN;
    return BANK_DB_OK;
}

/* The identity record must know the BVN, with this date of birth and the customer's names. */
static bank_db_rc check_record(bank_db_t *db, bank_onboard_t *st, const char *dob,
                               const char **account_name)
{
    apr_pool_t *p = bank_db_pool(db);
    const bank_bvn_record_t rec = st->seen_record; /* read with the state */
    bank_db_rc rc = rec.bvn ? BANK_DB_OK : BANK_DB_NOT_FOUND;

    /* A provider is asked for a new verification; a repeat, or a BVN another customer was
     * verified with, is judged by what was kept then (docs/identity.md): no second call. */
    if (st->provider && (rc == BANK_DB_OK || rc == BANK_DB_NOT_FOUND) &&
        (st->verdict == BANK_ONBOARD_OPEN || rc == BANK_DB_NOT_FOUND)) {
        const char *first = NULL, *last = NULL;
        st->record =
            st->provider->ask(st->provider->baton, st->bvn, dob, &st->customer, &first, &last);
        if (st->record == BANK_RECORD_OK) {
            st->kept.bvn = st->bvn;
            st->kept.first_name = first;
            st->kept.last_name = last;
            st->kept.date_of_birth = dob;
            *account_name = bank_account_name(p, first, last);
        }
        return BANK_DB_OK;
    }
    if (st->provider && st->provider->hold && st->verdict == BANK_ONBOARD_TAKEN) {
        st->provider->hold(st->provider->baton);
    }
    if (rc == BANK_DB_NOT_FOUND) {
        st->record = BANK_RECORD_UNKNOWN;
    } else if (rc != BANK_DB_OK) {
        return rc;
    } else if (!rec.date_of_birth || strcmp(rec.date_of_birth, dob) != 0) {
        st->record = BANK_RECORD_DOB;
    } else if (!bank_names_match(p, rec.first_name, rec.last_name, st->customer.first_name,
                                 st->customer.last_name)) {
        st->record = BANK_RECORD_NAMES;
    } else {
        *account_name = bank_account_name(p, rec.first_name, rec.last_name);
    }
    return BANK_DB_OK;
}

/* One attempt's work inside the transaction. */
typedef struct {
    bank_onboard_t *st;
    const bank_counter_t *counter;
    const bank_onboard_bank_t *bank;
    const char *account_name;
    const char *step;           /* the write being done: "referral" is the one worth another try */
    const char *referral, *now; /* what the customer's row was given */
} attempt_t;

static const char step_referral[] = "referral";

/* The writes of a first verification, in one transaction. First the customer's mismatch count
 * is taken (cleared, and what it held read): if the limit was reached meanwhile (wrong
 * attempts at the same moment) nothing is written and the count stays; on PostgreSQL a
 * mismatch counted after the take waits for this commit, so none slips between. Nothing is
 * read again: the customer's row changes only while it has no BVN, and a BVN is held by one
 * customer (a unique key), so a concurrent request that came first makes a write fail, and
 * the state read after the rollback says who won. The account as stored goes to
 * st->account. */
static bank_db_rc attempt(bank_db_t *db, void *baton)
{
    attempt_t *a = baton;
    apr_pool_t *p = bank_db_pool(db);
    const char *now = bank_time_iso(p, apr_time_now()), *referral = bank_referral_code(p);
    bank_account_t acct;
    apr_int64_t serial = 0;
    bank_db_rc rc;
    int changed = 0;

    a->step = "throttle clear";
    if ((rc = bank_counter_take(db, a->counter, &a->st->count)) != BANK_DB_OK) {
        return rc;
    }
    if ((a->st->throttled = a->st->count.over)) {
        return BANK_DB_ROLLBACK;
    }
    memset(&acct, 0, sizeof(acct));
    acct.id = bank_uuid4(p);
    acct.bank_account_id = bank_uuid4(p);
    a->step = "random";
    if (!referral || !acct.id || !acct.bank_account_id) {
        return bank_db_fail(db, "no randomness for the referral code or ids");
    }
    a->referral = referral;
    a->now = now;
    a->step = step_referral;
    if ((rc = bank_store_customer_set_bvn(db, a->st->customer_id, a->st->bvn, referral, now,
                                          &changed)) != BANK_DB_OK) {
        return rc;
    }
    if (changed != 1) {
        return bank_db_fail(db, "the customer changed meanwhile");
    }
    a->step = "serial";
    if ((rc = bank_store_account_serial_next(db, now, &serial)) != BANK_DB_OK) {
        return rc;
    }
    if (!(acct.account_number = bank_nuban_account(p, a->bank->code, serial))) {
        return bank_db_fail(db, "no account number: the serial is outside 1..999999999");
    }
    a->step = "account";
    acct.customer_id = a->st->customer_id;
    acct.bank_name = a->bank->name;
    acct.account_name = a->account_name;
    acct.created_at = acct.updated_at = now;
    if ((rc = bank_store_account_insert(db, &acct, &a->st->account)) != BANK_DB_OK ||
        !a->st->kept.bvn) {
        return rc;
    }
    /* What the provider confirmed, so a repeat is answered without another paid call. */
    a->step = "record";
    return bank_store_bvn_record_keep(db, &a->st->kept, a->st->provider->source, now);
}

/* A step that failed on the database, logged where it failed (the customer, never the BVN);
 * its code returned. */
static bank_db_rc failed(bank_db_t *db, const bank_onboard_t *st, bank_db_rc rc, const char *step)
{
    bank_log(bank_db_where(db), BANK_LOG_MARK, BANK_LOG_ERR,
             BANKLOGNO(0608) "BVN onboarding of customer %s: %s failed: %s", st->customer_id, step,
             bank_db_error(db) ? bank_db_error(db) : "no connection");
    return rc;
}

/* The customer as the committed writes left them: their row as read before, with the BVN,
 * the referral code and the time written; verified, with the account as stored. */
static void opened(bank_onboard_t *st, const attempt_t *a)
{
    st->customer.bvn = st->bvn;
    st->customer.referral_code = a->referral;
    st->customer.updated_at = a->now;
    st->verdict = BANK_ONBOARD_DONE;
    st->opened = 1;
}

/* Opens the account, or finds that another request did. */
static bank_db_rc open_account(bank_db_t *db, bank_onboard_t *st, const bank_counter_t *counter,
                               const bank_onboard_bank_t *bank, const char *account_name)
{
    attempt_t a = {st, counter, bank, account_name, NULL, NULL, NULL};
    bank_db_rc rc;

    st->opening = 1;
    for (;;) {
        const char *err;
        a.step = "begin";
        if ((rc = bank_db_transaction(db, attempt, &a)) == BANK_DB_OK) {
            if (!st->throttled) {
                opened(st, &a);
            }
            return BANK_DB_OK;
        }
        /* Rolled back. A unique key may have lost a race that the state now shows; a busy
         * database lost none (and a commit that waited too long for a standby shows the
         * account, not yet confirmed: the client hears 503 and its retry finds it). */
        err = bank_db_error(db);
        if (rc != BANK_DB_BUSY && bank_onboard_state(db, st) == BANK_DB_OK &&
            st->verdict != BANK_ONBOARD_OPEN) {
            return BANK_DB_OK;
        }
        if (a.step != step_referral || st->retries + 1 == BANK_ONBOARD_ATTEMPTS) {
            bank_db_fail(db, err);
            return failed(
                db, st, rc,
                apr_pstrcat(bank_db_pool(db), "opening the account (", a.step, ")", (char *)NULL));
        }
        st->retries++;
    }
}

/* The record matched: a success clears the customer's count, a taken BVN leaves it; either
 * way, if the limit was reached meanwhile (wrong attempts at the same moment), throttled: a
 * right answer hidden in a flood of wrong ones is not revealed. A free BVN's count is taken
 * in the account's transaction (attempt). */
static bank_db_rc settle_count(bank_db_t *db, bank_onboard_t *st, const bank_counter_t *c)
{
    bank_db_rc rc;

    /* A verified customer sending their BVN again with no failure counted: nothing to clear,
     * and the read path stays a read (no write transaction, no commit to wait for). */
    st->throttled = 0;
    if ((st->verdict == BANK_ONBOARD_DONE && st->count.failures == 0) ||
        st->verdict == BANK_ONBOARD_OPEN) {
        return BANK_DB_OK;
    }
    rc = st->verdict == BANK_ONBOARD_TAKEN ? bank_counter_check(db, c, &st->count)
                                           : bank_counter_clear(db, c, &st->count);
    st->throttled = rc == BANK_DB_OK && st->count.over;
    return rc;
}

bank_db_rc bank_onboard(bank_db_t *db, bank_onboard_t *st, const char *dob,
                        const bank_onboard_bank_t *bank)
{
    const char *account_name = NULL;
    bank_counter_t counter = counter_of(st);
    bank_db_rc rc;

    st->record = BANK_RECORD_OK;
    memset(&st->kept, 0, sizeof(st->kept));
    st->throttled = 0;
    st->opening = st->opened = st->retries = 0;
    if ((rc = bank_onboard_state(db, st)) != BANK_DB_OK) {
        return failed(db, st, rc, "customer lookup");
    }
    /* A customer verified with another BVN is told so before the record is looked at: the
     * answer is about their own state, and tells nothing about the BVN they sent. */
    if (st->verdict == BANK_ONBOARD_NO_CUSTOMER || st->verdict == BANK_ONBOARD_OTHER) {
        return BANK_DB_OK;
    }
    /* Past BankBvnThrottle every attempt is refused, right or wrong (the count was read
     * with the state). */
    bank_counter_judge(&counter, &st->seen_count, &st->count);
    if (st->count.over) {
        st->throttled = 1;
        return BANK_DB_OK;
    }
    if ((rc = check_record(db, st, dob, &account_name)) != BANK_DB_OK) {
        return failed(db, st, rc, "BVN record lookup");
    }
    if (st->record == BANK_RECORD_UNAVAILABLE) {
        return BANK_DB_OK; /* the provider could not say: nothing counted */
    }
    if (st->record != BANK_RECORD_OK) {
        if ((rc = bank_counter_fail(db, &counter, &st->count)) != BANK_DB_OK) {
            return failed(db, st, rc, "throttle count");
        }
        st->throttled = st->count.over;
        return BANK_DB_OK;
    }
    if ((rc = settle_count(db, st, &counter)) != BANK_DB_OK) {
        return failed(db, st, rc, "throttle clear");
    }
    if (st->throttled) {
        return BANK_DB_OK;
    }
    return st->verdict == BANK_ONBOARD_OPEN ? open_account(db, st, &counter, bank, account_name)
                                            : BANK_DB_OK;
}
