/* Token uses waiting to be recorded (auth_access_tokens.last_used_at), per process. A request
 * whose token's last recorded use is a minute old notes the use here and goes on: no write
 * on its way. The host's writer (mod_bank_token_uses.c: a thread of each process) writes
 * what was noted every BANK_TOKEN_USES_INTERVAL, BANK_TOKEN_USES_MAX uses a statement, and
 * what is left when the process exits. A use is bookkeeping, not a rule: one that cannot be
 * written (the database gone, the set full) is dropped, and the next use a minute later
 * records it; one the database was too busy to take is tried again at the next write. No
 * httpd dependency; safe between threads. */
#ifndef BANK_TOKEN_USES_H
#define BANK_TOKEN_USES_H

#include <apr_pools.h>
#include <apr_time.h>
#include "bank_db.h"

#define BANK_TOKEN_USES_INTERVAL apr_time_from_sec(1)

typedef struct bank_token_uses_s bank_token_uses_t;

/* A set in p of at most max tokens' uses; NULL and *err on failure (no mutex or pool). */
bank_token_uses_t *bank_token_uses_create(apr_pool_t *p, int max, const char **err);
/* Token id (decimal) used at when (bank_time_iso): 1 if noted (a use of the same token noted
 * before and not yet taken is replaced when this one is later), 0 if the set was full. */
int bank_token_uses_note(bank_token_uses_t *u, const char *id, const char *when);
/* Uses noted and not yet taken. */
int bank_token_uses_pending(bank_token_uses_t *u);
/* Takes at most max noted uses, copied into p, in ascending order of id (so that writers of
 * different processes lock rows in one order, as bank_token_uses_write does): their count,
 * ids[i] used at times[i]. */
int bank_token_uses_take(bank_token_uses_t *u, apr_pool_t *p, int max, const char **ids,
                         const char **times);
/* A turn to take around each statement (SQLite's writes across processes), or NULL. */
typedef struct {
    int (*take)(void *baton); /* 1 if taken: then give is called */
    void (*give)(void *baton);
    void *baton;
} bank_token_uses_turn_t;
/* Writes every use noted until now through db (later notes wait for the next write),
 * BANK_TOKEN_USES_MAX a statement, each in the turn if given; *written: how many. Stops at
 * the first failure (its rc): the uses of that statement and after are noted again when
 * the database was busy (a lock, a timeout: BANK_DB_BUSY), for the next write; dropped
 * otherwise. One writer at a time per set. */
bank_db_rc bank_token_uses_write(bank_token_uses_t *u, bank_db_t *db, apr_pool_t *p,
                                 const bank_token_uses_turn_t *turn, int *written);

#endif
