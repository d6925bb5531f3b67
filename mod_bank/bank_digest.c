/* Digests and constant-time comparisons of secrets. */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "bank_digest.h"
#include "bank_encoding.h"

/* SHA-256 fetched from OpenSSL's provider store once (bank_digest_init). EVP_sha256() and
 * SHA256() fetch it again on every call, under the store's process-wide lock: slower even
 * single-threaded, and contended on every bearer check of a threaded server. */
static EVP_MD *sha256_md = NULL;

static apr_status_t digest_free(void *unused)
{
    (void)unused;
    EVP_MD_free(sha256_md);
    sha256_md = NULL;
    return APR_SUCCESS;
}

void bank_digest_init(apr_pool_t *pool)
{
    if (!sha256_md && (sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL)) != NULL) {
        /* freed with the pool: httpd unloads the module with its configuration, and the
         * pointer to it would go with the module */
        apr_pool_cleanup_register(pool, NULL, digest_free, apr_pool_cleanup_null);
    }
}

static int sha256(const void *data, apr_size_t len, unsigned char *md)
{
    unsigned int mdlen = 0;
    return EVP_Digest(data, len, md, &mdlen, sha256_md ? sha256_md : EVP_sha256(), NULL) &&
           mdlen == SHA256_DIGEST_LENGTH;
}

char *bank_sha256_hex(apr_pool_t *p, const void *data, apr_size_t len)
{
    unsigned char md[SHA256_DIGEST_LENGTH];

    if (!sha256(data, len, md)) {
        return NULL;
    }
    return bank_hex(p, md, sizeof(md));
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
    if (!sha256(a, strlen(a), da) || !sha256(b, strlen(b), db)) {
        return 0;
    }
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
