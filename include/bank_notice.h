/* The payment partner's notice (docs/api.md): the payload validated into the
 * values stored in payment_notices, and the HMAC signature of the raw body. No httpd. */
#ifndef BANK_NOTICE_H
#define BANK_NOTICE_H

#include <apr_pools.h>
#include <apr_tables.h>
#include <json-c/json.h>

/* The one event the service acts on (docs/partners.md); others are stored as ignored. */
#define BANK_NOTICE_SERVICE "payments"
#define BANK_NOTICE_TYPE "fund_transfer"

/* Largest amount taken: 2^53 - 1, the largest integer a JavaScript sender holds exactly. */
#define BANK_NOTICE_AMOUNT_MAX 9007199254740991LL

typedef struct {
    const char *service;
    const char *type;
    const char *status;  /* "received", or "ignored" for another service or type */
    const char *amount;  /* decimal text of the JSON integer (minor units) */
    const char *charges; /* the JSON number's text as sent */
    const char *currency;
    const char *narration;
    const char *receiver_account_name;
    const char *receiver_account_number;
    const char *receiver_bank_code;
    const char *session_id;
    const char *status_code;
    const char *status_message;
    const char *transaction_reference;
    const char *wallet_id;
    const char *client_ref;         /* JSON text; NULL when absent or null */
    const char *customer_reference; /* JSON text; NULL when absent or null */
} bank_notice_t;

/* Validates a parsed body. Returns the notice, or NULL after adding one entry per failed
 * field to errs (fields named by dotted path: "data.amount"). A notice of another service
 * or type needs only the idempotency key (data.transactionReference, data.statusCode); its
 * other fields are NULL when absent, and type-checked when present. Values live in p. */
bank_notice_t *bank_notice_read(apr_pool_t *p, json_object *body, apr_array_header_t *errs);

/* A partner's HMAC-SHA-256 or -512 (bits) key, made ready once, at configuration, so that no
 * check looks anything up: NULL for other bits, a NULL or empty key, or if OpenSSL cannot.
 * Its OpenSSL state is freed with p. Made from one thread; then any number of threads may
 * check with it at once. */
typedef struct bank_notice_key_s bank_notice_key_t;
bank_notice_key_t *bank_notice_key_make(apr_pool_t *p, int bits, const char *key);

/* 1 if given is the hex (either case) HMAC of data[0..len) under k, compared in constant
 * time; 0 otherwise, also for a NULL k, a NULL or garbled given. */
int bank_notice_signature_ok(const bank_notice_key_t *k, const void *data, apr_size_t len,
                             const char *given);

#endif
