/* mod_bank_webhook.c: POST /webhook/<partner> (docs/api.md, docs/partners.md). */
#ifndef MOD_BANK_WEBHOOK_H
#define MOD_BANK_WEBHOOK_H

#include <httpd.h>

int bank_webhook_handler(request_rec *r);
/* Group commit's turns across processes: the mutex type (pre_config), the mutex
 * (post_config), and the per-process state (child_init) (mod_bank_webhook.c). */
int bank_webhook_pre_config(apr_pool_t *pconf);
int bank_webhook_post_config(apr_pool_t *pconf, server_rec *s);
void bank_webhook_child_init(apr_pool_t *pchild, server_rec *s);

#endif
