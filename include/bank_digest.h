/* Digests and constant-time comparison of secrets. No httpd dependency. */
#ifndef BANK_DIGEST_H
#define BANK_DIGEST_H

#include <apr_pools.h>

/* Fetches SHA-256 from OpenSSL once for the process (call before threads start; without
 * it every digest fetches it again, slower and under a lock); freed when pool goes. */
void bank_digest_init(apr_pool_t *pool);
/* SHA-256 of data, lower-case hex (64 characters). */
char *bank_sha256_hex(apr_pool_t *p, const void *data, apr_size_t len);
/* CRC-32 (IEEE 802.3, as zlib) of data. */
unsigned long bank_crc32(const void *data, apr_size_t len);
/* Constant-time equality of two NUL-terminated strings (length leaks, content does not). */
int bank_secure_streq(const char *a, const char *b);
/* 1 if given equals one of secrets[0..n) (rotation lists: BankWebhookSecret), in time that
 * depends on neither the secrets nor which one matched. given may be NULL (no match). */
int bank_secret_in(const char *given, const char *const *secrets, int n);

#endif
