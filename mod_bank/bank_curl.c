/* The options and the answer reader every libcurl call of mod_bank shares (bank_curl.h). */
#include <string.h>
#include <strings.h>
#include "bank_curl.h"

void bank_curl_answer_init(bank_curl_answer_t *a, apr_pool_t *p, apr_size_t max)
{
    memset(a, 0, sizeof(*a));
    a->p = p;
    a->max = max;
    a->cap = 1024;
    a->buf = apr_palloc(p, a->cap);
    a->buf[0] = '\0';
}

static size_t on_data(char *data, size_t size, size_t n, void *baton)
{
    bank_curl_answer_t *a = baton;
    apr_size_t add = size * n;

    if (a->len + add > a->max) {
        a->over = 1;
        return 0; /* libcurl stops the transfer */
    }
    if (a->len + add + 1 > a->cap) {
        char *grown;
        while (a->len + add + 1 > a->cap) {
            a->cap *= 2;
        }
        grown = apr_palloc(a->p, a->cap);
        memcpy(grown, a->buf, a->len);
        a->buf = grown;
    }
    memcpy(a->buf + a->len, data, add);
    a->len += add;
    a->buf[a->len] = '\0';
    return add;
}

void bank_curl_safe(CURL *h, const char *url, int timeout, int connect_max, bank_curl_answer_t *a)
{
    long connect = timeout < connect_max ? timeout : connect_max;

    curl_easy_setopt(h, CURLOPT_VERBOSE, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout * 1000L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect * 1000L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR,
                     strncasecmp(url, "https:", 6) == 0 ? "https" : "http");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    /* No proxy from httpd's environment: libcurl would otherwise take http_proxy,
     * https_proxy, ALL_PROXY and NO_PROXY from it ("" turns that off); a caller sets the one
     * its configuration names afterwards. */
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_NOPROXY, "");
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)a->max);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "mod_bank");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
}
