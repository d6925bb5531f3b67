/* mod_bank_http.c: the HTTP layer every handler uses (method gate, JSON body, envelope) and
 * the one error renderer. */
#ifndef MOD_BANK_HTTP_H
#define MOD_BANK_HTTP_H

#include <httpd.h>
#include <apr_tables.h>
#include <json-c/json.h>
#include "bank_db.h"
#include "bank_validate.h"

/* Every error of docs/api.md, in one table so status, code and headers stay together. */
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
    BANK_E_URI_TOO_LONG,
    BANK_E_UNSUPPORTED_MEDIA_TYPE,
    BANK_E_VALIDATION_ERROR,
    BANK_E_TOO_MANY_REQUESTS,
    BANK_E_HEADERS_TOO_LARGE,
    BANK_E_INTERNAL,
    BANK_E_NOT_IMPLEMENTED,
    BANK_E_UNAVAILABLE
} bank_error_id;

/* The error code the request was answered with (bank_error), NULL if none. */
const char *bank_error_code(request_rec *r);
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
/* 429 of a client over a throttle: Retry-After (retry_after seconds, bank_throttle.h), the
 * X-RateLimit headers and the message "Too many failed <what> attempts; try again in N
 * seconds." */
int bank_error_throttled(request_rec *r, int limit, apr_int64_t retry_after, const char *what);

/* bank-error: the ErrorDocument target of the bank Locations. */
int bank_error_document_handler(request_rec *r);

/* Writes {"body": body[, "message": message]} with status 200 (body may be NULL -> null). */
int bank_send_json(request_rec *r, int status, json_object *body, const char *message);

/* The text bank_send_json writes for body and message (from r's pool). */
const char *bank_answer_text(request_rec *r, json_object *body, const char *message);
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
/* The same read (size limit, then to the end) whatever the media type. */
int bank_read_any_body(request_rec *r, const char **raw, apr_size_t *raw_len);
int bank_parse_json(request_rec *r, const char *raw, apr_size_t raw_len, json_object **out);
/* Method gate: OK if r->method_number is in allowed (an AP_METHOD_BIT mask), else writes
 * 405 with Allow and returns its status. */
int bank_allow_methods(request_rec *r, apr_int64_t mask, const char *allow);
/* The answer to a failed bank_db_* call: 503 with Retry-After (busy, unreachable) or 500,
 * after mod_bank_db.c has logged it with what (db may be NULL: no connection). */
int bank_error_db(request_rec *r, bank_db_t *db, bank_db_rc rc, const char *what);
/* The same answer for a failure bank_db_failed judged elsewhere (another request's
 * connection ran the statement): 503 if retry, else 500. */
int bank_error_db_retry(request_rec *r, int retry);
/* The client's address for throttling (the connection's, as httpd's Require ip sees it). */
const char *bank_client_ip(request_rec *r);

#endif
