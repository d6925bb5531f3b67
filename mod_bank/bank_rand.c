/* Cryptographically strong randomness (OpenSSL RAND_bytes). */
#include <limits.h>
#include <string.h>

#include <openssl/rand.h>

#include "bank_rand.h"

int bank_random_bytes(unsigned char *buf, apr_size_t len)
{
    if (len > INT_MAX) {
        return -1;
    }
    if (len == 0) {
        return 0;
    }
    return RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
}

char *bank_random_string(apr_pool_t *p, apr_size_t len, const char *alphabet)
{
    apr_size_t n = alphabet ? strlen(alphabet) : 0, got = 0;
    unsigned int limit;
    char *out;

    if (n == 0 || n > 256) {
        return NULL;
    }
    /* Bytes at or above the largest multiple of n are redrawn: no modulo bias. */
    limit = 256 - (256 % (unsigned int)n);
    out = apr_palloc(p, len + 1);
    while (got < len) {
        unsigned char buf[64];
        apr_size_t i;

        if (bank_random_bytes(buf, sizeof(buf)) != 0) {
            return NULL;
        }
        for (i = 0; i < sizeof(buf) && got < len; i++) {
            if (buf[i] < limit) {
                out[got++] = alphabet[buf[i] % n];
            }
        }
    }
    out[len] = '\0';
    return out;
}
