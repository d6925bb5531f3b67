/* FCM HTTP v1's pure side (docs/push.md): the service account, the RS256 JWT of Google's
 * OAuth 2 service-account flow (signed with OpenSSL), the message, the judging of the
 * answers and the retry schedule. */
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <apr_strings.h>
#include <apr_date.h>
#include <apr_lib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include "bank_push.h"
#include "bank_idp.h"
#include "bank_json.h"
#include "bank_encoding.h"

static apr_status_t key_free(void *k)
{
    EVP_PKEY_free(k);
    return APR_SUCCESS;
}

/* A text member of the service account's object, or NULL. */
static const char *member(json_object *o, const char *name)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, name, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : NULL;
}

const char *bank_push_url_check(apr_pool_t *p, const char *url, const char **norm)
{
    return bank_idp_url_check(p, url, norm);
}

const char *bank_push_fcm_check(apr_pool_t *p, const char *kind, const char *project,
                                const char *url, const char **base_url)
{
    const char *why;

    if (strcasecmp(kind, "fcm") != 0) {
        return apr_psprintf(p, "expected fcm, got '%s'", kind);
    }
    /* Firebase project ids: 6 to 30 lower-case letters, digits and hyphens. */
    if (strlen(project) < 1 || strlen(project) > 64 ||
        strspn(project, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(project)) {
        return apr_psprintf(p,
                            "the project id holds lower-case letters, digits and hyphens only "
                            "(1 to 64), got '%s'",
                            project);
    }
    *base_url = BANK_PUSH_BASE_DEFAULT;
    if (url && (why = bank_push_url_check(p, url, base_url)) != NULL) {
        return apr_psprintf(p, "%s, got '%s'", why, url);
    }
    return NULL;
}

const char *bank_push_account_parse(apr_pool_t *p, const char *text, apr_size_t len,
                                    bank_push_account_t *out)
{
    const char *why = NULL, *pem, *email, *uri, *norm;
    json_object *o = bank_json_parse_object(p, text, len, &why);
    BIO *bio;
    EVP_PKEY *key;

    if (!o) {
        return "it is not a JSON object (expected a Google service-account key file)";
    }
    email = member(o, "client_email");
    uri = member(o, "token_uri");
    pem = member(o, "private_key");
    if (!email || !*email || !uri || !pem) {
        return "it must hold client_email, private_key and token_uri (a Google service-account "
               "key file)";
    }
    if ((why = bank_idp_url_check(p, uri, &norm)) != NULL) {
        return apr_pstrcat(p, "its token_uri: ", why, (char *)NULL);
    }
    if (!(bio = BIO_new_mem_buf(pem, (int)strlen(pem)))) {
        return "out of memory";
    }
    key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (!key || EVP_PKEY_base_id(key) != EVP_PKEY_RSA) {
        EVP_PKEY_free(key);
        return "its private_key is not a PEM RSA private key";
    }
    apr_pool_cleanup_register(p, key, key_free, apr_pool_cleanup_null);
    out->client_email = apr_pstrdup(p, email);
    out->token_uri = apr_pstrdup(p, uri);
    out->key_id = member(o, "private_key_id") ? apr_pstrdup(p, member(o, "private_key_id")) : NULL;
    out->key = key;
    return NULL;
}

const char *bank_push_account_file(apr_pool_t *p, const char *path, bank_push_account_t *out)
{
    char *text = NULL;
    apr_size_t len = 0;
    const char *why = bank_secret_file_read(p, path, BANK_PUSH_CREDENTIALS_MAX, &text, &len);

    if (!why) {
        why = bank_push_account_parse(p, text, len, out);
        memset(text, 0, len); /* the key's PEM text: only the parsed key stays */
    }
    return why;
}

static const char *b64url_text(apr_pool_t *p, const char *s)
{
    return bank_b64url_encode(p, (const unsigned char *)s, strlen(s));
}

const char *bank_push_jwt(apr_pool_t *p, const bank_push_account_t *a, apr_int64_t now)
{
    json_object *claims = bank_json_own(p, json_object_new_object()),
                *header = bank_json_own(p, json_object_new_object());
    const char *input;
    unsigned char *sig;
    size_t siglen = 0;
    EVP_MD_CTX *md;
    int ok;

    json_object_object_add(claims, "iss", json_object_new_string(a->client_email));
    json_object_object_add(claims, "scope", json_object_new_string(BANK_PUSH_SCOPE));
    json_object_object_add(claims, "aud", json_object_new_string(a->token_uri));
    json_object_object_add(claims, "iat", json_object_new_int64(now));
    json_object_object_add(claims, "exp", json_object_new_int64(now + BANK_PUSH_JWT_LIFETIME));
    json_object_object_add(header, "alg", json_object_new_string("RS256"));
    json_object_object_add(header, "typ", json_object_new_string("JWT"));
    if (a->key_id) {
        json_object_object_add(header, "kid", json_object_new_string(a->key_id));
    }
    input = apr_pstrcat(p, b64url_text(p, bank_json_text(p, header)), ".",
                        b64url_text(p, bank_json_text(p, claims)), (char *)NULL);
    if (!(md = EVP_MD_CTX_new())) {
        return NULL;
    }
    ok = EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, a->key) == 1 &&
         EVP_DigestSign(md, NULL, &siglen, (const unsigned char *)input, strlen(input)) == 1;
    sig = ok ? apr_palloc(p, siglen) : NULL;
    ok = ok && EVP_DigestSign(md, sig, &siglen, (const unsigned char *)input, strlen(input)) == 1;
    EVP_MD_CTX_free(md);
    return ok ? apr_pstrcat(p, input, ".", bank_b64url_encode(p, sig, siglen), (char *)NULL) : NULL;
}

/* application/x-www-form-urlencoded: the JWT's characters (base64url and '.') need none. */
const char *bank_push_token_body(apr_pool_t *p, const char *assertion)
{
    return apr_pstrcat(p,
                       "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
                       "&assertion=",
                       assertion, (char *)NULL);
}

const char *bank_push_token_answer(apr_pool_t *p, long status, const char *body, apr_size_t len,
                                   const char **bearer, apr_int64_t *expires_in)
{
    const char *why = NULL, *t;
    json_object *o, *v = NULL;

    if (status != 200) {
        return apr_psprintf(p, "the token endpoint answered HTTP %ld", status);
    }
    if (!(o = bank_json_parse_object(p, body, len, &why))) {
        return "the token endpoint's answer is not a JSON object";
    }
    t = member(o, "access_token");
    if (!t || !*t ||
        strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                  "0123456789-._~+/=") != strlen(t)) {
        return "the token endpoint's answer holds no usable access_token";
    }
    *expires_in =
        json_object_object_get_ex(o, "expires_in", &v) && json_object_is_type(v, json_type_int)
            ? json_object_get_int64(v)
            : BANK_PUSH_JWT_LIFETIME;
    *bearer = apr_pstrdup(p, t);
    return NULL;
}

static void data_add(json_object *d, const char *name, const char *value)
{
    json_object_object_add(d, name, json_object_new_string(value ? value : ""));
}

const char *bank_push_body(apr_pool_t *p, const bank_push_msg_t *m)
{
    json_object *root = bank_json_own(p, json_object_new_object());
    json_object *msg = json_object_new_object(), *note = json_object_new_object(),
                *data = json_object_new_object();
    int ok = m->status_code && strcmp(m->status_code, "T100") == 0;
    const char *who = m->receiver_name && *m->receiver_name ? m->receiver_name : "the receiver";

    json_object_object_add(root, "message", msg);
    json_object_object_add(msg, "token", json_object_new_string(m->device_token));
    json_object_object_add(msg, "notification", note);
    json_object_object_add(
        note, "title",
        json_object_new_string(ok ? "Transfer successful" : "Transfer not completed"));
    json_object_object_add(
        note, "body",
        json_object_new_string(apr_pstrcat(
            p, m->currency ? m->currency : "", m->currency ? " " : "", m->amount ? m->amount : "",
            " to ", who, m->status_message && *m->status_message ? ": " : "",
            m->status_message ? m->status_message : "", (char *)NULL)));
    json_object_object_add(msg, "data", data);
    data_add(data, "type", "fund_transfer");
    data_add(data, "amount", m->amount);
    data_add(data, "currency", m->currency);
    data_add(data, "receiverAccountName", m->receiver_name);
    data_add(data, "statusCode", m->status_code);
    data_add(data, "statusMessage", m->status_message);
    data_add(data, "transactionReference", m->reference);
    return bank_json_text(p, root);
}

/* FCM's error status ("UNREGISTERED", "INVALID_ARGUMENT", ...) of an answer, or "". */
static const char *fcm_status(const char *body, apr_size_t len, apr_pool_t *p)
{
    const char *why = NULL, *s;
    json_object *o = body ? bank_json_parse_object(p, body, len, &why) : NULL, *e = NULL;

    if (!o || !json_object_object_get_ex(o, "error", &e)) {
        return "";
    }
    s = member(e, "status");
    return s ? s : "";
}

/* An INVALID_ARGUMENT is about the token when its details or message name the field
 * message.token; any other is about our message (not the device's fault). */
static int about_token(const char *body)
{
    return body && (strstr(body, "message.token") || strstr(body, "registration token"));
}

bank_push_verdict bank_push_judge(apr_pool_t *p, long status, const char *body, apr_size_t len)
{
    const char *s;

    if (status == 200) {
        return BANK_PUSH_SENT;
    }
    if (status == 0 || status == 429 || status >= 500 || status == 408) {
        return BANK_PUSH_RETRY;
    }
    if (status == 401) {
        return BANK_PUSH_AUTH;
    }
    s = fcm_status(body, len, p);
    if (status == 404 || strcmp(s, "UNREGISTERED") == 0 ||
        (status == 400 && strcmp(s, "INVALID_ARGUMENT") == 0 && about_token(body))) {
        return BANK_PUSH_UNREGISTERED;
    }
    return BANK_PUSH_REJECTED;
}

apr_interval_time_t bank_push_backoff(int attempts, int retry_after, double rnd)
{
    apr_int64_t cap = BANK_PUSH_BACKOFF_BASE;
    apr_interval_time_t d;
    int i;

    for (i = 1; i < attempts && cap < BANK_PUSH_BACKOFF_MAX; i++) {
        cap *= 2;
    }
    if (cap > BANK_PUSH_BACKOFF_MAX) {
        cap = BANK_PUSH_BACKOFF_MAX;
    }
    d = (apr_interval_time_t)((double)apr_time_from_sec(cap) * (0.5 + rnd / 2));
    if (retry_after > BANK_PUSH_RETRY_AFTER_MAX) {
        retry_after = BANK_PUSH_RETRY_AFTER_MAX;
    }
    if (retry_after > 0 && d < apr_time_from_sec(retry_after)) {
        d = apr_time_from_sec(retry_after);
    }
    return d;
}

int bank_push_retry_after(const char *value, apr_time_t now)
{
    apr_time_t when;
    apr_int64_t n;

    if (!value || !*value) {
        return 0;
    }
    if (strspn(value, "0123456789") == strlen(value)) {
        n = strlen(value) > 9 ? BANK_PUSH_RETRY_AFTER_MAX : apr_atoi64(value);
        return n > BANK_PUSH_RETRY_AFTER_MAX ? BANK_PUSH_RETRY_AFTER_MAX : (int)n;
    }
    if ((when = apr_date_parse_http(value)) == APR_DATE_BAD || when <= now) {
        return 0;
    }
    n = apr_time_sec(when - now) + 1;
    return n > BANK_PUSH_RETRY_AFTER_MAX ? BANK_PUSH_RETRY_AFTER_MAX : (int)n;
}

int bank_push_cpu_ticks(const char *text, apr_uint64_t *total, apr_uint64_t *idle)
{
    const char *at;
    char *end = NULL;
    apr_uint64_t v;
    int i;

    if (strncmp(text, "cpu ", 4) != 0) {
        return 0;
    }
    *total = *idle = 0;
    at = text + 4;
    /* user nice system idle iowait irq softirq steal; guest and guest_nice are counted in
     * user and nice already */
    for (i = 0; i < 8; i++) {
        while (*at == ' ') {
            at++;
        }
        if (!apr_isdigit(*at)) {
            return i >= 4; /* old kernels stop after idle */
        }
        errno = 0;
        v = (apr_uint64_t)apr_strtoi64(at, &end, 10);
        if (errno || end == at) {
            return 0;
        }
        *total += v;
        if (i == 3 || i == 4) {
            *idle += v;
        }
        at = end;
    }
    return 1;
}

int bank_push_cpu_spare(apr_uint64_t total0, apr_uint64_t idle0, apr_uint64_t total1,
                        apr_uint64_t idle1, int percent)
{
    apr_uint64_t dt = total1 - total0, di = idle1 - idle0;

    if (total1 <= total0 || idle1 < idle0 || di > dt) {
        return 1; /* nothing passed, or the counters went back: no reading */
    }
    return di * 100 >= dt * (apr_uint64_t)percent;
}
