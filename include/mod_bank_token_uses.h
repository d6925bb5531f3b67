/* mod_bank_token_uses.c: each process's writer of token uses (bank_token_uses.h): a set per
 * server, written by a thread of the process every BANK_TOKEN_USES_INTERVAL and when the
 * process exits. */
#ifndef MOD_BANK_TOKEN_USES_H
#define MOD_BANK_TOKEN_USES_H

#include <httpd.h>
#include "bank_token_uses.h"

/* Each child process: the sets and their writer (none if the thread cannot start: then
 * bank_token_uses_of says NULL and uses are written on the request's way, as before). */
void bank_token_uses_child_init(apr_pool_t *pchild, server_rec *s);
/* The set of server s, or NULL (no writer). */
bank_token_uses_t *bank_token_uses_of(server_rec *s);

#endif
