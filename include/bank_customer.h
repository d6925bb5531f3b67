/* The customer record of interface 2.2, built from a customer row, and the issue of a
 * customer access token. No httpd dependency: the module and bankctl share both. */
#ifndef BANK_CUSTOMER_H
#define BANK_CUSTOMER_H

#include <apr_pools.h>
#include <json-c/json.h>
#include "bank_db.h"

/* Columns of bank_customer_by_email and bank_customer_by_id (mod_bank/sql.c), in order. */
enum {
    BANK_CUST_ID,
    BANK_CUST_EMAIL,
    BANK_CUST_PASSWORD,
    BANK_CUST_FIRST,
    BANK_CUST_LAST,
    BANK_CUST_PHONE,
    BANK_CUST_EMAIL_VERIFIED,
    BANK_CUST_BVN,
    BANK_CUST_REFERRAL,
    BANK_CUST_CREATED,
    BANK_CUST_UPDATED
};

/* Interface 2.2: customerId, firstName, lastName, email, emailVerified, phone, createdAt,
 * updatedAt, fullName, address (null until the service stores one). A new object. */
json_object *bank_customer_json(apr_pool_t *p, const char *const *row);

/* Issues an access token (CONTRACT C5) for a customer: a new secret, its hash stored with
 * bank_token_insert, valid from now for ttl_seconds, with abilities_json (a JSON array text
 * such as ["*"]). Runs inside the caller's transaction if one is open.
 * BANK_DB_OK and, from p, the plaintext token (*plain) and its expiry (*expires_iso);
 * otherwise what the insert returned, or BANK_DB_ERROR with db->error saying why when no
 * randomness was to be had for the secret (nothing was written then) or the insert returned
 * no id. Inside a transaction a failure leaves it able only to roll back. */
bank_db_rc bank_token_issue(bank_db_t *db, apr_pool_t *p, const char *customer_id,
                            apr_int64_t ttl_seconds, const char *abilities_json, const char **plain,
                            const char **expires_iso);

#endif
