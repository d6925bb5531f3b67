/* mod_bank_log.c: the core's log (bank_log.h) written to httpd's error log. */
#ifndef MOD_BANK_LOG_H
#define MOD_BANK_LOG_H

#include <httpd.h>
#include "bank_log.h"

/* Where a core message goes: the request's log, else the server's (ap_server_conf: NULL). */
typedef struct {
    request_rec *r;
    server_rec *s;
} mod_bank_where_t;

/* The request's place in the log, for the core (allocated in r->pool once per request). */
bank_log_where mod_bank_where(request_rec *r);
/* Installs httpd's error log as the core's log function. */
void mod_bank_log_install(void);

#endif
