/* mod_bank_db.c: mod_bank's statements handed to mod_dbd at config time, and mod_dbd's pool
 * as the core's connection source (bank_db_source.h): a pooled connection per request, whose
 * session set-up and recovery the core's data layer does. */
#ifndef MOD_BANK_DB_H
#define MOD_BANK_DB_H

#include <httpd.h>
#include "bank_db.h"

/* A pooled connection for this request, or NULL after logging why (the caller answers 503
 * through bank_error_db, mod_bank_http.h). */
bank_db_t *bank_db(request_rec *r);
/* A connection of the same pool for part of a request only: given back to the pool by
 * bank_db_give_back (or when the request ends), so that a request that then waits (sign-in's
 * password verification) holds none meanwhile. *lease is NULL when none could be had (then
 * NULL is returned, logged as for bank_db). */
bank_db_t *bank_db_take(request_rec *r, apr_pool_t **lease);
/* A pooled connection of server s for work outside any request (the push sender), given
 * back when *lease (a child of parent) is destroyed (bank_db_give_back). NULL when none could
 * be had (mod_dbd logged why), or quietly while bank_db_background_ready says 0. */
bank_db_t *bank_db_background(server_rec *s, apr_pool_t *parent, apr_pool_t **lease);
/* 1 once mod_dbd has made this process's pools (its child_init has run). */
int bank_db_background_ready(void);
/* Gives a taken connection back; the bank_db_t from it must not be used again. */
void bank_db_give_back(apr_pool_t **lease);
/* 1 if r holds a connection of the pool now (bank_db, or a lease not given back): it must
 * not then wait for anything that may itself be waiting for a connection. */
int bank_db_held(request_rec *r);
/* What a failed bank_db_* call means for the client, after logging it with what: 1 if it is
 * worth retrying (busy, unreachable, connection lost: 503), 0 for an error of ours (500).
 * Ends a transaction left open. db may be NULL (no connection: 1). */
int bank_db_failed(request_rec *r, bank_db_t *db, bank_db_rc rc, const char *what);
/* Prepares every statement of bank_statements for each server at config time. */
int bank_db_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s);
void bank_db_retrieve_optional(void);
/* The database drivers of the servers, as the last post_config found them ("none": none). */
const char *bank_db_drivers(void);
/* BankDatabaseTimeout (server-wide): how long one statement may wait for PostgreSQL. The
 * configuration is read again on every restart and may no longer set it: the default then. */
#define BANK_DB_TIMEOUT_DEFAULT 5 /* BankDatabaseTimeout, seconds */
void bank_db_set_timeout(apr_pool_t *pconf, apr_interval_time_t timeout);
/* Each child process: the statement guard (bank_db_guard.h) that bounds waits on PostgreSQL. */
void bank_db_child_init(apr_pool_t *pchild, server_rec *s);
/* Writes take turns across the server's processes (the "bank-webhook" mutex, docs/api.md):
 * the payment notices' group commits, and on SQLite the push sender's writes, which would
 * otherwise meet the notices' commits in SQLite's one write lock and make them wait in its
 * busy handler's sleeps. The mutex type (pre_config), the mutex (post_config), each
 * process's handle (child_init). */
int bank_db_turn_pre_config(apr_pool_t *pconf);
int bank_db_turn_post_config(apr_pool_t *pconf, server_rec *s);
void bank_db_turn_child_init(apr_pool_t *pchild, server_rec *s);
/* Waits up to max for the turn: APR_SUCCESS when taken (give it back with bank_db_turn_give
 * at once after the write), APR_ENOLOCK when this process has no mutex, else why not;
 * *waited says how long it waited. */
apr_status_t bank_db_turn_take(apr_interval_time_t max, apr_interval_time_t *waited);
void bank_db_turn_give(void);
/* Registers mod_bank on mod_dbd's post_connect hook (each new connection described for the
 * data layer, its session set up). */
void bank_db_register_hooks(void);

#endif
