/* Password hashes (docs/api.md). Verifies scrypt PHC strings
 *   $scrypt$n=16384,r=8,p=1$<salt b64>$<hash b64>
 * bcrypt ($2a$, $2b$, $2y$ and the PHC form $bcrypt$v=98$r=10$<salt>$<hash>) and argon2
 * ($argon2id$, $argon2i$, $argon2d$ as AdonisJS's argon2 driver writes them:
 *   $argon2id$v=19$m=65536,t=3,p=4$<salt b64>$<hash b64>, libargon2).
 * New hashes are scrypt PHC with the AdonisJS defaults. */
#ifndef BANK_PASSWORD_H
#define BANK_PASSWORD_H

#include <apr_pools.h>

#define BANK_PW_MATCH 1
#define BANK_PW_MISMATCH 0
#define BANK_PW_MALFORMED (-1)

/* BANK_PW_MATCH, BANK_PW_MISMATCH, or BANK_PW_MALFORMED for a hash we cannot read. */
int bank_password_verify(apr_pool_t *p, const char *plain, const char *stored);
/* A new scrypt PHC string, or NULL if randomness or scrypt failed. */
char *bank_password_hash(apr_pool_t *p, const char *plain);
/* A valid hash of a random password with the default cost: verified against when the e-mail
 * is unknown, so that both failures cost the same time. */
const char *bank_password_dummy(void);

#endif
