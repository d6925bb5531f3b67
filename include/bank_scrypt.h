/* scrypt (RFC 7914) for password hashes (bank_password.c). Its own implementation rather than
 * OpenSSL's EVP_PBE_scrypt, for two measured reasons (docs/benchmarks.md, "Password
 * verification"):
 *  - memory: OpenSSL mallocs the 16 MiB work area on every call; glibc keeps it in the calling
 *    thread's arena after free, so a sign-in flood left httpd hundreds of MiB larger for good.
 *    Here the work area is mapped for the call and unmapped before it returns.
 *  - speed: the Salsa20/8 core works on four 32-bit lanes at once (SSE2 where the compiler has
 *    it, the same lanes in plain C elsewhere) and the work area asks for huge pages, which
 *    together verify about 18-20% faster than OpenSSL's plain C on the same machine.
 * PBKDF2-HMAC-SHA256 around it is OpenSSL's. Tested against RFC 7914's vectors and against
 * OpenSSL for random parameters (t/unit/test_scrypt.c, both lane implementations). */
#ifndef BANK_SCRYPT_H
#define BANK_SCRYPT_H

#include <apr_pools.h>

/* The work area for n and r in bytes (what the parameter limits are checked against). */
apr_size_t bank_scrypt_mem(unsigned long n, unsigned long r);
/* scrypt(pass, salt, n, r, p) into out[outlen]; n a power of two >= 2. Temporary buffers come
 * from pool (small) and from a mapping released before return. 0, or -1 if a mapping or
 * PBKDF2 failed. */
int bank_scrypt(apr_pool_t *pool, const char *pass, apr_size_t passlen, const unsigned char *salt,
                apr_size_t saltlen, unsigned long n, unsigned long r, unsigned long p,
                unsigned char *out, apr_size_t outlen);

#endif
