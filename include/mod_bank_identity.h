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
 * own; hands the keys to the store. */
int bank_identity_post_config(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s);

#endif
