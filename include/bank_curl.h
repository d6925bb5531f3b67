/* What every libcurl call to an outside service shares (the identity providers, FCM): the
 * answer read into a pool with a cap, and the options that keep a call safe. No httpd
 * dependency. */
#ifndef BANK_CURL_H
#define BANK_CURL_H

#include <apr_pools.h>
#include <curl/curl.h>

/* An answer body, NUL-terminated, in p; over: it passed max bytes and was cut off (the
 * transfer stops). */
typedef struct {
    apr_pool_t *p;
    char *buf;
    apr_size_t len, cap, max;
    int over;
} bank_curl_answer_t;

void bank_curl_answer_init(bank_curl_answer_t *a, apr_pool_t *p, apr_size_t max);

/* Sets on h (after curl_easy_reset or init): never verbose (libcurl would print URLs and
 * headers, which hold secrets), no signals (threads), `timeout` seconds for the whole call
 * and at most connect_max of them for connecting, TLS peer and host always verified, only
 * the scheme of url (https, or http where the caller allowed it), no redirects, the answer
 * capped at a->max bytes and read into a. The URL itself is the caller's to set. */
void bank_curl_safe(CURL *h, const char *url, int timeout, int connect_max, bank_curl_answer_t *a);

#endif
