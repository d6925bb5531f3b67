/* Digests and constant-time comparisons of secrets. */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "bank_digest.h"
#include "bank_encoding.h"

char *bank_sha256_hex(apr_pool_t *p, const void *data, apr_size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL)) {
        return NULL;
    }
    return bank_hex(p, md, mdlen);
}

/* Bitwise rather than table-driven: inputs are a few dozen bytes, and no lazily built
 * table means nothing to race on in a threaded MPM. */
unsigned long bank_crc32(const void *data, apr_size_t len)
{
    const unsigned char *b = data;
    unsigned long crc = 0xffffffffUL;
    apr_size_t i;
    int k;

    for (i = 0; i < len; i++) {
        crc ^= b[i];
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xedb88320UL & (0UL - (crc & 1)));
        }
    }
    return (crc ^ 0xffffffffUL) & 0xffffffffUL;
}

int bank_secure_streq(const char *a, const char *b)
{
    unsigned char da[SHA256_DIGEST_LENGTH], db[SHA256_DIGEST_LENGTH];

    if (!a || !b) {
        return 0;
    }
    /* Compare fixed-size digests: the time depends on neither the content nor the length
     * of the secret (client keys and webhook secrets have no fixed length). */
    SHA256((const unsigned char *)a, strlen(a), da);
    SHA256((const unsigned char *)b, strlen(b), db);
    return CRYPTO_memcmp(da, db, sizeof(da)) == 0;
}

int bank_secret_in(const char *given, const char *const *secrets, int n)
{
    int i, found = 0;

    /* Every secret is compared, no early exit: the time does not tell which one matched. */
    for (i = 0; i < n; i++) {
        found |= bank_secure_streq(given, secrets[i]);
    }
    return found;
}
