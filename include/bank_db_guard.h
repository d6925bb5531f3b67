/* A bound on how long a thread waits for the database server to answer one statement.
 * PostgreSQL cancels a statement itself past its statement_timeout, but a server that stopped
 * answering (its processes stopped, its host frozen behind a live TCP peer) never does, and a
 * blocked libpq call waits forever. A guard watches the sockets of statements under way, one
 * thread per process: past a statement's deadline it shuts the socket down, so the blocked
 * call returns an error at once and the connection counts as lost. No httpd dependency. */
#ifndef BANK_DB_GUARD_H
#define BANK_DB_GUARD_H

#include <apr_pools.h>
#include <apr_time.h>

typedef struct bank_db_guard_s bank_db_guard_t;

/* Starts the guard's thread, which looks every tick for sockets past their deadline; at most
 * slots statements are watched at once. Stops (the thread joined) when p is cleared. NULL if
 * the thread cannot be started. */
bank_db_guard_t *bank_db_guard_start(apr_pool_t *p, int slots, apr_interval_time_t tick);

/* Watches socket fd until bank_db_guard_leave: past deadline, it is shut down for reading
 * and writing. A ticket for leave, or -1 when every slot is taken (then nothing watches it). */
int bank_db_guard_enter(bank_db_guard_t *g, int fd, apr_time_t deadline);

/* Stops watching; 1 if the guard shut the socket down meanwhile (the statement's error is
 * the guard's doing: the server did not answer in time), else 0. */
int bank_db_guard_leave(bank_db_guard_t *g, int ticket);

/* Sockets shut down by this guard so far. */
unsigned long bank_db_guard_cut(bank_db_guard_t *g);

#endif
