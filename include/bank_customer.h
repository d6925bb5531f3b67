/* The customer record of docs/api.md, built from a customer row, and the issue of a
 * customer access token. No httpd dependency: the module and bankctl share both. */
#ifndef BANK_CUSTOMER_H
#define BANK_CUSTOMER_H

#include <apr_pools.h>
#include <json-c/json.h>
#include "bank_store.h"

/* docs/api.md: customerId, firstName, lastName, email, emailVerified, phone, createdAt,
 * updatedAt, fullName, address (null until the service stores one). A new object. */
json_object *bank_customer_json(apr_pool_t *p, const bank_customer_t *c);

/* Issues an access token (docs/api.md) for a customer: a new secret, its hash stored with
 * bank_token_insert, valid from now for ttl_seconds, with abilities_json (a JSON array text
 * such as ["*"]). Runs inside the caller's transaction if one is open.
 * BANK_DB_OK and, from p, the plaintext token (*plain) and its expiry (*expires_iso);
 * otherwise what the insert returned, or BANK_DB_ERROR with bank_db_error saying why when no
 * randomness was to be had for the secret (nothing was written then) or the insert returned
 * no id. Inside a transaction a failure leaves it able only to roll back. */
bank_db_rc bank_token_issue(bank_db_t *db, apr_pool_t *p, const char *customer_id,
                            apr_int64_t ttl_seconds, const char *abilities_json, const char **plain,
                            const char **expires_iso);

#endif
