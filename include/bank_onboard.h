/* BVN onboarding as a rule of the core (docs/api.md, POST /onboarding/bvn): where a
 * customer stands with a BVN, the identity record's check, and the account opened in one
 * transaction with its referral-code retry. Returns a verdict for the caller to answer;
 * needs only a database handle. No httpd dependency. */
#ifndef BANK_ONBOARD_H
#define BANK_ONBOARD_H

#include <apr_pools.h>
#include "bank_db.h"
#include "bank_store.h"
#include "bank_throttle.h"

/* A new referral code is drawn this many times when the last one was taken. */
#define BANK_ONBOARD_ATTEMPTS 3

/* Where the customer stands with the BVN asked about. */
typedef enum {
    BANK_ONBOARD_OPEN,       /* not verified and the BVN is free: open the account */
    BANK_ONBOARD_DONE,       /* verified with this BVN; the account exists */
    BANK_ONBOARD_OTHER,      /* verified with another BVN */
    BANK_ONBOARD_TAKEN,      /* the BVN belongs to another customer */
    BANK_ONBOARD_NO_ACCOUNT, /* verified with this BVN but without an account: data to repair */
    BANK_ONBOARD_NO_CUSTOMER /* the token's customer no longer exists */
} bank_onboard_verdict;

/* What the identity record says about the BVN, the date of birth and the names. */
typedef enum {
    BANK_RECORD_OK,
    BANK_RECORD_UNKNOWN,    /* no record for the BVN */
    BANK_RECORD_DOB,        /* the date of birth differs */
    BANK_RECORD_NAMES,      /* the names are not the customer's */
    BANK_RECORD_UNAVAILABLE /* the identity provider could not say: nothing counted or written */
} bank_record_verdict;

/* An identity provider asked instead of the records table (docs/identity.md), for a new
 * verification, and for a BVN with no record. The caller's function: the core knows no
 * transport. It returns BANK_RECORD_OK with the names to keep (and to name the account
 * after), a mismatch verdict, or BANK_RECORD_UNAVAILABLE. */
typedef struct {
    bank_record_verdict (*ask)(void *baton, const char *bvn, const char *dob,
                               const bank_customer_t *customer, const char **first,
                               const char **last);
    void *baton;
    const char *source; /* kept with a match in bvn_records.source: "dojah", "prembly" */
    /* Called where ask would be for a BVN another customer holds, whose kept record is
     * judged here without a call: waits as long as a call would take, so the answer's time
     * does not tell that the BVN banks here. NULL: no wait. */
    void (*hold)(void *baton);
} bank_onboard_provider_t;

/* The bank the account is opened at (BankAccountBank, BankAccountBankCode). */
typedef struct {
    const char *name;
    const char *code;
} bank_onboard_bank_t;

typedef struct {
    /* in */
    const char *customer_id;
    const char *bvn;
    int attempts;       /* record mismatches allowed per window (BankBvnThrottle) */
    apr_int64_t window; /* seconds */
    const bank_onboard_provider_t *provider; /* NULL: the records table */
    /* out */
    bank_onboard_verdict verdict;
    bank_record_verdict record; /* BANK_RECORD_OK unless the record check refused */
    int throttled;              /* the customer's mismatches reached the limit: 429 */
    bank_count_t count;         /* the customer's counter (remaining after a mismatch) */
    bank_customer_t customer;   /* unless NO_CUSTOMER */
    bank_account_t account;     /* DONE */
    const char *owner;          /* TAKEN: who holds the BVN */
    int opening;                /* the BVN was free: an opening was tried */
    int opened;                 /* DONE: this call opened the account */
    int retries;                /* attempts that failed before the one that settled it */
    bank_bvn_record_t kept;     /* a provider's match, written with the account */
    /* read with the state, in its statement: the customer's counter row and the BVN's
     * record (bvn NULL: none) */
    bank_throttle_t seen_count;
    bank_bvn_record_t seen_record;
} bank_onboard_t;

/* Reads where the customer stands (verdict, customer, account), with the customer's counter
 * and the BVN's record, in one statement (a second for the BVN's holder while the customer
 * has no BVN), inside or outside a transaction. */
bank_db_rc bank_onboard_state(bank_db_t *db, bank_onboard_t *st);

/* The whole rule: the state; for a customer who is not gone or verified with another BVN,
 * the customer's mismatch counter (past the limit every attempt is refused, right or
 * wrong: st->throttled) and the identity record (st->record, the date of birth given as
 * YYYY-MM-DD; a mismatch is counted); a match clears the counter (a taken BVN leaves it),
 * throttled if the limit was reached meanwhile; for a BVN that is free, the clear and the
 * account opened in one transaction of writes only (a request that won meanwhile makes one of them
 * fail; the state read after the rollback says so), retried when a referral code was taken;
 * the answer is the customer as read with the writes applied, and the account as stored.
 * BANK_DB_OK with the settled verdict; a failure is logged here with its step (bank_log.h),
 * and its code returned. */
bank_db_rc bank_onboard(bank_db_t *db, bank_onboard_t *st, const char *dob,
                        const bank_onboard_bank_t *bank);

#endif
