/* RFC 9562 (formerly 4122) UUIDs. No httpd dependency. */
#ifndef BANK_UUID_H
#define BANK_UUID_H

#include <apr_pools.h>

/* Lower-case version 4 UUID. NULL on failure (no randomness). */
char *bank_uuid4(apr_pool_t *p);
/* Lower-case version 7 UUID: the Unix time in milliseconds, a 12-bit counter, 62 random bits.
 * Within a process each one sorts (as text and as bytes) after the one before, even within one
 * millisecond and across threads: new rows land at the end of an index on it rather than at a
 * random position. NULL on failure (no randomness). */
char *bank_uuid7(apr_pool_t *p);
/* 1 if s is a lower- or upper-case UUID in 8-4-4-4-12 form. */
int bank_is_uuid(const char *s);

#endif
