/* mod_bank_identity.c: the identity keys (BankIdentityKey, BankIdentityOldKey,
 * BankIdentityHashKey; docs/configuration.md), read when httpd reads its configuration, and
 * checked against the database before the server starts. */
#ifndef MOD_BANK_IDENTITY_H
#define MOD_BANK_IDENTITY_H

#include <httpd.h>
#include <http_config.h>

const char *bank_identity_set_key(cmd_parms *cmd, void *cfg, const char *id, const char *path);
const char *bank_identity_set_old_key(cmd_parms *cmd, void *cfg, const char *id, const char *path);
const char *bank_identity_set_hash_key(cmd_parms *cmd, void *cfg, const char *path);
/* Refuses to start (not OK) without keys, or with keys the database does not know as its
 * own; hands the keys to the store. On a restart (httpd would exit on a refusal, stopping
 * a running server) it logs the refusal, keeps the server up, and BVN onboarding answers
 * 503 until a restart with the right keys (bank_identity_refused). */
int bank_identity_post_config(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s);
/* The same checks in `apache2 -t` (the check_config hook), which apachectl graceful and
 * restart run first: a reload with the wrong keys is refused before the server is told. */
int bank_identity_check_config(apr_pool_t *ptemp, server_rec *s);
/* 1 while the keys of the running configuration were refused. */
int bank_identity_refused(void);
/* 1 while the database's schema needs a newer module than this one (found at a restart):
 * every endpoint with a database answers 503. */
int bank_identity_schema_refused(void);

#endif
