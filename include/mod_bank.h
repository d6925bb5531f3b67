/* mod_bank: the httpd glue shared by the handlers (configuration, HTTP layer, database
 * access, bearer authentication). The logic that needs no request_rec lives in the core
 * headers (bank_*.h). */
#ifndef MOD_BANK_H
#define MOD_BANK_H

#include <httpd.h>
#include <http_config.h>
#include <http_log.h>
#include <apr_tables.h>
#include <json-c/json.h>
#include "bank_sql.h"
#include "bank_validate.h"

/* mod_bank's own log tags: httpd's APLOGNO numbers belong to httpd. Unique per call site. */
#define BANKLOGNO(n) "BANK" #n ": "

/* ---------- configuration (config.c) ------------------------------------------------------ */

typedef enum { BANK_HMAC_NONE = 0, BANK_HMAC_SHA256, BANK_HMAC_SHA512 } bank_hmac_alg;

/* Per-directory configuration. Unset fields hold BANK_UNSET / NULL and are merged the httpd
 * way (the more specific <Location> wins); handlers read them through the getters below,
 * which supply the defaults. */
#define BANK_UNSET (-1)
typedef struct {
    apr_array_header_t *client_keys;     /* BankClientKey: const char * */
    apr_int64_t token_lifetime;          /* BankTokenLifetime, seconds */
    int throttle_attempts;               /* BankSignInThrottle */
    apr_int64_t throttle_window;         /* seconds */
    int addr_attempts;                   /* BankSignInAddressThrottle */
    apr_int64_t addr_window;             /* seconds */
    int bvn_attempts;                    /* BankBvnThrottle */
    apr_int64_t bvn_window;              /* seconds */
    apr_int64_t max_body;                /* BankMaxBody, bytes */
    apr_int64_t banks_max_age;           /* BankBanksMaxAge, seconds */
    const char *account_bank;            /* BankAccountBank */
    const char *account_bank_code;       /* BankAccountBankCode */
    apr_array_header_t *webhook_secrets; /* BankWebhookSecret: const char * */
    const char *sig_header;              /* BankWebhookSignature */
    bank_hmac_alg sig_alg;
    const char *sig_key;
    const char *partner; /* BankWebhookPartner */
    int sig_set;         /* BankWebhookSignature given here */
} bank_dir_conf;

extern module AP_MODULE_DECLARE_DATA bank_module;
extern const command_rec bank_cmds[];
void *bank_create_dir_conf(apr_pool_t *p, char *dir);
void *bank_merge_dir_conf(apr_pool_t *p, void *base, void *add);

bank_dir_conf *bank_conf(request_rec *r);
apr_int64_t bank_conf_token_lifetime(const bank_dir_conf *c);
int bank_conf_throttle_attempts(const bank_dir_conf *c);
apr_int64_t bank_conf_throttle_window(const bank_dir_conf *c);
int bank_conf_addr_attempts(const bank_dir_conf *c);
apr_int64_t bank_conf_addr_window(const bank_dir_conf *c);
int bank_conf_bvn_attempts(const bank_dir_conf *c);
apr_int64_t bank_conf_bvn_window(const bank_dir_conf *c);
apr_int64_t bank_conf_max_body(const bank_dir_conf *c);
apr_int64_t bank_conf_banks_max_age(const bank_dir_conf *c);
const char *bank_conf_account_bank(const bank_dir_conf *c);
const char *bank_conf_account_bank_code(const bank_dir_conf *c);
const char *bank_conf_partner(request_rec *r, const bank_dir_conf *c);
/* The path of the <Location> that maps this request (NULL for regex sections). */
const char *bank_location(request_rec *r);

/* ---------- HTTP layer (http.c) ----------------------------------------------------------- */

/* Every error of CONTRACT C3, in one table so status, code and headers stay together. */
typedef enum {
    BANK_E_BAD_REQUEST,
    BANK_E_INVALID_JSON,
    BANK_E_INVALID_CREDENTIALS,
    BANK_E_UNAUTHORIZED_ACCESS,
    BANK_E_INVALID_SIGNATURE,
    BANK_E_FORBIDDEN,
    BANK_E_ROUTE_NOT_FOUND,
    BANK_E_METHOD_NOT_ALLOWED,
    BANK_E_REQUEST_TIMEOUT,
    BANK_E_BVN_IN_USE,
    BANK_E_ALREADY_VERIFIED,
    BANK_E_PRECONDITION_FAILED,
    BANK_E_PAYLOAD_TOO_LARGE,
    BANK_E_UNSUPPORTED_MEDIA_TYPE,
    BANK_E_VALIDATION_ERROR,
    BANK_E_TOO_MANY_REQUESTS,
    BANK_E_INTERNAL,
    BANK_E_UNAVAILABLE
} bank_error_id;

/* Renders an error answer (status, Content-Type, body) and returns DONE for the handler
 * to return (every helper below that may answer returns OK to go on, anything else to stop).
 * message may be NULL for the error's default sentence; errs may be NULL (one entry with the
 * message is then written). Headers such as Allow or Retry-After are set by the caller on
 * r->err_headers_out before, or through the helpers below. */
int bank_error(request_rec *r, bank_error_id id, const char *message,
               const apr_array_header_t *errs);
/* 422 with the given field errors. */
int bank_error_validation(request_rec *r, const apr_array_header_t *errs);
/* 405 with Allow. */
int bank_error_method(request_rec *r, const char *allow);
/* 503 with Retry-After. */
int bank_error_unavailable(request_rec *r, const char *message, int retry_after);

/* X-RateLimit-Limit and X-RateLimit-Remaining (negative remaining shows as 0). */
void bank_rate_headers(request_rec *r, int limit, int remaining);
/* 429 of a client over a throttle: Retry-After (what is left of the window that started at
 * window_start, as the database gives it), the X-RateLimit headers and the message "Too many
 * failed <what> attempts; try again in N seconds." */
int bank_error_throttled(request_rec *r, int limit, apr_int64_t window, const char *window_start,
                         const char *what);

/* Writes {"body": body[, "message": message]} with status 200 (body may be NULL -> null). */
int bank_send_json(request_rec *r, int status, json_object *body, const char *message);

/* Writes an already serialised JSON document (same headers as bank_send_json). */
int bank_send_text(request_rec *r, int status, const char *text, apr_size_t len);

/* For POST handlers: method check, media type, body read under BankMaxBody, JSON parse.
 * Returns OK and the object, or the status of the error answer already written. The raw
 * body is returned through raw/raw_len when those are not NULL (webhook signatures). */
int bank_read_json(request_rec *r, json_object **out, const char **raw, apr_size_t *raw_len);
/* bank_read_json in two steps, for a handler that must look at the raw bytes before parsing
 * them (the webhook checks their signature first): media type, size limit and the read; then
 * the parse (400 E_INVALID_JSON). raw is NUL-terminated after raw_len bytes. */
int bank_read_body(request_rec *r, const char **raw, apr_size_t *raw_len);
int bank_parse_json(request_rec *r, const char *raw, apr_size_t raw_len, json_object **out);
/* Method gate: OK if r->method_number is in allowed (an AP_METHOD_BIT mask), else writes
 * 405 with Allow and returns its status. */
int bank_allow_methods(request_rec *r, apr_int64_t mask, const char *allow);
/* The client's address for throttling (the connection's, as httpd's Require ip sees it). */
const char *bank_client_ip(request_rec *r);

/* ---------- database (db.c) ---------------------------------------------------------------- */

/* A pooled connection for this request, or NULL after logging why (the caller answers 503
 * through bank_error_db). */
bank_db_t *bank_db(request_rec *r);
/* Maps a failed bank_db_* call to 503 (busy/unreachable) or 500 and logs it. */
int bank_error_db(request_rec *r, bank_db_t *db, bank_db_rc rc, const char *what);
/* Prepares every statement of bank_statements for each server at config time. */
int bank_db_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s);
void bank_db_retrieve_optional(void);
/* Registers mod_bank on mod_dbd's post_connect hook (session set-up, restore after loss). */
void bank_db_register_hooks(void);

/* ---------- failure counters shared by every server (throttle.c) ------------------------- */

/* One counter of throttle_counts: failures of (scope, subject) in a window of `window`
 * seconds, at most `attempts` answered as failures per window. */
typedef struct {
    request_rec *r;
    bank_db_t *db;
    const char *scope;   /* "bvn", "address" */
    const char *subject; /* customer id, client IP */
    const char *what;    /* for the 429's message: "BVN", "sign-in" */
    int attempts;
    apr_int64_t window; /* seconds */
    apr_time_t now;
    const char *cutoff; /* now - window: a window that started before has expired */
} bank_throttle_t;

void bank_throttle_init(bank_throttle_t *t, request_rec *r, bank_db_t *db, const char *scope,
                        const char *subject, const char *what, int attempts, apr_int64_t window);
/* OK while the failures of the current window are under the limit; else the 429 (or the
 * database error) is written and its status returned. Counts nothing. */
int bank_throttle_check(bank_throttle_t *t);
/* Counts one failure atomically (and prunes long-expired rows of the scope). OK with
 * *remaining while it is one of the window's ATTEMPTS; else the 429 is written. */
int bank_throttle_fail(bank_throttle_t *t, int *remaining);
/* A success: deletes the counter and reads what it held, in a transaction of its own (call
 * it outside one). OK, or the 429 when the limit was reached meanwhile (by requests at the
 * same moment), the delete then rolled back: the success must not be revealed. */
int bank_throttle_clear(bank_throttle_t *t);
/* Rows expired for at least this long (and for the window) are pruned. */
#define BANK_THROTTLE_KEEP apr_time_from_sec(86400)
/* The cutoff for pruning the rows of a window of `window` seconds at `now`. */
const char *bank_throttle_prune_cutoff(apr_pool_t *p, apr_time_t now, apr_int64_t window);

/* ---------- bearer authentication (auth.c) ------------------------------------------------ */

typedef struct {
    const char *token_id;
    const char *customer_id;
    const char *abilities;
} bank_principal_t;

/* Verifies the customer bearer token and the ability. On success returns OK and the
 * principal; otherwise the error answer (401/403/503) is written and its status returned. */
int bank_authenticate(request_rec *r, bank_db_t *db, const char *ability, bank_principal_t **out);
/* The opening every customer endpoint shares: method gate, a database connection, then the
 * bearer token and the ability (before any body is read). OK with db and principal set, or
 * the status of the error answer already written (405, 503, 401, 403). */
int bank_customer_request(request_rec *r, apr_int64_t methods, const char *allow,
                          const char *ability, bank_db_t **db, bank_principal_t **out);
/* The bearer value of the Authorization header, or NULL if absent or not "Bearer x". */
const char *bank_bearer(request_rec *r);

/* ---------- handlers ------------------------------------------------------------------------ */
int bank_banks_handler(request_rec *r);
void bank_banks_child_init(apr_pool_t *p, server_rec *s);
int bank_sign_in_handler(request_rec *r);
int bank_sign_out_handler(request_rec *r);
int bank_bvn_handler(request_rec *r);
int bank_webhook_handler(request_rec *r);
/* bank-error: the ErrorDocument target of the bank Locations (http.c). */
int bank_error_document_handler(request_rec *r);

#endif
