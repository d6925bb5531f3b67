/* AdonisJS v6 opaque access tokens (docs/api.md): oat_<b64url(id)>.<b64url(secret)>. */
#include <string.h>

#include <apr_strings.h>
#include <apr_lib.h>

#include "bank_json.h"
#include "bank_limits.h"
#include "bank_token.h"
#include "bank_digest.h"
#include "bank_encoding.h"
#include "bank_rand.h"

/* Ids are database keys (bigint): canonical decimal, 1..9223372036854775807. One spelling
 * per token (no leading zero), and never a value the database would refuse to bind. */
#define BANK_TOKEN_ID_MAX_DIGITS 19
#define BANK_TOKEN_ID_MAX "9223372036854775807"

int bank_token_secret_new(apr_pool_t *p, const char **secret, const char **hash_hex)
{
    /* AdonisJS' string.random draws from the url-safe base64 alphabet. */
    char *seed = bank_random_string(p, BANK_TOKEN_SEED_LEN, BANK_B64URL_ALPHABET);
    char *s, *h;

    if (!seed) {
        return -1;
    }
    /* The CRC suffix lets secret scanners recognise a leaked token. */
    s = apr_psprintf(p, "%s%lu", seed, bank_crc32(seed, BANK_TOKEN_SEED_LEN));
    h = bank_sha256_hex(p, s, strlen(s));
    if (!h) {
        return -1;
    }
    *secret = s;
    *hash_hex = h;
    return 0;
}

char *bank_token_encode(apr_pool_t *p, const char *id, const char *secret)
{
    return apr_pstrcat(
        p, BANK_TOKEN_PREFIX, bank_b64url_encode(p, (const unsigned char *)id, strlen(id)), ".",
        bank_b64url_encode(p, (const unsigned char *)secret, strlen(secret)), (char *)NULL);
}

static int is_token_id(const char *s, apr_size_t len)
{
    apr_size_t i;

    if (len == 0 || len > BANK_TOKEN_ID_MAX_DIGITS) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        if (!apr_isdigit(s[i])) {
            return 0;
        }
    }
    if (s[0] == '0') {
        return 0;
    }
    /* same length: decimal strings compare like their values */
    return len < BANK_TOKEN_ID_MAX_DIGITS || strncmp(s, BANK_TOKEN_ID_MAX, len) <= 0;
}

int bank_token_decode(apr_pool_t *p, const char *plain, const char **id, const char **secret)
{
    const apr_size_t plen = sizeof(BANK_TOKEN_PREFIX) - 1;
    const char *dot;
    unsigned char *rid, *rsecret;
    apr_size_t idlen, secretlen;

    if (!plain || strncmp(plain, BANK_TOKEN_PREFIX, plen) != 0) {
        return -1;
    }
    plain += plen;
    dot = strchr(plain, '.');
    if (!dot || dot == plain || dot[1] == '\0') {
        return -1;
    }
    if (bank_b64url_decode(p, apr_pstrmemdup(p, plain, (apr_size_t)(dot - plain)), &rid, &idlen) !=
            0 ||
        bank_b64url_decode(p, dot + 1, &rsecret, &secretlen) != 0) {
        return -1;
    }
    /* An embedded NUL would make the C string differ from the bytes that were hashed. */
    if (!is_token_id((const char *)rid, idlen) || secretlen == 0 ||
        strlen((const char *)rsecret) != secretlen) {
        return -1;
    }
    *id = (const char *)rid;
    *secret = (const char *)rsecret;
    return 0;
}

int bank_token_verify(apr_pool_t *p, const char *secret, const char *stored_hex)
{
    const char *h;

    if (!secret || !stored_hex) {
        return 0;
    }
    h = bank_sha256_hex(p, secret, strlen(secret));
    return h != NULL && bank_secure_streq(h, stored_hex);
}

int bank_abilities_allow(apr_pool_t *p, const char *abilities_json, const char *ability)
{
    json_object *arr;
    apr_size_t i, n, len;
    const char *why;
    int allow = 0;

    if (!abilities_json || !ability || (len = strlen(abilities_json)) > 65536) {
        return 0;
    }
    /* Every token this server issues, and an AdonisJS app's by default: granted without
     * parsing (no allocation on the request path of a cached token). */
    if (strcmp(abilities_json, "[\"*\"]") == 0) {
        return 1;
    }
    /* Malformed text (or null) grants nothing. */
    arr = bank_json_parse(p, abilities_json, len, &why);
    if (!json_object_is_type(arr, json_type_array)) {
        return 0;
    }
    n = json_object_array_length(arr);
    for (i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *s;

        /* Anything but strings: the list is not one we wrote, so grant nothing. */
        if (!json_object_is_type(e, json_type_string)) {
            return 0;
        }
        /* bank_json_parse refuses \u0000: the C string is the whole JSON string. */
        s = json_object_get_string(e);
        if (strcmp(s, "*") == 0 || strcmp(s, ability) == 0) {
            allow = 1;
        }
    }
    return allow;
}

int bank_ability_known(const char *name)
{
    static const char *const known[] = {BANK_ABILITY_BANKS, BANK_ABILITY_BVN, BANK_ABILITY_ALL};
    apr_size_t i;

    for (i = 0; name && i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(name, known[i]) == 0) {
            return 1;
        }
    }
    return 0;
}
