/* The webhook notice check (mod_bank/bank_notice.c), as mod_bank/mod_bank_webhook.c runs it on a
 * delivery. Input: the signature header's value, a newline, then the raw body. The signature check
 * must agree with an HMAC computed here (hex, either case); the body is parsed and validated
 * whatever the signature says, so that mutated bodies still reach the validator: a notice is
 * returned with no errors, or NULL with at least one, and its idempotency key is present. */
#include <apr_lib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fuzz.h"

#include "bank_json.h"
#include "bank_notice.h"
#include "bank_encoding.h"
#include "bank_validate.h"

#define KEY "fuzz-hmac-key"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the signature check should say: given is the hex of the HMAC, in either case. */
static int expected(apr_pool_t *p, int bits, const char *body, apr_size_t len, const char *given)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    const char *hex;

    HMAC(bits == 512 ? EVP_sha512() : EVP_sha256(), KEY, (int)strlen(KEY),
         (const unsigned char *)body, len, mac, &maclen);
    hex = bank_hex(p, mac, maclen);
    return strlen(given) == strlen(hex) && strcasecmp(given, hex) == 0;
}

static void check_signature(apr_pool_t *p, const char *given, const char *body, apr_size_t len)
{
    const bank_notice_key_t *k256 = bank_notice_key_make(p, 256, KEY),
                            *k512 = bank_notice_key_make(p, 512, KEY);

    FUZZ_CHECK(k256 && k512 && !bank_notice_key_make(p, 384, KEY));
    FUZZ_CHECK(bank_notice_signature_ok(k256, body, len, given) ==
               expected(p, 256, body, len, given));
    FUZZ_CHECK(bank_notice_signature_ok(k512, body, len, given) ==
               expected(p, 512, body, len, given));
    FUZZ_CHECK(!bank_notice_signature_ok(NULL, body, len, given));
    FUZZ_CHECK(!bank_notice_signature_ok(k512, body, len, NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    const char *in = (const char *)data, *nl = memchr(in, '\n', size), *body, *why;
    const char *given = fuzz_cstr(p, data, nl ? (size_t)(nl - in) : 0);
    apr_size_t len;
    apr_array_header_t *errs = bank_errors_new(p);
    json_object *o;
    bank_notice_t *n;

    body = nl ? nl + 1 : in;
    len = size - (apr_size_t)(body - in);
    check_signature(p, given, body, len);
    o = bank_json_parse_object(p, body, len, &why);
    if (o) {
        n = bank_notice_read(p, o, errs);
        FUZZ_CHECK(n ? errs->nelts == 0 : errs->nelts > 0);
        if (n) {
            FUZZ_CHECK(n->transaction_reference && *n->transaction_reference);
            FUZZ_CHECK(n->status_code && *n->status_code);
            FUZZ_CHECK(n->service && n->type && n->status);
        }
    }
    apr_pool_destroy(p);
    return 0;
}
