/* BVN verification by an identity provider (docs/identity.md): the providers, their base
 * URLs and credentials as the directives take them, and the two dialects: Dojah's "Validate
 * BVN" and Prembly's "BVN", each request built and each answer judged into one verdict. The
 * call itself is bank_idp_client.c, the circuit breaker bank_idp_breaker.c. Nothing here
 * logs: callers log the `why` texts, which never hold a BVN, a date or a credential. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <apr_uri.h>
#include <apr_file_io.h>
#include <apr_file_info.h>
#include <apr_user.h>
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

const char *bank_idp_proxy_check(apr_pool_t *p, const char *url)
{
    static const char *const schemes[] = {"http", "https", "socks5", "socks5h"};
    apr_uri_t u;
    int i;

    if (apr_uri_parse(p, url, &u) != APR_SUCCESS || !u.scheme || !u.hostname || !*u.hostname) {
        return "expected an absolute URL such as http://proxy.example.net:3128";
    }
    if (u.query || u.fragment || (u.path && strcmp(u.path, "/") != 0)) {
        return "the URL must not hold a path, a query or a fragment";
    }
    for (i = 0; i < 4; i++) {
        if (!strcasecmp(u.scheme, schemes[i])) {
            return NULL;
        }
    }
    return "the scheme must be http, https, socks5 or socks5h";
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

/* needle (lower-case ASCII) in s, ASCII case ignored. */
static int contains(const char *s, const char *needle)
{
    apr_size_t n = strlen(needle);
    for (; *s; s++) {
        if (!strncasecmp(s, needle, n)) {
            return 1;
        }
    }
    return 0;
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

/* A Dojah error answer {"error": "..."} whose text says the BVN was not found. */
static int dojah_not_found(apr_pool_t *p, const char *body, apr_size_t len)
{
    const char *why = NULL, *text;
    json_object *o = bank_json_parse_object(p, body, len, &why);

    return o && (text = str_member(o, "error")) != NULL && contains(text, "bvn") &&
           contains(text, "not found");
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
    /* Dojah answers a BVN it cannot find with a 400 or 404 and an error text saying so. The
     * same statuses also mean a malformed request or a wrong base URL: only that text makes
     * one a mismatch, which the customer pays an attempt for. */
    if (kind == BANK_IDP_DOJAH && (status == 400 || status == 404)) {
        if (dojah_not_found(p, body, len)) {
            mismatch(out, BANK_IDP_DIFF_UNKNOWN, "the provider knows no such BVN");
        } else {
            verdict(out, BANK_IDP_UNAVAILABLE,
                    apr_psprintf(p,
                                 "the provider answered HTTP %ld without saying \"BVN not "
                                 "found\" (a wrong BankBvnProvider URL?)",
                                 status));
        }
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
