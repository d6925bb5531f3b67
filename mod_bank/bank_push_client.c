/* FCM HTTP v1 over libcurl (docs/push.md): the OAuth 2 token exchange, then a round of
 * messages sent at once through one multi handle, whose connections (HTTP/2 where the
 * server offers it) stay open from one round to the next. TLS always verified; http:// only
 * where the configuration allowed it (a loopback address); timeouts on connecting and on
 * each call; answers capped at BANK_PUSH_MAX_ANSWER bytes; never verbose (libcurl would
 * print the bearer). */
#include <string.h>
#include <strings.h>
#include <apr_strings.h>
#include "bank_curl.h"
#include "bank_push.h"

struct bank_push_client_s {
    apr_pool_t *pool;
    bank_push_conf_t conf;
    const char *send_url;
    CURLM *multi;
    CURL *token_h;
    const char *bearer; /* in pool; NULL: none yet */
    apr_time_t bearer_until;
};

static apr_status_t client_cleanup(void *data)
{
    bank_push_client_t *cl = data;
    curl_multi_cleanup(cl->multi);
    curl_easy_cleanup(cl->token_h);
    return APR_SUCCESS;
}

bank_push_client_t *bank_push_client_create(apr_pool_t *p, const bank_push_conf_t *c)
{
    bank_push_client_t *cl = apr_pcalloc(p, sizeof(*cl));

    cl->pool = p;
    cl->conf = *c;
    cl->send_url =
        apr_pstrcat(p, c->base_url, "/v1/projects/", c->project, "/messages:send", (char *)NULL);
    cl->multi = curl_multi_init();
    cl->token_h = curl_easy_init();
    if (!cl->multi || !cl->token_h) {
        curl_multi_cleanup(cl->multi);
        curl_easy_cleanup(cl->token_h);
        return NULL;
    }
    /* Many calls at once: each FCM call waits a network round trip and Google's own work,
     * long beside a notice's commit, so a busy webhook is kept up with only by having many in
     * flight; over HTTP/2 they share a few connections. */
    curl_multi_setopt(cl->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 64L);
    curl_multi_setopt(cl->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    apr_pool_cleanup_register(p, cl, client_cleanup, apr_pool_cleanup_null);
    return cl;
}

/* One call: its answer, what it said in Retry-After, how it ended. */
typedef struct {
    bank_curl_answer_t a;
    int retry_after;
    CURLcode rc;
    int done;
    apr_time_t start;
} call_t;

static size_t on_header(char *data, size_t size, size_t n, void *baton)
{
    call_t *c = baton;
    apr_size_t len = size * n;
    static const char name[] = "retry-after:";

    if (len > sizeof(name) - 1 && strncasecmp(data, name, sizeof(name) - 1) == 0) {
        char *v = apr_pstrmemdup(c->a.p, data + sizeof(name) - 1, len - (sizeof(name) - 1));
        v += strspn(v, " \t");
        v[strcspn(v, "\r\n")] = '\0';
        c->retry_after = bank_push_retry_after(v, apr_time_now());
    }
    return len;
}

/* The options every call shares (bank_curl_safe), the URL, and Retry-After read into c. */
static void call_opts(CURL *h, const bank_push_conf_t *conf, const char *url, call_t *c,
                      apr_pool_t *p)
{
    bank_curl_answer_init(&c->a, p, BANK_PUSH_MAX_ANSWER);
    bank_curl_safe(h, url, conf->timeout, BANK_PUSH_CONNECT_TIMEOUT_MAX, &c->a);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
}

/* What went wrong with a call that brought no answer, in libcurl's generic words (its
 * error buffer may quote the URL). */
static const char *no_answer(apr_pool_t *p, const call_t *a, int timeout)
{
    if (a->a.over || a->rc == CURLE_FILESIZE_EXCEEDED) {
        return apr_psprintf(p, "the answer is larger than %d bytes", BANK_PUSH_MAX_ANSWER);
    }
    if (a->rc == CURLE_OPERATION_TIMEDOUT) {
        return apr_psprintf(p, "no answer within %d seconds (BankPushTimeout)", timeout);
    }
    return apr_pstrcat(p, "no answer: ", curl_easy_strerror(a->rc), (char *)NULL);
}

/* A bearer from the token endpoint, cached until BANK_PUSH_TOKEN_MARGIN before it ends. */
static const char *fetch_bearer(bank_push_client_t *cl, apr_pool_t *p)
{
    const bank_push_account_t *acc = cl->conf.account;
    apr_time_t now = apr_time_now();
    const char *jwt = bank_push_jwt(p, acc, apr_time_sec(now)), *body, *why, *bearer = NULL;
    call_t a;
    struct curl_slist *hdr = NULL;
    apr_int64_t expires = 0;
    long status = 0;

    if (!jwt) {
        return "cannot sign the service account's JWT (OpenSSL)";
    }
    body = bank_push_token_body(p, jwt);
    memset(&a, 0, sizeof(a));
    curl_easy_reset(cl->token_h);
    call_opts(cl->token_h, &cl->conf, acc->token_uri, &a, p);
    hdr = curl_slist_append(hdr, "Content-Type: application/x-www-form-urlencoded");
    hdr = curl_slist_append(hdr, "Accept: application/json");
    curl_easy_setopt(cl->token_h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(cl->token_h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(cl->token_h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    a.rc = curl_easy_perform(cl->token_h);
    curl_easy_setopt(cl->token_h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdr);
    if (a.rc != CURLE_OK || a.a.over) {
        return apr_pstrcat(p, "token endpoint: ", no_answer(p, &a, cl->conf.timeout), (char *)NULL);
    }
    curl_easy_getinfo(cl->token_h, CURLINFO_RESPONSE_CODE, &status);
    if ((why = bank_push_token_answer(p, status, a.a.buf, a.a.len, &bearer, &expires)) != NULL) {
        return why;
    }
    /* The bearer lives in the client's pool: a sub-pool per bearer would be tidier, but a
     * bearer an hour is a few hundred bytes a day. */
    cl->bearer = apr_pstrcat(cl->pool, "Authorization: Bearer ", bearer, (char *)NULL);
    cl->bearer_until = now + apr_time_from_sec(expires > BANK_PUSH_TOKEN_MARGIN * 2
                                                   ? expires - BANK_PUSH_TOKEN_MARGIN
                                                   : expires / 2);
    return NULL;
}

/* Adds a call per message whose index is in todo[0..n) to the multi handle: h[i] and calls[i]
 * (a handle that cannot be made: its call done at once, failed). */
static void calls_add(bank_push_client_t *cl, apr_pool_t *p, const bank_push_msg_t *msgs,
                      const int *todo, int n, struct curl_slist *hdr, CURL **h, call_t *calls)
{
    int i;

    for (i = 0; i < n; i++) {
        const char *body = bank_push_body(p, &msgs[todo[i]]);
        calls[i].start = apr_time_now();
        if (!(h[i] = curl_easy_init())) {
            calls[i].rc = CURLE_OUT_OF_MEMORY;
            calls[i].done = 1;
            continue;
        }
        call_opts(h[i], &cl->conf, cl->send_url, &calls[i], p);
        curl_easy_setopt(h[i], CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h[i], CURLOPT_COPYPOSTFIELDS, body);
        curl_easy_setopt(h[i], CURLOPT_PRIVATE, &calls[i]);
        curl_multi_add_handle(cl->multi, h[i]);
    }
}

/* Runs the multi handle's calls until none is running (each bounded by its timeout). */
static void calls_run(bank_push_client_t *cl)
{
    int running = 0, left;
    CURLMsg *m;

    do {
        if (curl_multi_perform(cl->multi, &running) != CURLM_OK) {
            break;
        }
        while ((m = curl_multi_info_read(cl->multi, &left)) != NULL) {
            call_t *c = NULL;
            if (m->msg == CURLMSG_DONE &&
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c) == CURLE_OK && c) {
                c->rc = m->data.result;
                c->done = 1;
            }
        }
        if (running) {
            curl_multi_poll(cl->multi, NULL, 0, 1000, NULL);
        }
    } while (running);
}

/* A call's outcome in r; its handle (NULL: none was made) removed and cleaned up. */
static void call_result(bank_push_client_t *cl, apr_pool_t *p, CURL *h, call_t *c,
                        bank_push_result_t *r)
{
    long status = 0;

    memset(r, 0, sizeof(*r));
    if (h) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_multi_remove_handle(cl->multi, h);
        curl_easy_cleanup(h);
    }
    r->took = apr_time_now() - c->start;
    r->retry_after = c->retry_after;
    if (!c->done || c->rc != CURLE_OK || c->a.over) {
        if (!c->done && c->rc == CURLE_OK) {
            c->rc = CURLE_ABORTED_BY_CALLBACK;
        }
        r->verdict = BANK_PUSH_RETRY;
        r->why = no_answer(p, c, cl->conf.timeout);
        return;
    }
    r->status = status;
    r->verdict = bank_push_judge(p, status, c->a.buf, c->a.len);
    r->why = r->verdict == BANK_PUSH_SENT ? NULL : apr_psprintf(p, "FCM answered HTTP %ld", status);
}

/* Sends the messages whose index is in todo[0..n) at once. */
static void round_send(bank_push_client_t *cl, apr_pool_t *p, const bank_push_msg_t *msgs,
                       const int *todo, int n, bank_push_result_t *out)
{
    CURL **h = apr_pcalloc(p, sizeof(*h) * (apr_size_t)n);
    call_t *calls = apr_pcalloc(p, sizeof(*calls) * (apr_size_t)n);
    struct curl_slist *hdr = NULL;
    int i;

    hdr = curl_slist_append(hdr, cl->bearer);
    hdr = curl_slist_append(hdr, "Content-Type: application/json; charset=UTF-8");
    calls_add(cl, p, msgs, todo, n, hdr, h, calls);
    calls_run(cl);
    for (i = 0; i < n; i++) {
        call_result(cl, p, h[i], &calls[i], &out[todo[i]]);
    }
    curl_slist_free_all(hdr);
}

static void all_retry(bank_push_result_t *out, int n, const char *why)
{
    int i;
    for (i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        out[i].verdict = BANK_PUSH_RETRY;
        out[i].why = why;
    }
}

const char *bank_push_send(bank_push_client_t *cl, apr_pool_t *p, const bank_push_msg_t *msgs,
                           int n, bank_push_result_t *out)
{
    int *todo = apr_palloc(p, sizeof(*todo) * (apr_size_t)(n > 0 ? n : 1)), i, again = 0;
    const char *why;

    if (n <= 0) {
        return NULL;
    }
    if ((!cl->bearer || apr_time_now() >= cl->bearer_until) &&
        (why = fetch_bearer(cl, p)) != NULL) {
        all_retry(out, n, why);
        return why;
    }
    for (i = 0; i < n; i++) {
        todo[i] = i;
    }
    round_send(cl, p, msgs, todo, n, out);
    /* A refused bearer (revoked, or the key rotated): a new one, once, for those calls. */
    for (i = 0; i < n; i++) {
        if (out[i].verdict == BANK_PUSH_AUTH) {
            todo[again++] = i;
        }
    }
    if (again) {
        cl->bearer = NULL;
        if ((why = fetch_bearer(cl, p)) != NULL) {
            for (i = 0; i < again; i++) {
                out[todo[i]].verdict = BANK_PUSH_RETRY;
                out[todo[i]].why = why;
            }
            return why;
        }
        round_send(cl, p, msgs, todo, again, out);
        for (i = 0; i < again; i++) {
            if (out[todo[i]].verdict == BANK_PUSH_AUTH) {
                out[todo[i]].verdict = BANK_PUSH_RETRY;
                out[todo[i]].why = "FCM refused a new bearer (HTTP 401)";
            }
        }
    }
    return NULL;
}
