/* Payment notices: the payload of docs/api.md checked field by field into what is stored,
 * and the partner's HMAC signature of the raw body. */
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <apr_strings.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include "bank_json.h"
#include "bank_notice.h"
#include "bank_encoding.h"
#include "bank_validate.h"

typedef enum { F_STRING, F_INTEGER, F_NUMBER, F_ANY } field_kind;

/* The members of `data`, in the interface's order. Lengths are characters; free text may be
 * empty. `key`: part of the idempotency key, so required whatever the service and type. */
static const struct {
    const char *name;
    field_kind kind;
    apr_size_t min, max;
    int key;
    size_t offset;
} fields[] = {
    {"amount", F_INTEGER, 0, 0, 0, offsetof(bank_notice_t, amount)},
    {"charges", F_NUMBER, 0, 0, 0, offsetof(bank_notice_t, charges)},
    {"currency", F_STRING, 1, 16, 0, offsetof(bank_notice_t, currency)},
    {"narration", F_STRING, 0, 1024, 0, offsetof(bank_notice_t, narration)},
    {"receiverAccountName", F_STRING, 0, 256, 0, offsetof(bank_notice_t, receiver_account_name)},
    {"receiverAccountNumber", F_STRING, 1, 64, 0, offsetof(bank_notice_t, receiver_account_number)},
    {"receiverBankCode", F_STRING, 1, 32, 0, offsetof(bank_notice_t, receiver_bank_code)},
    {"sessionId", F_STRING, 1, 128, 0, offsetof(bank_notice_t, session_id)},
    {"statusCode", F_STRING, 1, 64, 1, offsetof(bank_notice_t, status_code)},
    {"statusMessage", F_STRING, 0, 1024, 0, offsetof(bank_notice_t, status_message)},
    {"transactionReference", F_STRING, 1, 128, 1, offsetof(bank_notice_t, transaction_reference)},
    {"walletId", F_STRING, 1, 128, 0, offsetof(bank_notice_t, wallet_id)},
    {"clientRef", F_ANY, 0, 0, 0, offsetof(bank_notice_t, client_ref)},
    {"customerReference", F_ANY, 0, 0, 0, offsetof(bank_notice_t, customer_reference)},
};

static const char *fail(apr_array_header_t *errs, const char *path, const char *rule,
                        const char *fmt)
{
    bank_errors_add(errs, path, rule, apr_psprintf(errs->pool, fmt, path));
    return NULL;
}

/* A JSON integer 0..BANK_NOTICE_AMOUNT_MAX, as decimal text. json-c saturates integers
 * beyond 64 bits, which the upper bound then refuses. */
static const char *integer(apr_array_header_t *errs, json_object *v, const char *path)
{
    apr_int64_t n;

    if (json_object_is_type(v, json_type_double) && json_object_get_double(v) == 0 &&
        signbit(json_object_get_double(v))) {
        return fail(errs, path, "min", "The %s field must be at least 0"); /* -0 */
    }
    if (json_object_is_type(v, json_type_double)) {
        return fail(errs, path, "withoutDecimals", "The %s field must be an integer");
    }
    if (!json_object_is_type(v, json_type_int)) {
        return fail(errs, path, "number", "The %s field must be a number");
    }
    n = json_object_get_int64(v);
    if (n < 0) {
        return fail(errs, path, "min", "The %s field must be at least 0");
    }
    if (n > BANK_NOTICE_AMOUNT_MAX) {
        return fail(errs, path, "max", "The %s field must not be greater than 9007199254740991");
    }
    return apr_psprintf(errs->pool, "%" APR_INT64_T_FMT, n);
}

/* An integer literal beyond 64 bits: json-c kept only the end of its range, not the value
 * sent, so storing it would record a number the partner never sent. */
static const char *beyond_64_bits(apr_array_header_t *errs, const char *path)
{
    return fail(errs, path, "range", "The %s field holds an integer beyond 64 bits");
}

/* A non-negative JSON number (integer or not), as its text: json-c keeps the text of a
 * parsed double, so 12.50 stays 12.50. (The parser has refused numbers beyond a double.)
 * Negative zero (-0, -0.0, -1e-400) is negative; a number whose text a double does not
 * give back (bank_json_number_exact: 1e-400, 0.30000000000000001) is refused, since what
 * is stored would not be what a reader of it gets. */
static const char *number(apr_array_header_t *errs, json_object *v, const char *path)
{
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
        return fail(errs, path, "number", "The %s field must be a number");
    }
    if (bank_json_int_saturated(v)) {
        return beyond_64_bits(errs, path);
    }
    if (json_object_get_double(v) < 0 || signbit(json_object_get_double(v))) {
        return fail(errs, path, "min", "The %s field must be at least 0");
    }
    if (!bank_json_number_exact(v)) {
        return fail(errs, path, "roundTrip",
                    "The %s field must be a number a double holds as written");
    }
    return bank_json_text(errs->pool, v);
}

/* One member of data into *out (NULL if absent or failed, with its error added). */
static void read_field(apr_array_header_t *errs, json_object *data, int i, int full,
                       const char **out)
{
    const char *path = apr_pstrcat(errs->pool, "data.", fields[i].name, (char *)NULL);
    json_object *v = NULL;
    int present = json_object_object_get_ex(data, fields[i].name, &v) && v != NULL;

    *out = NULL;
    if (!present) {
        /* clientRef and customerReference are optional; JSON null is stored as NULL. */
        if (fields[i].kind != F_ANY && (full || fields[i].key)) {
            fail(errs, path, "required", "The %s field must be defined");
        }
        return;
    }
    switch (fields[i].kind) {
    case F_STRING:
        *out = bank_v_string_at(errs, data, fields[i].name, path, fields[i].min, fields[i].max);
        break;
    case F_INTEGER:
        *out = integer(errs, v, path);
        break;
    case F_NUMBER:
        *out = number(errs, v, path);
        break;
    case F_ANY:
        *out =
            bank_json_int_saturated(v) ? beyond_64_bits(errs, path) : bank_json_text(errs->pool, v);
        break;
    }
}

bank_notice_t *bank_notice_read(apr_pool_t *p, json_object *body, apr_array_header_t *errs)
{
    bank_notice_t *n = apr_pcalloc(p, sizeof(*n));
    json_object *data = NULL;
    int before = errs->nelts, full, i;

    n->service = bank_v_string(errs, body, "service", 1, 64);
    n->type = bank_v_string(errs, body, "type", 1, 64);
    /* Only a notice we recognise must carry every field; any other is kept for the record. */
    full = !n->service || !n->type ||
           (!strcmp(n->service, BANK_NOTICE_SERVICE) && !strcmp(n->type, BANK_NOTICE_TYPE));
    n->status = full ? "received" : "ignored";
    if (!json_object_object_get_ex(body, "data", &data) || data == NULL) {
        fail(errs, "data", "required", "The %s field must be defined");
    } else if (!json_object_is_type(data, json_type_object)) {
        fail(errs, "data", "object", "The %s field must be an object");
    } else {
        for (i = 0; i < (int)(sizeof(fields) / sizeof(fields[0])); i++) {
            read_field(errs, data, i, full, (const char **)((char *)n + fields[i].offset));
        }
    }
    return errs->nelts == before ? n : NULL;
}

/* The partner's key, made once: the HMAC algorithm and the digest fetched and the key set in
 * keyed, which each check copies (EVP_MAC_CTX_dup only reads it, so the threads of a process
 * share it); nothing is looked up per notice. OpenSSL's one-shot HMAC() fetches the MAC and
 * the digest again on every call, through the provider store's process-wide lock. */
struct bank_notice_key_s {
    EVP_MAC_CTX *keyed;
    size_t maclen;
};

static apr_status_t free_key(void *data)
{
    bank_notice_key_t *k = data;

    EVP_MAC_CTX_free(k->keyed); /* OpenSSL wipes the key state it holds */
    k->keyed = NULL;
    return APR_SUCCESS;
}

bank_notice_key_t *bank_notice_key_make(apr_pool_t *p, int bits, const char *key)
{
    const char *digest = bits == 512 ? "SHA512" : "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", (char *)digest, 0),
                           OSSL_PARAM_construct_end()};
    EVP_MAC *mac =
        (bits == 256 || bits == 512) && key && *key ? EVP_MAC_fetch(NULL, "HMAC", NULL) : NULL;
    EVP_MAC_CTX *c = mac ? EVP_MAC_CTX_new(mac) : NULL;
    bank_notice_key_t *k;

    EVP_MAC_free(mac); /* the context holds its own reference */
    if (!c || !EVP_MAC_init(c, (const unsigned char *)key, strlen(key), params)) {
        EVP_MAC_CTX_free(c);
        return NULL;
    }
    k = apr_pcalloc(p, sizeof(*k));
    k->keyed = c;
    k->maclen = EVP_MAC_CTX_get_mac_size(c);
    apr_pool_cleanup_register(p, k, free_key, apr_pool_cleanup_null);
    return k;
}

/* given as maclen bytes, into got; 0 if a character is not a hex digit. Every character is
 * read whatever the others are. */
static int unhex(const char *given, unsigned char *got, size_t maclen)
{
    size_t i;
    int bad = 0;

    for (i = 0; i < maclen; i++) {
        int hi = bank_hex_digit((unsigned char)given[2 * i]),
            lo = bank_hex_digit((unsigned char)given[2 * i + 1]);
        bad |= hi < 0 || lo < 0;
        got[i] = (unsigned char)(((hi & 0xf) << 4) | (lo & 0xf));
    }
    return !bad;
}

int bank_notice_signature_ok(const bank_notice_key_t *k, const void *data, apr_size_t len,
                             const char *given)
{
    unsigned char mac[EVP_MAX_MD_SIZE], got[EVP_MAX_MD_SIZE];
    size_t maclen = 0;
    EVP_MAC_CTX *c;
    int ok;

    /* The length is public (it follows from the algorithm); the content is compared in full. */
    if (!k || !k->keyed || !given || strlen(given) != 2 * k->maclen || k->maclen > sizeof(mac)) {
        return 0;
    }
    c = EVP_MAC_CTX_dup(k->keyed);
    ok = c && EVP_MAC_update(c, data, len) && EVP_MAC_final(c, mac, &maclen, sizeof(mac)) &&
         maclen == k->maclen;
    EVP_MAC_CTX_free(c);
    ok = unhex(given, got, k->maclen) & ok;
    return ok && CRYPTO_memcmp(got, mac, k->maclen) == 0;
}
