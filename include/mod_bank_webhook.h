/* mod_bank_webhook.c: POST /webhook/<partner> (docs/api.md, docs/partners.md). */
#ifndef MOD_BANK_WEBHOOK_H
#define MOD_BANK_WEBHOOK_H

#include <httpd.h>

int bank_webhook_handler(request_rec *r);

#endif
