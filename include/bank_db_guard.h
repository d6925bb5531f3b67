/* A bound on how long a thread waits for the database server to answer one statement.
 * PostgreSQL gives up a statement past its statement_timeout, but not every wait: a commit
 * waiting for a synchronous standby is not covered by it, and a server that stopped answering
 * (its processes stopped, its host frozen behind a live TCP peer) never answers at all. A
 * guard watches the statements under way, one thread per process: past a statement's cancel
 * time it asks the server to cancel it (the host's cancel function, on a detached thread of
 * its own, since it blocks as long as such a server does not answer), and past its cut time
 * it shuts the socket down, so the blocked call fails at once and the connection counts as
 * lost. No httpd dependency. */
#ifndef BANK_DB_GUARD_H
#define BANK_DB_GUARD_H

#include <apr_pools.h>
#include <apr_time.h>

typedef struct bank_db_guard_s bank_db_guard_t;

/* How the host cancels a statement: cancel(arg) asks the server (it may block), then
 * release(arg) frees what enter was given; release alone when no cancel was needed. One pair
 * per process (the last guard started sets it); NULL cancel: statements are only cut. */
typedef void (*bank_db_guard_fn)(void *arg);

/* Starts the guard's thread, which looks every tick for statements past their times; at most
 * slots statements are watched at once. Stops (the thread joined) when p is cleared; a cancel
 * still running then goes on by itself. NULL if the thread cannot be started. */
bank_db_guard_t *bank_db_guard_start(apr_pool_t *p, int slots, apr_interval_time_t tick,
                                     bank_db_guard_fn cancel, bank_db_guard_fn release);

/* Watches a statement on socket fd until bank_db_guard_leave: past cancel_at the guard cancels
 * it with arg (which the guard owns from now on; may be NULL), past cut_at it shuts fd down.
 * A ticket for leave, or -1 when every slot is taken (nothing watches it; arg released). */
int bank_db_guard_enter(bank_db_guard_t *g, int fd, apr_time_t cancel_at, apr_time_t cut_at,
                        void *arg);

/* What the guard did to a statement. */
typedef enum { BANK_GUARD_NONE = 0, BANK_GUARD_CANCELLED, BANK_GUARD_CUT } bank_db_guard_act;

/* Stops watching (arg released unless a cancel took it); what the guard did meanwhile. */
bank_db_guard_act bank_db_guard_leave(bank_db_guard_t *g, int ticket);

/* Statements cancelled and sockets shut down by this guard so far. */
void bank_db_guard_counts(bank_db_guard_t *g, unsigned long *cancelled, unsigned long *cut);

#endif
