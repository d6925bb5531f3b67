/* mod_bank_banks.c: GET /misc/payment_banks (docs/api.md). */
#ifndef MOD_BANK_BANKS_H
#define MOD_BANK_BANKS_H

#include <httpd.h>

int bank_banks_handler(request_rec *r);
void bank_banks_child_init(apr_pool_t *p, server_rec *s);

#endif
