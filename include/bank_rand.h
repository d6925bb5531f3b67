/* Cryptographically strong randomness (OpenSSL RAND_bytes). No httpd dependency. */
#ifndef BANK_RAND_H
#define BANK_RAND_H

#include <apr_pools.h>

/* 0 on success, -1 on failure. */
int bank_random_bytes(unsigned char *buf, apr_size_t len);
/* len random characters drawn uniformly from alphabet (no modulo bias). NULL on failure. */
char *bank_random_string(apr_pool_t *p, apr_size_t len, const char *alphabet);

#endif
