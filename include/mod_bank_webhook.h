/* mod_bank_webhook.c: POST /webhook/<partner> (docs/api.md, docs/partners.md). */
#ifndef MOD_BANK_WEBHOOK_H
#define MOD_BANK_WEBHOOK_H

#include <httpd.h>

int bank_webhook_handler(request_rec *r);
/* Group commit's per-process state (child_init). */
void bank_webhook_child_init(apr_pool_t *pchild, server_rec *s);

#endif
