/* mod_bank_verify.c: password verifications bounded per process (BankPasswordVerifyConcurrency)
 * and per server (BankPasswordVerifyServerConcurrency, docs/configuration.md), run on a few
 * threads of their own. */
#ifndef MOD_BANK_VERIFY_H
#define MOD_BANK_VERIFY_H

#include <httpd.h>
#include <http_config.h>
#include "bank_sign_in.h"

typedef struct bank_verifier_s bank_verifier_t;

/* A bound of the configuration (made when httpd reads it): at most concurrency verifications
 * at once in each process, at most waiting more queued behind them (-1: the default, from
 * the MPM's threads). Its threads start in each child (bank_verify_child_init). */
bank_verifier_t *bank_verifier_new(apr_pool_t *pconf, int concurrency, int waiting);
/* The bound of sections that set none: one per process, as many verifications as CPUs. */
bank_verifier_t *bank_verifier_default(void);
/* Starts the threads of every bound in this child; they stop when pchild goes. */
void bank_verify_child_init(apr_pool_t *pchild, server_rec *s);
/* A bank_sign_in_runner_fn (bank_sign_in.h): runs the job on one of v's threads and returns
 * 0 once it has run; 1 at once if v already has its concurrency running and its waiting
 * queued, or 1 after bank_verify_max_wait() if it had not started computing by then. A thread
 * that starts a job computes it together with the first job of its kind queued behind it, on
 * the same slot of the server's bound, when that one would wait otherwise (no slot or no
 * thread free for it). */
int bank_verify_run(void *v, const bank_sign_in_job_t *job);
/* 1 if v has room for one more verification now (bank_verify_run may still refuse: others
 * may take it first), 0 if its concurrency runs and its waiting are queued. */
int bank_verify_has_room(void *v);
/* BankPasswordVerifyServerConcurrency (mod_bank_directives.c checks it): 0 (off), or 1 to
 * BANK_VERIFY_SLOTS_MAX verifications computing at once in all processes together. */
void bank_verify_set_server_slots(apr_pool_t *pconf, int slots);
#define BANK_VERIFY_SLOTS_MAX 256
/* Makes the server's semaphore (after the configuration is read; removed with pconf). */
void bank_verify_post_config(apr_pool_t *pconf, server_rec *s);
/* BankPasswordVerifyMaxWait (mod_bank_directives.c checks it): the longest a sign-in waits for
 * its verification to start (its turn, then a slot of the server's bound) before it is
 * refused with 503, in ms, BANK_VERIFY_MAX_WAIT_DEFAULT unless set. */
#define BANK_VERIFY_MAX_WAIT_DEFAULT 1000 /* BankPasswordVerifyMaxWait, milliseconds */
#define BANK_VERIFY_MAX_WAIT_MAX 60000
void bank_verify_set_max_wait(apr_pool_t *pconf, int ms);
apr_interval_time_t bank_verify_max_wait(void);

#endif
