/* The access-token decoder (mod_bank/bank_token.c) on arbitrary bearer values: a token it takes
 * encodes back to exactly the same text (one spelling per token), and its secret verifies
 * against its own hash only. The same bytes are also read as an abilities list. */
#include "fuzz.h"

#include "bank_token.h"
#include "bank_digest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    const char *plain = fuzz_cstr(p, data, size), *id = NULL, *secret = NULL;

    if (bank_token_decode(p, plain, &id, &secret) == 0) {
        FUZZ_CHECK(id && secret && *id && *secret);
        FUZZ_CHECK(strcmp(bank_token_encode(p, id, secret), plain) == 0);
        FUZZ_CHECK(bank_token_verify(p, secret, bank_sha256_hex(p, secret, strlen(secret))));
        FUZZ_CHECK(!bank_token_verify(p, secret, bank_sha256_hex(p, id, strlen(id))) ||
                   strcmp(id, secret) == 0);
    }
    FUZZ_CHECK(!bank_token_verify(p, plain, NULL));
    /* A list holding "*" grants every ability. */
    if (bank_abilities_allow(p, plain, "*")) {
        FUZZ_CHECK(bank_abilities_allow(p, plain, "onboarding:bvn"));
    }
    apr_pool_destroy(p);
    return 0;
}
