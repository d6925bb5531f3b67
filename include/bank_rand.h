/* Cryptographically strong randomness (OpenSSL RAND_bytes). No httpd dependency. */
#ifndef BANK_RAND_H
#define BANK_RAND_H

#include <apr_pools.h>

/* 0 on success, -1 on failure. */
int bank_random_bytes(unsigned char *buf, apr_size_t len);
/* Random bytes for identifiers (UUIDs), never for secrets: drawn with bank_random_bytes a
 * block at a time into a buffer of the calling thread and handed out from it, so that the
 * bytes of later identifiers sit in memory before they are used. A RAND_bytes call is costly
 * under OpenSSL 3 (its fork check is a system call, its DRBG rekeys per call); a notice's id
 * used to be one. A child of fork() never hands out the bytes its parent held.
 * 0 on success, -1 on failure. */
int bank_random_id_bytes(unsigned char *buf, apr_size_t len);
/* len random characters drawn uniformly from alphabet (no modulo bias). NULL on failure. */
char *bank_random_string(apr_pool_t *p, apr_size_t len, const char *alphabet);

#endif
