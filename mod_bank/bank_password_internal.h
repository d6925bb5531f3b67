/* Inside the password hashes only (bank_password.c and its parts): the fields of a PHC string
 * (bank_password_phc.c) and argon2's hashes (bank_password_argon2.c). */
#ifndef BANK_PASSWORD_INTERNAL_H
#define BANK_PASSWORD_INTERNAL_H

#include <apr_pools.h>
#include <argon2.h>

/* s[0..len) as a decimal without sign or leading zeros, at most 9 digits, into *v: 0, else -1. */
int bank_phc_uint(const char *s, apr_size_t len, unsigned long *v);
/* A copy of s in p split at '$' into exactly want fields (none empty, no more): 0, else -1. */
int bank_phc_fields(apr_pool_t *p, const char *s, char **fields, int want);
/* "k=V,k=V,..." with each of keys' letters exactly once, into v[i] for keys[i]: 0, else -1. */
int bank_phc_params(const char *s, const char *keys, unsigned long *v);

/* An argon2 hash read by bank_argon2_parse. */
typedef struct {
    argon2_type type;
    unsigned long version, m, t, p;
    unsigned char *salt, *key;
    apr_size_t saltlen, keylen;
} bank_argon2_params;

/* "id$v=19$m=65536,t=3,p=4$<salt>$<hash>" after "$argon2", within the bounds: 0, else -1. */
int bank_argon2_parse(apr_pool_t *p, const char *rest, bank_argon2_params *ap);
/* plain against the argon2 hash rest (after "$argon2"): a BANK_PW_* verdict. */
int bank_argon2_verify(apr_pool_t *p, const char *plain, const char *rest);

#endif
