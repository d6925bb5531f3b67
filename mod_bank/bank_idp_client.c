/* The call to an identity provider (docs/identity.md) with libcurl: one handle per thread,
 * kept in a pool that lives as long as the thread, so its connections to the provider are
 * reused; TLS always verified; a timeout on connecting and on the whole call; the answer
 * capped at BANK_IDP_MAX_ANSWER bytes; never verbose (libcurl would print the URL, which
 * holds a BVN and a date). The answer is judged by bank_idp_judge (bank_idp.c). */
#include <string.h>
#include <strings.h>
#include <apr_strings.h>
#include <curl/curl.h>
#include "bank_idp.h"

int bank_idp_global_init(void)
{
    static int done = 0;
    if (!done && curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK) {
        done = 1;
    }
    return done ? 0 : -1;
}

static void unavailable(bank_idp_result_t *out, const char *why)
{
    out->verdict = BANK_IDP_UNAVAILABLE;
    out->why = why;
}

#define CLIENT_KEY "bank_idp:curl"

static apr_status_t client_cleanup(void *h)
{
    curl_easy_cleanup(h);
    return APR_SUCCESS;
}

/* This thread's handle: its connection cache outlives the request. */
static CURL *client(apr_pool_t *keep)
{
    void *h = NULL;
    apr_pool_userdata_get(&h, CLIENT_KEY, keep);
    if (!h && (h = curl_easy_init()) != NULL) {
        apr_pool_userdata_set(h, CLIENT_KEY, client_cleanup, keep);
    }
    return h;
}

typedef struct {
    apr_pool_t *p;
    char *buf;
    apr_size_t len, cap;
    int over;
} answer_t;

static size_t on_data(char *data, size_t size, size_t n, void *baton)
{
    answer_t *a = baton;
    apr_size_t add = size * n;

    if (a->len + add > BANK_IDP_MAX_ANSWER) {
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

static struct curl_slist *header(struct curl_slist *list, apr_pool_t *p, const char *name,
                                 const char *value)
{
    return curl_slist_append(list, apr_pstrcat(p, name, ": ", value, (char *)NULL));
}

void bank_idp_check(apr_pool_t *p, apr_pool_t *keep, const bank_idp_conf_t *c,
                    const bank_idp_query_t *q, bank_idp_result_t *out)
{
    CURL *h = client(keep);
    struct curl_slist *hdr = NULL;
    answer_t a = {p, NULL, 0, 4096, 0};
    long status = 0, connect = c->timeout < BANK_IDP_CONNECT_TIMEOUT_MAX
                                   ? c->timeout
                                   : BANK_IDP_CONNECT_TIMEOUT_MAX;
    CURLcode rc;

    memset(out, 0, sizeof(*out));
    if (!h) {
        unavailable(out, "libcurl could not make a handle");
        return;
    }
    a.buf = apr_palloc(p, a.cap);
    a.buf[0] = '\0';
    curl_easy_reset(h);                        /* keeps the open connections */
    curl_easy_setopt(h, CURLOPT_VERBOSE, 0L);  /* it would print the URL: a BVN and a date */
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for DNS timeouts */
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout * 1000L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect * 1000L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    /* The scheme the base URL passed bank_idp_url_check with; no redirects followed. */
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR,
                     strncasecmp(c->base_url, "https:", 6) == 0 ? "https" : "http");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    /* Only the proxy the configuration names: libcurl would otherwise take http_proxy,
     * https_proxy, ALL_PROXY and NO_PROXY from httpd's environment ("" turns that off). */
    curl_easy_setopt(h, CURLOPT_PROXY, c->proxy ? c->proxy : "");
    curl_easy_setopt(h, CURLOPT_NOPROXY, "");
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)BANK_IDP_MAX_ANSWER);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "mod_bank");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
    hdr = header(hdr, p, "Accept", "application/json");
    if (c->kind == BANK_IDP_DOJAH) {
        hdr = header(hdr, p, "AppId", c->app_id);
        hdr = header(hdr, p, "Authorization", c->secret); /* the key itself, no "Bearer" */
        curl_easy_setopt(h, CURLOPT_URL, bank_idp_dojah_url(p, c, q));
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        const char *body = bank_idp_prembly_body(p, q);
        hdr = header(hdr, p, "app-id", c->app_id);
        hdr = header(hdr, p, "x-api-key", c->secret);
        hdr = header(hdr, p, "Content-Type", "application/json");
        curl_easy_setopt(h, CURLOPT_URL,
                         apr_pstrcat(p, c->base_url, "/verification/bvn", (char *)NULL));
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    rc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdr);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connect) == CURLE_OK) {
        out->reused = rc == CURLE_OK && connect == 0;
    }
    if (a.over || rc == CURLE_FILESIZE_EXCEEDED) {
        unavailable(out,
                    apr_psprintf(p, "the answer is larger than %d bytes", BANK_IDP_MAX_ANSWER));
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        unavailable(out, apr_psprintf(p, "no answer within %d seconds (BankBvnProviderTimeout)",
                                      c->timeout));
    } else if (rc != CURLE_OK) {
        /* libcurl's generic text for the code: its error buffer may quote the URL */
        unavailable(out, apr_pstrcat(p, "no answer: ", curl_easy_strerror(rc), (char *)NULL));
    } else {
        int reused = out->reused;
        bank_idp_judge(p, c->kind, status, a.buf, a.len, q, out);
        out->reused = reused;
    }
}
