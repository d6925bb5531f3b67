/* mod_bank_auth.c: customer bearer tokens and the opening every customer endpoint shares. */
#ifndef MOD_BANK_AUTH_H
#define MOD_BANK_AUTH_H

#include <httpd.h>
#include "bank_db.h"

typedef struct {
    const char *token_id; /* the bearer token's row (sign-out deletes it) */
    const char *customer_id;
    const char *abilities;
} bank_principal_t;

/* Verifies the customer bearer token and the ability. On success returns OK and the
 * principal; otherwise the error answer (401/403/503) is written and its status returned. */
int bank_authenticate(request_rec *r, bank_db_t *db, const char *ability, bank_principal_t **out);
/* The opening every customer endpoint shares: method gate, then the bearer token and the
 * ability (before any body is read): from the process's cache of verified tokens when
 * BankTokenCacheSeconds allows (*db NULL unless the revocation feed was read on one: take
 * one with bank_db when needed), else through a database connection (*db set). OK with the
 * principal set, or the status of the error answer already written (405, 503, 401, 403). */
int bank_customer_request(request_rec *r, apr_int64_t methods, const char *allow,
                          const char *ability, bank_db_t **db, bank_principal_t **out);
/* The per-process cache of verified tokens. */
void bank_auth_child_init(apr_pool_t *pchild, server_rec *s);
/* Drops a token from this process's cache (sign-out revoked it). Other processes keep
 * theirs for at most BankTokenCacheSeconds. */
void bank_auth_forget(request_rec *r, const char *token_id);
/* The bearer value of the Authorization header, or NULL if absent or not "Bearer x". */
const char *bank_bearer(request_rec *r);

#endif
