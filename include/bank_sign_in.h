/* Sign-in as a rule of the core (docs/api.md, POST /auth/sign_in): the throttle per
 * (lower-cased e-mail, client IP) and the budget of the client IP whatever the e-mail,
 * password verification with no timing oracle, and a new token, the device and the cleared
 * throttle in one transaction. At most `attempts` answers per window say "wrong", however
 * many requests run at once, on any number of servers.
 * Returns a verdict for the caller to answer; needs only a database handle. No httpd. */
#ifndef BANK_SIGN_IN_H
#define BANK_SIGN_IN_H

#include <apr_pools.h>
#include <apr_time.h>
#include "bank_db.h"
#include "bank_store.h"
#include "bank_throttle.h"
#include "bank_metrics.h"

/* Tokens issued by sign-in may do everything; narrower ones come from bankctl token issue. */
#define BANK_SIGN_IN_ABILITIES "[\"*\"]"

/* One password verification, as the host's runner gets it: one(arg) computes it alone;
 * two(arg, other) computes it together with another job of the same kind (both in much less
 * than twice the time of one, bank_password_verify_two). kind NULL: never computed with
 * another. */
typedef struct {
    void (*one)(void *arg);
    void (*two)(void *arg, void *other);
    const char *kind;
    void *arg;
} bank_sign_in_job_t;

/* Runs the job to completion, on this thread or another, alone or with another job of its
 * kind, and returns 0; or returns non-zero without running it when the host has no room for
 * one more password verification now (mod_bank_verify.c bounds them per process). */
typedef int (*bank_sign_in_runner_fn)(void *baton, const bank_sign_in_job_t *job);

typedef struct {
    const char *email; /* as sent */
    const char *password;
    const char *device;
    const char *ip;
    int attempts;       /* failures allowed per window (BankSignInThrottle) */
    apr_int64_t window; /* seconds */
    int addr_attempts;  /* failures of the IP, any e-mail (BankSignInAddressThrottle) */
    apr_int64_t addr_window;
    int account_attempts; /* failures of the e-mail, any IP (BankSignInAccountThrottle) */
    apr_int64_t account_window;
    apr_int64_t lifetime; /* of the token, seconds (BankTokenLifetime) */
    int max_devices;      /* the customer's devices kept (BankMaxDevices); 0: no bound */
    apr_time_t now;
    bank_metrics_t *metrics;    /* password verifications are counted there; NULL: not counted */
    bank_sign_in_runner_fn run; /* NULL: verify on the calling thread */
    void *run_baton;
    /* Optional (both or neither): the host gives the database connection back before the
     * password is verified, and takes one again after (NULL: none to be had), so that sign-ins
     * waiting for a verification hold no connection. NULL: the one given is kept. */
    void (*give_back)(void *baton);
    bank_db_t *(*take)(void *baton);
    void *db_baton;
} bank_sign_in_t;

typedef enum {
    BANK_SIGN_IN_OK,        /* token issued */
    BANK_SIGN_IN_THROTTLED, /* the limit was reached already: not verified, not counted */
    BANK_SIGN_IN_REFUSED,   /* wrong e-mail or password, counted within the limit */
    BANK_SIGN_IN_OVER,      /* wrong, counted beyond the limit */
    BANK_SIGN_IN_FLOODED,   /* right password, but the limit was reached meanwhile (failures
                               counted by requests at the same moment): nothing issued */
    BANK_SIGN_IN_ADDRESS,   /* the client IP's budget is spent (right or wrong, not verified
                               or nothing issued); `address` says more */
    BANK_SIGN_IN_ACCOUNT,   /* the e-mail's budget across every address is spent (the same);
                               `account` says more */
    BANK_SIGN_IN_BUSY       /* no room to verify a password now (run refused): nothing
                               verified, nothing counted */
} bank_sign_in_verdict;

typedef struct {
    bank_sign_in_verdict verdict;
    const char *why;          /* REFUSED, OVER: "unknown e-mail" or "wrong password" */
    apr_int64_t failures;     /* the count that decided it */
    int remaining;            /* REFUSED: failures left in the window, the smallest of the
                                 e-mail and IP's, the address's and the account's */
    int limit;                /* THROTTLED, OVER, FLOODED, ADDRESS, ACCOUNT: the limit reached;
                                 REFUSED: the limit of the budget `remaining` is of */
    apr_int64_t retry_after;  /* THROTTLED, OVER, FLOODED, ADDRESS, ACCOUNT: seconds, 1 to the
                                 window */
    bank_count_t address;     /* ADDRESS: the IP's counter (an IPv6 address's /64) */
    bank_count_t account;     /* ACCOUNT: the e-mail's counter, every address together */
    bank_customer_t customer; /* OK */
    const char *token;        /* OK: the plaintext token, its id and expiry */
    const char *token_id;
    const char *expires;
    bank_db_t *db; /* the connection used last (NULL: none could be taken again) */
} bank_sign_in_result_t;

bank_db_rc bank_sign_in(bank_db_t *db, const bank_sign_in_t *in, bank_sign_in_result_t *out);
/* The next sign-in samples the stored hashes again; the dummy is the default until then. */
void bank_sign_in_forget_dummy(void);
/* BankPasswordDummyRefresh: seconds between two samples in a process (default
 * BANK_PW_DUMMY_REFRESH), until pconf goes. */
void bank_sign_in_set_dummy_refresh(apr_pool_t *pconf, int seconds);

/* The defaults of the host's verification bound (BankPasswordVerifyConcurrency N [WAITING])
 * for a process of `threads` request threads on `cpus` CPUs: N = the CPUs, at most half the
 * threads (at least 1); WAITING = BANK_SIGN_IN_WAIT_FACTOR x N, at most what leaves half the
 * threads free to refuse at once (at least 0). */
#define BANK_SIGN_IN_WAIT_FACTOR 16
int bank_sign_in_default_concurrency(int cpus, int threads);
int bank_sign_in_default_waiting(int concurrency, int threads);

#endif
