/* mod_dbd as mod_bank meets it: its optional functions, its records and the order of its hooks,
 * behind plain functions (mod_bank_dbd.c). The one glue file that reads mod_dbd's private
 * records or depends on how its hooks run; mod_bank_db.c (the connection source) and
 * mod_bank_identity.c (the start-up check) call it. apr-util's drivers have their own room in
 * the core: bank_db_driver.h.
 *
 * Seen with Debian 12's apache2-bin 2.4.71-1~deb12u1 (modules/database/mod_dbd.c) and
 * libaprutil1 1.6.3-1+deb12u1. Each quirk, where it is answered, and the test that shows it:
 *
 *  M1 mod_dbd says no server's settings: its per-server record (svr_cfg in mod_dbd.c) is
 *     private, and only its first member, a dbd_cfg_t pointer, is of a type mod_dbd.h declares.
 *     The driver and params of a server are read through that layout (bank_dbd_server), the
 *     way mod_dbd itself will use them, merged into virtual hosts and after conditional
 *     sections; an unset DBDriver is mod_dbd's "[DBDriver unset]".
 *     Tests: t/config/vhosts.t; t/api/resilience/identity_startup.t.
 *  M2 A virtual host with no DBD directive of its own gets the main server's record itself
 *     (httpd's merge copies the pointer), and preparing mod_bank's labels a second time into
 *     it makes mod_dbd warn "conflicting SQL statements with label" (AH02653) per statement
 *     and virtual host, on every start and graceful restart: prepared once per record
 *     (bank_dbd_prepare_all). Test: t/config/vhosts.t.
 *  M3 mod_dbd prepares its statements on a new connection before any post_connect hook or
 *     DBDInitSQL can set a busy timeout: SQLite then fails the prepare at once with "database
 *     is locked" while another process holds the lock (a WAL checkpoint as the old processes of
 *     a graceful restart close their connections), and the new process answers 503 or fails
 *     its child init. SQLite statements are not handed to mod_dbd (bank_dbd_prepare_all); the
 *     data layer prepares them with the session (bank_dbd_statements).
 *     Test: t/api/load/graceful_load.t (no AH00632, no crit line).
 *  M4 mod_dbd's own post_connect runs DBDInitSQL and stops at the first statement that
 *     returns a row (SQLite's "PRAGMA busy_timeout = 2000"): later DBDInitSQL and later hooks
 *     never run. mod_bank's hook runs first; a last one sets PostgreSQL's session again after
 *     DBDInitSQL, when that ran to its end (bank_dbd_register_hooks).
 *     Test: t/api/resilience/sqlite_session.t.
 *  M5 mod_watchdog may run its child_init (the background threads) before mod_dbd's, and
 *     ap_dbd_open before it finds no pool and fails without a word: a background connection is
 *     asked for only once mod_dbd's child_init has run (bank_dbd_ready).
 *     Tests: t/api/endpoints/token_uses.t, push.t.
 *  M6 With DBDPersist Off a request's connection lives in a subpool of r->pool, destroyed
 *     before r->pool's own cleanups run: the data layer rolls back a forgotten transaction in
 *     a pre-cleanup (bank_db_txn.c). Test: t/unit/test_db_sqlite.c, test_pool_gone (the outcome:
 *     nothing written, no lock left).
 *  M7 mod_dbd's post_config sorts the servers' statements into its connection pools: a
 *     statement handed to it after that may never reach a pool's connections. mod_bank's
 *     post_config, which calls bank_dbd_prepare_all, runs before mod_dbd's; that order is
 *     still registered in mod_bank.c (bank_register_hooks, "before_dbd") with the module's
 *     other hooks. Tests: t/config/vhosts.t and t/api/endpoints under DB=pgsql. */
#ifndef MOD_BANK_DBD_H
#define MOD_BANK_DBD_H

#include <httpd.h>
#include <apr_dbd.h> /* the types mod_dbd.h uses; the calls are bank_db_driver.c's */
#include <mod_dbd.h>

/* mod_dbd's optional functions (post_config, and the optional_fn_retrieve hook): 1 if mod_dbd
 * is loaded. */
int bank_dbd_retrieve(void);
/* The request's pooled connection, given back when the request ends; NULL if none. */
ap_dbd_t *bank_dbd_acquire(request_rec *r);
/* A pooled connection of server s until bank_dbd_close; NULL if none (M5: ask only once
 * bank_dbd_ready says so). */
ap_dbd_t *bank_dbd_open(apr_pool_t *p, server_rec *s);
void bank_dbd_close(server_rec *s, ap_dbd_t *dbd);

/* The DBDriver and DBDParams of server s as mod_dbd uses them (M1): 1, or 0 when it has no
 * DBDriver. */
int bank_dbd_server(server_rec *s, const char **driver, const char **params);
/* As bank_dbd_server, 1 only for a database mod_bank serves from: DBDriver sqlite3 or pgsql
 * with DBDParams. */
int bank_dbd_server_bank(server_rec *s, const char **driver, const char **params);
/* Hands mod_bank's statements to mod_dbd for every server whose driver is PostgreSQL, once per
 * record (M2); SQLite's are kept for bank_dbd_statements (M3). The drivers the servers use
 * ("sqlite3", "pgsql, sqlite3"; "" for none), and in *pgsql whether one is PostgreSQL. */
const char *bank_dbd_prepare_all(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s, int *pgsql);
/* Every statement a connection of mod_dbd's should have, label -> SQL: cfg's, and on SQLite
 * mod_bank's too (M3). In rec's pool. */
apr_hash_t *bank_dbd_statements(dbd_cfg_t *cfg, ap_dbd_t *rec);

/* A post_connect hook of mod_dbd's (mod_dbd.h). */
typedef apr_status_t bank_dbd_connect_fn(apr_pool_t *pool, dbd_cfg_t *cfg, ap_dbd_t *rec);
/* Registers first to run before mod_dbd's own post_connect and last after it (M4), and the
 * child_init that says mod_dbd's pools are made (M5). */
void bank_dbd_register_hooks(bank_dbd_connect_fn *first, bank_dbd_connect_fn *last);
/* 1 once mod_dbd has made this process's pools (M5). */
int bank_dbd_ready(void);

#endif
