/* scrypt (RFC 7914) for password hashes (bank_password.c). Its own implementation rather than
 * OpenSSL's EVP_PBE_scrypt, for two measured reasons (docs/benchmarks.md, "Password
 * verification"):
 *  - memory: OpenSSL mallocs the 16 MiB work area on every call; glibc keeps it in the calling
 *    thread's arena after free, so a sign-in flood left httpd much larger for good.
 *    Here the work area is mapped for the call and unmapped before it returns, or, in a process
 *    that keeps some (bank_scrypt_keep: the verification threads' processes, while sign-ins
 *    come), wiped and kept for the next computation: a number of them the caller bounds.
 *  - speed: the Salsa20/8 core works on four 32-bit lanes at once (SSE2 where the compiler has
 *    it, the same lanes in plain C elsewhere) and the work area asks for huge pages, which
 *    together verify faster than OpenSSL's plain C on the same machine; and two computations
 *    can run their steps together on one CPU (bank_scrypt_two), more per second than one
 *    after the other.
 * PBKDF2-HMAC-SHA256 around it is OpenSSL's. Tested against RFC 7914's vectors and against
 * OpenSSL for random parameters (t/unit/test_scrypt.c, both lane implementations). */
#ifndef BANK_SCRYPT_H
#define BANK_SCRYPT_H

#include <apr_pools.h>

/* The work area for n and r in bytes (what the parameter limits are checked against). */
apr_size_t bank_scrypt_mem(unsigned long n, unsigned long r);
/* scrypt(pass, salt, n, r, p) into out[outlen]; n a power of two >= 2. Temporary buffers come
 * from pool (small) and from a mapping released (or kept, wiped: bank_scrypt_keep) before
 * return. 0, or -1 if a mapping or PBKDF2 failed. */
int bank_scrypt(apr_pool_t *pool, const char *pass, apr_size_t passlen, const unsigned char *salt,
                apr_size_t saltlen, unsigned long n, unsigned long r, unsigned long p,
                unsigned char *out, apr_size_t outlen);
/* From now on up to `areas` work areas (at most BANK_SCRYPT_KEEP_MAX; 0: none, the default)
 * are kept in this process once computations end, wiped, for the next ones to use instead of
 * mapping their own: the kernel then clears no pages, and the area the caches hold is used
 * again (docs/benchmarks.md, "Sign-ins verified two at a time"). The password verification threads
 * keep as many as they are while sign-ins come (mod_bank_verify.c). Spares beyond `areas`
 * are unmapped. */
#define BANK_SCRYPT_KEEP_MAX 64
void bank_scrypt_keep(int areas);
/* Unmaps the spare areas now (the next computations map new ones, kept again afterwards):
 * for a process whose sign-ins stopped. */
void bank_scrypt_drop_spares(void);
/* One computation of bank_scrypt_two. */
typedef struct {
    const char *pass;
    apr_size_t passlen;
    const unsigned char *salt;
    apr_size_t saltlen;
    unsigned char *out;
    apr_size_t outlen;
} bank_scrypt_in_t;
/* Two scrypt computations with the same n, r and p, as two bank_scrypt calls would give them,
 * on the calling thread in much less than twice the time of one (bank_scrypt.c, salsa20_8): the
 * verification threads pair sign-ins that wait (mod_bank_verify.c). Twice the work area, one
 * mapping. 0, or -1 as bank_scrypt. */
int bank_scrypt_two(apr_pool_t *pool, const bank_scrypt_in_t in[2], unsigned long n,
                    unsigned long r, unsigned long p);

#endif
