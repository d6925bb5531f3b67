/* GET /health (handler bank-health, docs/api.md): the version, the database, the identity
 * provider's breaker and the push sender, for load balancers and monitors; and the start-up
 * notice naming the version and the database drivers (mod_bank_health.c). */
#ifndef MOD_BANK_HEALTH_H
#define MOD_BANK_HEALTH_H

#include <httpd.h>

int bank_health_handler(request_rec *r);
/* The start-up notice (each start and restart, not the configuration test). */
void bank_health_post_config(server_rec *s);

/* Each child process: the memory of whether the database role may write. */
void bank_health_child_init(apr_pool_t *pchild);

#endif
