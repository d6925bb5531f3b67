/* The HTTP layer every handler uses: the method gate, the JSON body (media type, size limit
 * enforced while reading, parsing), the success envelope and the one error renderer. */
#include <string.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <http_core.h>
#include <http_protocol.h>
#include <http_request.h>
#include <util_filter.h>
#include "mod_bank.h"
#include "mod_bank_config.h"
#include "mod_bank_http.h"
#include "mod_bank_db.h"
#include "bank_json.h"

APLOG_USE_MODULE(bank);

/* The error code an answer carries, noted for whoever counts answers (bank_error_code). */
#define NOTE_ERROR "mod_bank-error"

const char *bank_error_code(request_rec *r)
{
    return apr_table_get(r->notes, NOTE_ERROR);
}

static const struct {
    int status;
    const char *code;
    const char *message;
} errors[] = {
    [BANK_E_BAD_REQUEST] = {400, "E_BAD_REQUEST", "The request could not be read."},
    [BANK_E_INVALID_JSON] = {400, "E_INVALID_JSON", "The request body is not valid JSON."},
    [BANK_E_INVALID_CREDENTIALS] = {400, "E_INVALID_CREDENTIALS", "Invalid user credentials"},
    [BANK_E_UNAUTHORIZED_ACCESS] = {401, "E_UNAUTHORIZED_ACCESS", "Unauthorized access"},
    [BANK_E_INVALID_SIGNATURE] = {401, "E_INVALID_SIGNATURE",
                                  "The request signature is missing or wrong."},
    [BANK_E_FORBIDDEN] = {403, "E_FORBIDDEN", "This token is not allowed to do this."},
    [BANK_E_ROUTE_NOT_FOUND] = {404, "E_ROUTE_NOT_FOUND", "Cannot find this route."},
    [BANK_E_METHOD_NOT_ALLOWED] = {405, "E_METHOD_NOT_ALLOWED", "This method is not allowed here."},
    [BANK_E_REQUEST_TIMEOUT] = {408, "E_REQUEST_TIMEOUT", "The request was not received in time."},
    [BANK_E_BVN_IN_USE] = {409, "E_BVN_IN_USE", "This BVN belongs to another customer."},
    [BANK_E_ALREADY_VERIFIED] = {409, "E_ALREADY_VERIFIED",
                                 "This customer is already verified with another BVN."},
    [BANK_E_PRECONDITION_FAILED] = {412, "E_PRECONDITION_FAILED",
                                    "The resource does not match the request's precondition."},
    [BANK_E_PAYLOAD_TOO_LARGE] = {413, "E_PAYLOAD_TOO_LARGE", "The request body is too large."},
    [BANK_E_URI_TOO_LONG] = {414, "E_URI_TOO_LONG", "The request's URL is too long."},
    [BANK_E_UNSUPPORTED_MEDIA_TYPE] = {415, "E_UNSUPPORTED_MEDIA_TYPE",
                                       "The request body must be application/json."},
    [BANK_E_VALIDATION_ERROR] = {422, "E_VALIDATION_ERROR", "The request is not valid."},
    [BANK_E_TOO_MANY_REQUESTS] = {429, "E_TOO_MANY_REQUESTS", "Too many requests."},
    [BANK_E_HEADERS_TOO_LARGE] = {431, "E_HEADERS_TOO_LARGE",
                                  "The request's headers are too large."},
    [BANK_E_INTERNAL] = {500, "E_INTERNAL", "Something went wrong on our side."},
    [BANK_E_NOT_IMPLEMENTED] = {501, "E_NOT_IMPLEMENTED",
                                "The request asks for something this server does not do."},
    [BANK_E_UNAVAILABLE] = {503, "E_UNAVAILABLE",
                            "The service is unavailable right now; try again shortly."},
};

int bank_send_text(request_rec *r, int status, const char *text, apr_size_t len)
{
    r->status = status;
    ap_set_content_type(r, "application/json; charset=utf-8");
    /* Answers carry tokens and personal data: no shared cache may keep them. A handler that
     * wants caching (the bank list) sets its own Cache-Control first. */
    if (!apr_table_get(r->headers_out, "Cache-Control")) {
        apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    }
    apr_table_setn(r->headers_out, "X-Content-Type-Options", "nosniff");
    ap_set_content_length(r, len);
    if (!r->header_only) {
        ap_rwrite(text, (int)len, r);
    }
    return OK;
}

static int write_json(request_rec *r, int status, json_object *doc)
{
    const char *text = bank_json_text(r->pool, doc);
    return bank_send_text(r, status, text, strlen(text));
}

const char *bank_answer_text(request_rec *r, json_object *body, const char *message)
{
    json_object *doc = bank_json_own(r->pool, json_object_new_object());

    /* the envelope takes a reference; the caller's pool keeps its own */
    json_object_object_add(doc, "body", body ? json_object_get(body) : NULL);
    if (message) {
        json_object_object_add(doc, "message", json_object_new_string(message));
    }
    return bank_json_text(r->pool, doc);
}

int bank_send_json(request_rec *r, int status, json_object *body, const char *message)
{
    const char *text = bank_answer_text(r, body, message);
    return bank_send_text(r, status, text, strlen(text));
}

int bank_error(request_rec *r, bank_error_id id, const char *message,
               const apr_array_header_t *errs)
{
    json_object *doc = bank_json_own(r->pool, json_object_new_object());
    json_object *list = json_object_new_array();
    int i;

    if (!message) {
        message = errors[id].message;
    }
    json_object_object_add(doc, "body", NULL);
    json_object_object_add(doc, "message", json_object_new_string(message));
    json_object_object_add(doc, "code", json_object_new_string(errors[id].code));
    apr_table_setn(r->notes, NOTE_ERROR, errors[id].code);
    if (errs && errs->nelts > 0) {
        for (i = 0; i < errs->nelts; i++) {
            const bank_field_error_t *e = &APR_ARRAY_IDX(errs, i, bank_field_error_t);
            json_object *o = json_object_new_object();
            json_object_object_add(o, "message", json_object_new_string(e->message));
            if (e->field) {
                json_object_object_add(o, "field", json_object_new_string(e->field));
            }
            if (e->rule) {
                json_object_object_add(o, "rule", json_object_new_string(e->rule));
            }
            json_object_array_add(list, o);
        }
    } else {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "message", json_object_new_string(message));
        json_object_array_add(list, o);
    }
    json_object_object_add(doc, "errors", list);
    if (id == BANK_E_PAYLOAD_TOO_LARGE) {
        /* the rest of the body is not worth reading: end the connection after this answer */
        r->connection->keepalive = AP_CONN_CLOSE;
    }
    if (id == BANK_E_UNAUTHORIZED_ACCESS) {
        apr_table_setn(r->headers_out, "WWW-Authenticate",
                       "Bearer realm=\"mod_bank\", error=\"invalid_token\"");
    }
    write_json(r, errors[id].status, doc);
    /* DONE, not OK: callers tell "answered with an error" from success by rc != OK, and
     * httpd treats DONE from a handler as a completed request. */
    return DONE;
}

/* The ErrorDocument target (conf/bank.conf): answers httpd gives itself on the API's host,
 * while it reads the request line and headers (400, 408, 414, 431, 501) or while a handler
 * reads the body (a malformed chunked body 400, a read time-out 408, LimitRequestBody crossed
 * by a chunked body 413), in the API's shape with the original status, which the internal
 * redirect leaves in r->prev. */
int bank_error_document_handler(request_rec *r)
{
    static const bank_error_id ids[] = {
        BANK_E_BAD_REQUEST,       BANK_E_ROUTE_NOT_FOUND, BANK_E_REQUEST_TIMEOUT,
        BANK_E_PAYLOAD_TOO_LARGE, BANK_E_URI_TOO_LONG,    BANK_E_HEADERS_TOO_LARGE,
        BANK_E_INTERNAL,          BANK_E_NOT_IMPLEMENTED, BANK_E_UNAVAILABLE};
    apr_size_t i;

    if (!r->prev) {
        return bank_error(r, BANK_E_ROUTE_NOT_FOUND, NULL, NULL); /* asked for directly */
    }
    for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        if (errors[ids[i]].status == r->prev->status) {
            return bank_error(r, ids[i], NULL, NULL);
        }
    }
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                  BANKLOGNO(0102) "ErrorDocument %d points at the bank-error handler, which "
                                  "has no answer for that status",
                  r->prev->status);
    return bank_error(r, BANK_E_INTERNAL, NULL, NULL);
}

int bank_error_validation(request_rec *r, const apr_array_header_t *errs)
{
    return bank_error(r, BANK_E_VALIDATION_ERROR, NULL, errs);
}

int bank_error_method(request_rec *r, const char *allow)
{
    apr_table_setn(r->headers_out, "Allow", allow);
    return bank_error(r, BANK_E_METHOD_NOT_ALLOWED, NULL, NULL);
}

int bank_error_unavailable(request_rec *r, const char *message, int retry_after)
{
    apr_table_setn(r->headers_out, "Retry-After", apr_itoa(r->pool, retry_after));
    return bank_error(r, BANK_E_UNAVAILABLE, message, NULL);
}

void bank_rate_headers(request_rec *r, int limit, int remaining)
{
    apr_table_setn(r->headers_out, "X-RateLimit-Limit", apr_itoa(r->pool, limit));
    apr_table_setn(r->headers_out, "X-RateLimit-Remaining",
                   apr_itoa(r->pool, remaining > 0 ? remaining : 0));
}

int bank_error_throttled(request_rec *r, int limit, apr_int64_t retry_after, const char *what)
{
    bank_rate_headers(r, limit, 0);
    apr_table_setn(r->headers_out, "Retry-After",
                   apr_psprintf(r->pool, "%" APR_INT64_T_FMT, retry_after));
    return bank_error(r, BANK_E_TOO_MANY_REQUESTS,
                      apr_psprintf(r->pool,
                                   "Too many failed %s attempts; try again in %" APR_INT64_T_FMT
                                   " seconds.",
                                   what, retry_after),
                      NULL);
}

int bank_allow_methods(request_rec *r, apr_int64_t mask, const char *allow)
{
    if (mask & (AP_METHOD_BIT << r->method_number)) {
        return OK;
    }
    return bank_error_method(r, allow);
}

const char *bank_client_ip(request_rec *r)
{
    return r->useragent_ip ? r->useragent_ip : r->connection->client_ip;
}

/* application/json or application/<x>+json, with any parameters. */
static int is_json_media_type(const char *ct)
{
    const char *end;
    apr_size_t len;

    if (!ct) {
        return 0;
    }
    while (*ct == ' ' || *ct == '\t') {
        ct++;
    }
    end = ct + strcspn(ct, "; \t");
    len = (apr_size_t)(end - ct);
    if (len == 16 && !strncasecmp(ct, "application/json", 16)) {
        return 1;
    }
    return len > 17 && !strncasecmp(ct, "application/", 12) && !strncasecmp(end - 5, "+json", 5);
}

/* Reads the whole body, refusing it as soon as it passes the limit (chunked bodies too).
 * expected is the Content-Length (already checked against the limit) or -1. */
static int read_body(request_rec *r, apr_int64_t limit, apr_int64_t expected, char **out,
                     apr_size_t *out_len)
{
    apr_bucket_brigade *bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    /* Sized once when the length is known; doubled otherwise (the pool frees nothing until
     * the request ends, so growth costs at most twice the limit). */
    apr_size_t cap = expected >= 0 ? (apr_size_t)expected + 1 : 1024, len = 0;
    char *buf = apr_palloc(r->pool, cap);
    int seen_eos = 0;

    while (!seen_eos) {
        apr_bucket *b;
        apr_status_t rv =
            ap_get_brigade(r->input_filters, bb, AP_MODE_READBYTES, APR_BLOCK_READ, 8192);
        if (rv == AP_FILTER_ERROR) {
            /* An input filter (httpd's LimitRequestBody, a bad chunk) has already answered:
             * a second answer from us would follow it on the wire. */
            return AP_FILTER_ERROR;
        }
        if (rv != APR_SUCCESS) {
            ap_log_rerror(APLOG_MARK, APLOG_INFO, rv, r, BANKLOGNO(0101) "reading the body");
            return ap_map_http_request_error(rv, HTTP_BAD_REQUEST);
        }
        for (b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb); b = APR_BUCKET_NEXT(b)) {
            const char *data;
            apr_size_t n;
            if (APR_BUCKET_IS_EOS(b)) {
                seen_eos = 1;
                break;
            }
            if (APR_BUCKET_IS_METADATA(b)) {
                continue;
            }
            rv = apr_bucket_read(b, &data, &n, APR_BLOCK_READ);
            if (rv != APR_SUCCESS) {
                return HTTP_BAD_REQUEST;
            }
            if ((apr_int64_t)(len + n) > limit) {
                return bank_error(r, BANK_E_PAYLOAD_TOO_LARGE, NULL, NULL);
            }
            if (len + n + 1 > cap) {
                char *bigger;
                while (len + n + 1 > cap) {
                    cap *= 2;
                }
                bigger = apr_palloc(r->pool, cap);
                memcpy(bigger, buf, len);
                buf = bigger;
            }
            memcpy(buf + len, data, n);
            len += n;
        }
        apr_brigade_cleanup(bb);
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return OK;
}

int bank_read_body(request_rec *r, const char **raw, apr_size_t *raw_len)
{
    if (!is_json_media_type(apr_table_get(r->headers_in, "Content-Type"))) {
        return bank_error(r, BANK_E_UNSUPPORTED_MEDIA_TYPE, NULL, NULL);
    }
    return bank_read_any_body(r, raw, raw_len);
}

int bank_read_any_body(request_rec *r, const char **raw, apr_size_t *raw_len)
{
    apr_int64_t limit = bank_conf_max_body(bank_conf(r));
    apr_off_t httpd_limit = ap_get_limit_req_body(r);
    const char *cl = apr_table_get(r->headers_in, "Content-Length");
    apr_int64_t expected = -1;
    char *buf = NULL;
    int rc;
    /* Content-Length first: refuse before reading a byte, in our shape, whichever of
     * BankMaxBody and httpd's LimitRequestBody is smaller (httpd validated the header). */
    if (cl) {
        expected = apr_strtoi64(cl, NULL, 10);
        if (expected > limit || (httpd_limit > 0 && expected > httpd_limit)) {
            return bank_error(r, BANK_E_PAYLOAD_TOO_LARGE, NULL, NULL);
        }
    }
    if ((rc = read_body(r, limit, expected, &buf, raw_len)) != OK) {
        return rc;
    }
    *raw = buf;
    return OK;
}

int bank_parse_json(request_rec *r, const char *raw, apr_size_t raw_len, json_object **out)
{
    const char *why = NULL;

    /* one thread at a time uses a connection: its parser serves its requests in turn */
    *out = bank_json_parse_object_in(r->pool, r->connection->pool, raw, raw_len, &why);
    if (!*out) {
        return bank_error(r, BANK_E_INVALID_JSON, why, NULL);
    }
    return OK;
}

int bank_read_json(request_rec *r, json_object **out, const char **raw, apr_size_t *raw_len)
{
    const char *buf = NULL;
    apr_size_t len = 0;
    int rc;

    if ((rc = bank_read_body(r, &buf, &len)) != OK) {
        return rc;
    }
    if (raw) {
        *raw = buf;
        *raw_len = len;
    }
    return bank_parse_json(r, buf, len, out);
}

/* How long a client should wait before retrying after a 503 from the database. */
#define BANK_DB_RETRY_AFTER 5

int bank_error_db(request_rec *r, bank_db_t *db, bank_db_rc rc, const char *what)
{
    return bank_error_db_retry(r, bank_db_failed(r, db, rc, what));
}

int bank_error_db_retry(request_rec *r, int retry)
{
    if (retry) {
        return bank_error_unavailable(r, NULL, BANK_DB_RETRY_AFTER);
    }
    return bank_error(r, BANK_E_INTERNAL, NULL, NULL);
}
