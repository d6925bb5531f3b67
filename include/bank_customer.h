/* The customer record of interface 2.2, built from a customer row. No httpd dependency. */
#ifndef BANK_CUSTOMER_H
#define BANK_CUSTOMER_H

#include <apr_pools.h>
#include <json-c/json.h>

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

#endif
