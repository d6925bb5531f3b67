/* BVN verification by an identity provider (docs/identity.md): Dojah's "Validate BVN" and
 * Prembly's "BVN", one libcurl handle per thread, a circuit breaker per base URL. Nothing
 * here logs: callers log the `why` texts, which never hold a BVN, a date or a credential. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <apr_uri.h>
#include <apr_file_io.h>
#include <apr_file_info.h>
#include <apr_user.h>
#include <apr_atomic.h>
#include <curl/curl.h>
#include "bank_idp.h"
#include "bank_json.h"
#include "bank_account.h"
#include "bank_validate.h"

static const char *const kind_names[] = {"table", "dojah", "prembly"};

const char *bank_idp_kind_name(bank_idp_kind kind)
{
    return kind_names[kind];
}

int bank_idp_kind_parse(const char *name, bank_idp_kind *out)
{
    int i;
    for (i = 0; i < 3; i++) {
        if (strcasecmp(name, kind_names[i]) == 0) {
            *out = (bank_idp_kind)i;
            return 0;
        }
    }
    return -1;
}

const char *bank_idp_default_url(bank_idp_kind kind)
{
    switch (kind) {
    case BANK_IDP_DOJAH:
        return "https://api.dojah.io";
    case BANK_IDP_PREMBLY:
        return "https://api.prembly.com/identitypass";
    default:
        return NULL;
    }
}

/* 127.0.0.0/8, ::1 or localhost: where a plain-HTTP fake provider may listen (tests). */
static int loopback(const char *host)
{
    const char *c;
    if (!strcasecmp(host, "localhost") || !strcmp(host, "::1")) {
        return 1;
    }
    if (strncmp(host, "127.", 4) != 0) {
        return 0;
    }
    for (c = host + 4; *c; c++) {
        if (!apr_isdigit(*c) && *c != '.') {
            return 0;
        }
    }
    return 1;
}

const char *bank_idp_url_check(apr_pool_t *p, const char *url, const char **norm)
{
    apr_uri_t u;
    apr_size_t n = strlen(url);

    if (apr_uri_parse(p, url, &u) != APR_SUCCESS || !u.scheme || !u.hostname || !*u.hostname) {
        return "expected an absolute URL such as https://api.example.com";
    }
    if (u.user || u.password || u.query || u.fragment) {
        return "the URL must not hold user info, a query or a fragment";
    }
    if (strcasecmp(u.scheme, "https") != 0 &&
        (strcasecmp(u.scheme, "http") != 0 || !loopback(u.hostname))) {
        return "the URL must be https:// (http:// only to a loopback address, for tests)";
    }
    while (n > 0 && url[n - 1] == '/') {
        n--;
    }
    *norm = apr_pstrmemdup(p, url, n);
    return NULL;
}

const char *bank_idp_credential_check(const char *s)
{
    apr_size_t n = strlen(s), i;
    if (n < 1 || n > BANK_IDP_CREDENTIAL_MAX) {
        return "an app id or a secret must have 1 to 512 characters";
    }
    for (i = 0; i < n; i++) {
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 127) {
            return "an app id or a secret may hold printable ASCII characters only, no spaces";
        }
    }
    return NULL;
}

const char *bank_idp_credentials_file(apr_pool_t *p, const char *path, const char **app_id,
                                      const char **secret)
{
    apr_finfo_t fi;
    apr_file_t *f;
    apr_uid_t uid;
    apr_gid_t gid;
    char buf[2 * BANK_IDP_CREDENTIAL_MAX + 16], *last = NULL, *a, *s;
    apr_size_t n = sizeof(buf) - 1;
    const char *err;

    if (apr_stat(&fi, path, APR_FINFO_TYPE | APR_FINFO_PROT | APR_FINFO_OWNER, p) != APR_SUCCESS ||
        fi.filetype != APR_REG) {
        return "cannot read it as a regular file";
    }
    if (apr_uid_current(&uid, &gid, p) == APR_SUCCESS && fi.user != uid) {
        return "it must be owned by the user httpd starts as (root)";
    }
    if (fi.protection &
        (APR_GREAD | APR_GWRITE | APR_GEXECUTE | APR_WREAD | APR_WWRITE | APR_WEXECUTE)) {
        return "it must be readable by its owner only (chmod 600)";
    }
    if (apr_file_open(&f, path, APR_FOPEN_READ, 0, p) != APR_SUCCESS) {
        return "cannot open it";
    }
    memset(buf, 0, sizeof(buf));
    if (apr_file_read_full(f, buf, n, &n) != APR_SUCCESS && n == 0) {
        apr_file_close(f);
        return "it is empty";
    }
    apr_file_close(f);
    a = apr_strtok(buf, " \t\r\n", &last);
    s = a ? apr_strtok(NULL, " \t\r\n", &last) : NULL;
    if (!a || !s || apr_strtok(NULL, " \t\r\n", &last)) {
        return "it must hold exactly two words: APP-ID SECRET";
    }
    if ((err = bank_idp_credential_check(a)) != NULL || (err = bank_idp_credential_check(s))) {
        return err;
    }
    *app_id = apr_pstrdup(p, a);
    *secret = apr_pstrdup(p, s);
    memset(buf, 0, sizeof(buf));
    return NULL;
}

int bank_idp_global_init(void)
{
    static int done = 0;
    if (!done && curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK) {
        done = 1;
    }
    return done ? 0 : -1;
}

/* ---- the requests ---- */

/* RFC 3986 query component: unreserved characters as they are, every other byte %XX. */
static const char *query_escape(apr_pool_t *p, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = apr_palloc(p, strlen(s) * 3 + 1), *o = out;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (apr_isalnum(c) || strchr("-._~", c)) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = '\0';
    return out;
}

const char *bank_idp_dojah_url(apr_pool_t *p, const bank_idp_conf_t *c, const bank_idp_query_t *q)
{
    return apr_pstrcat(p, c->base_url, "/api/v1/kyc/bvn/full?bvn=", query_escape(p, q->bvn),
                       "&first_name=", query_escape(p, q->first),
                       "&last_name=", query_escape(p, q->last), "&dob=", query_escape(p, q->dob),
                       (char *)NULL);
}

const char *bank_idp_prembly_body(apr_pool_t *p, const bank_idp_query_t *q)
{
    json_object *o = bank_json_own(p, json_object_new_object());
    json_object_object_add(o, "number", json_object_new_string(q->bvn));
    return bank_json_text(p, o);
}

/* ---- the answers ---- */

static void verdict(bank_idp_result_t *out, bank_idp_verdict v, const char *why)
{
    out->verdict = v;
    out->why = why;
}

static void mismatch(bank_idp_result_t *out, bank_idp_diff what, const char *why)
{
    verdict(out, BANK_IDP_MISMATCH, why);
    out->diff = what;
}

const char *bank_idp_date(apr_pool_t *p, const char *s)
{
    static const char *const months[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                         "jul", "aug", "sep", "oct", "nov", "dec"};
    static const char *const full[] = {"january",   "february", "march",    "april",
                                       "may",       "june",     "july",     "august",
                                       "september", "october",  "november", "december"};
    int day, month = 0, i;
    const char *dash, *rest;
    apr_size_t len;

    if (strlen(s) == 10 && s[4] == '-' && s[7] == '-' && bank_all_digits(s, 4) &&
        bank_all_digits(s + 5, 2) && bank_all_digits(s + 8, 2)) {
        month = atoi(s + 5);
        day = atoi(s + 8);
        return day >= 1 && day <= 31 && month >= 1 && month <= 12 ? apr_pstrdup(p, s) : NULL;
    }
    /* D-Mon-YYYY or DD-Month-YYYY */
    if (!(dash = strchr(s, '-')) || dash - s < 1 || dash - s > 2 ||
        !bank_all_digits(s, (apr_size_t)(dash - s))) {
        return NULL;
    }
    day = atoi(s);
    rest = dash + 1;
    if (!(dash = strchr(rest, '-'))) {
        return NULL;
    }
    len = (apr_size_t)(dash - rest);
    for (i = 0; i < 12 && !month; i++) {
        if ((len == 3 && !strncasecmp(rest, months[i], 3)) ||
            (len == strlen(full[i]) && !strncasecmp(rest, full[i], len))) {
            month = i + 1;
        }
    }
    if (!month || strlen(dash + 1) != 4 || !bank_all_digits(dash + 1, 4) || day < 1 || day > 31) {
        return NULL;
    }
    return apr_psprintf(p, "%s-%02d-%02d", dash + 1, month, day);
}

/* A field of Dojah's entity: -1 when missing or without a boolean status. */
static int dojah_status(json_object *entity, const char *field)
{
    json_object *f, *st;
    if (!json_object_object_get_ex(entity, field, &f) ||
        !json_object_is_type(f, json_type_object) || !json_object_object_get_ex(f, "status", &st) ||
        !json_object_is_type(st, json_type_boolean)) {
        return -1;
    }
    return json_object_get_boolean(st);
}

static void judge_dojah(apr_pool_t *p, json_object *o, const bank_idp_query_t *q,
                        bank_idp_result_t *out)
{
    json_object *entity;
    int bvn, first, last, dob;

    if (!json_object_object_get_ex(o, "entity", &entity) ||
        !json_object_is_type(entity, json_type_object) || (bvn = dojah_status(entity, "bvn")) < 0) {
        verdict(out, BANK_IDP_UNAVAILABLE, "malformed answer: no entity.bvn.status");
        return;
    }
    if (!bvn) {
        mismatch(out, BANK_IDP_DIFF_UNKNOWN, "the provider knows no such BVN");
        return;
    }
    first = dojah_status(entity, "first_name");
    last = dojah_status(entity, "last_name"); /* not in every answer the docs show */
    dob = dojah_status(entity, "date_of_birth");
    if (first < 0 || dob < 0) {
        verdict(out, BANK_IDP_UNAVAILABLE,
                "malformed answer: no first_name or date_of_birth status");
    } else if (!dob) {
        mismatch(out, BANK_IDP_DIFF_DATE, "the date of birth differs from the provider's");
    } else if (!first || last == 0) {
        mismatch(out, BANK_IDP_DIFF_NAMES, "the names differ from the provider's");
    } else {
        verdict(out, BANK_IDP_MATCH, "matched");
        out->first = apr_pstrdup(p, q->first);
        out->last = apr_pstrdup(p, q->last);
    }
}

/* A string member, or NULL. */
static const char *str_member(json_object *o, const char *name)
{
    json_object *v;
    if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string)) {
        return NULL;
    }
    return json_object_get_string(v);
}

static void judge_prembly(apr_pool_t *p, json_object *o, const bank_idp_query_t *q,
                          bank_idp_result_t *out)
{
    const char *code = str_member(o, "response_code"), *first, *last, *dob;
    json_object *data, *status;

    if (!code) {
        verdict(out, BANK_IDP_UNAVAILABLE, "malformed answer: no response_code");
    } else if (!strcmp(code, "01")) {
        mismatch(out, BANK_IDP_DIFF_UNKNOWN, "the provider knows no such BVN (response_code 01)");
    } else if (!strcmp(code, "07")) {
        mismatch(out, BANK_IDP_DIFF_UNKNOWN,
                 "the BVN is blocked or watch-listed (response_code 07)");
    } else if (!strcmp(code, "02")) {
        verdict(out, BANK_IDP_UNAVAILABLE, "the provider cannot verify now (response_code 02)");
    } else if (!strcmp(code, "03")) {
        verdict(out, BANK_IDP_REFUSED,
                "the provider account has an insufficient wallet balance (response_code 03)");
    } else if (strcmp(code, "00") != 0) {
        verdict(out, BANK_IDP_UNAVAILABLE, "unknown response_code");
    } else if (!json_object_object_get_ex(o, "status", &status) ||
               !json_object_get_boolean(status) || !json_object_object_get_ex(o, "data", &data) ||
               !json_object_is_type(data, json_type_object) ||
               !(first = str_member(data, "firstName")) || !(last = str_member(data, "lastName")) ||
               !(dob = str_member(data, "dateOfBirth"))) {
        verdict(out, BANK_IDP_UNAVAILABLE, "malformed answer: response_code 00 without data");
    } else if (!(dob = bank_idp_date(p, dob))) {
        verdict(out, BANK_IDP_UNAVAILABLE, "malformed answer: unreadable dateOfBirth");
    } else if (strcmp(dob, q->dob) != 0) {
        mismatch(out, BANK_IDP_DIFF_DATE, "the date of birth differs from the provider's");
    } else if (!bank_names_match(p, first, last, q->first, q->last)) {
        mismatch(out, BANK_IDP_DIFF_NAMES, "the names differ from the provider's");
    } else {
        verdict(out, BANK_IDP_MATCH, "matched");
        out->first = apr_pstrdup(p, first);
        out->last = apr_pstrdup(p, last);
    }
}

void bank_idp_judge(apr_pool_t *p, bank_idp_kind kind, long status, const char *body,
                    apr_size_t len, const bank_idp_query_t *q, bank_idp_result_t *out)
{
    const char *why = NULL;
    json_object *o;

    out->http_status = status;
    out->first = out->last = NULL;
    out->diff = BANK_IDP_DIFF_NONE;
    if (status == 401 || status == 403) {
        verdict(out, BANK_IDP_REFUSED, "the provider refused the credentials");
        return;
    }
    if (status == 402) {
        verdict(out, BANK_IDP_REFUSED, "the provider wants payment (HTTP 402)");
        return;
    }
    /* Dojah answers a BVN it cannot find with a 400 or 404 and an error text. */
    if (kind == BANK_IDP_DOJAH && (status == 400 || status == 404)) {
        mismatch(out, BANK_IDP_DIFF_UNKNOWN, "the provider knows no such BVN (HTTP 400/404)");
        return;
    }
    /* Prembly may put a "not found" response_code on a 404. */
    if (status != 200 && !(kind == BANK_IDP_PREMBLY && status == 404)) {
        verdict(out, BANK_IDP_UNAVAILABLE,
                apr_psprintf(p, "the provider answered HTTP %ld", status));
        return;
    }
    if (!(o = bank_json_parse_object(p, body, len, &why))) {
        verdict(out, BANK_IDP_UNAVAILABLE, "malformed answer: not a JSON object");
        return;
    }
    if (kind == BANK_IDP_DOJAH) {
        judge_dojah(p, o, q, out);
    } else {
        judge_prembly(p, o, q, out);
    }
}

/* ---- the client ---- */

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
        verdict(out, BANK_IDP_UNAVAILABLE, "libcurl could not make a handle");
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
        verdict(out, BANK_IDP_UNAVAILABLE,
                apr_psprintf(p, "the answer is larger than %d bytes", BANK_IDP_MAX_ANSWER));
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        verdict(
            out, BANK_IDP_UNAVAILABLE,
            apr_psprintf(p, "no answer within %d seconds (BankBvnProviderTimeout)", c->timeout));
    } else if (rc != CURLE_OK) {
        /* libcurl's generic text for the code: its error buffer may quote the URL */
        verdict(out, BANK_IDP_UNAVAILABLE,
                apr_pstrcat(p, "no answer: ", curl_easy_strerror(rc), (char *)NULL));
    } else {
        int reused = out->reused;
        bank_idp_judge(p, c->kind, status, a.buf, a.len, q, out);
        out->reused = reused;
    }
}

/* ---- the circuit breaker ----
 * Lock-free over a block of shared memory, so every process of a server sees one breaker
 * per base URL: a slot holds a hash of the URL, the failures in a row and the second the
 * breaker closes again. */

#define BREAKER_SLOTS 64

typedef struct {
    volatile apr_uint32_t key; /* FNV-1a of the URL, never 0; 0: a free slot */
    volatile apr_uint32_t failures;
    volatile apr_uint32_t open_until; /* seconds since the epoch */
} breaker_slot;

struct bank_idp_breaker_s {
    breaker_slot slot[BREAKER_SLOTS];
};

apr_size_t bank_idp_breaker_size(void)
{
    return sizeof(bank_idp_breaker_t);
}

bank_idp_breaker_t *bank_idp_breaker_at(void *mem)
{
    memset(mem, 0, sizeof(bank_idp_breaker_t));
    return mem;
}

/* The slot of url, taken on first use; NULL when every slot holds another URL: that URL
 * then goes without a breaker. */
static breaker_slot *find(bank_idp_breaker_t *b, const char *url)
{
    apr_uint32_t h = 2166136261u, i;
    for (; *url; url++) {
        h = (h ^ (unsigned char)*url) * 16777619u;
    }
    h = h ? h : 1;
    for (i = 0; i < BREAKER_SLOTS; i++) {
        breaker_slot *s = &b->slot[(h + i) % BREAKER_SLOTS];
        apr_uint32_t k = apr_atomic_read32(&s->key);
        if (k == 0) {
            k = apr_atomic_cas32(&s->key, h, 0);
            k = k ? k : h;
        }
        if (k == h) {
            return s;
        }
    }
    return NULL;
}

int bank_idp_breaker_allow(bank_idp_breaker_t *b, const char *url, apr_time_t now)
{
    breaker_slot *s = b ? find(b, url) : NULL;
    apr_uint32_t sec = (apr_uint32_t)apr_time_sec(now), until;

    if (!s || apr_atomic_read32(&s->failures) < BANK_IDP_BREAKER_FAILURES) {
        return 0;
    }
    until = apr_atomic_read32(&s->open_until);
    if (sec < until) {
        return (int)(until - sec);
    }
    /* Half open: the one call that moves the closing time on is the trial; the others
     * wait for its outcome. */
    if (apr_atomic_cas32(&s->open_until, sec + BANK_IDP_BREAKER_OPEN, until) == until) {
        return 0;
    }
    until = apr_atomic_read32(&s->open_until);
    return sec < until ? (int)(until - sec) : 1;
}

int bank_idp_breaker_record(bank_idp_breaker_t *b, const char *url, int ok, apr_time_t now)
{
    breaker_slot *s = b ? find(b, url) : NULL;

    if (!s) {
        return 0;
    }
    if (ok) {
        apr_atomic_set32(&s->failures, 0);
        apr_atomic_set32(&s->open_until, 0);
        return 0;
    }
    if (apr_atomic_inc32(&s->failures) + 1 < BANK_IDP_BREAKER_FAILURES) {
        return 0;
    }
    apr_atomic_set32(&s->open_until, (apr_uint32_t)apr_time_sec(now) + BANK_IDP_BREAKER_OPEN);
    return 1;
}
