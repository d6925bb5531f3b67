/* RFC 4122 UUIDs. No httpd dependency. */
#ifndef BANK_UUID_H
#define BANK_UUID_H

#include <apr_pools.h>

/* Lower-case version 4 UUID. NULL on failure (no randomness). */
char *bank_uuid4(apr_pool_t *p);
/* 1 if s is a lower- or upper-case UUID in 8-4-4-4-12 form. */
int bank_is_uuid(const char *s);

#endif
