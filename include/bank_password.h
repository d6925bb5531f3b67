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
/* rc[c] = bank_password_verify(p, plain[c], stored[c]) for c 0 and 1. Two scrypt hashes of the
 * same n, r and p are computed together (bank_scrypt_two: both in much less than twice the
 * time of one); any other two one after the other. */
void bank_password_verify_two(apr_pool_t *p, const char *const plain[2],
                              const char *const stored[2], int rc[2]);
/* What a verification of stored costs, "$scrypt$n=16384,r=8,p=1", when it is a scrypt hash
 * within the bounds: two of the same are computed together by bank_password_verify_two.
 * NULL for any other. */
const char *bank_password_pair_kind(apr_pool_t *p, const char *stored);
/* A new scrypt PHC string, or NULL if randomness or scrypt failed. */
char *bank_password_hash(apr_pool_t *p, const char *plain);
/* A valid hash of a random password with the default cost (scrypt): the dummy until the
 * stored hashes are sampled. */
const char *bank_password_dummy(void);

/* The hash an unknown e-mail is verified against, so that its answer costs what a wrong
 * password costs: a hash of the same algorithm and parameters as most stored hashes
 * (docs/security.md). Sampled from the database by the sign-in flow (bank_sign_in.c) every
 * BankPasswordDummyRefresh seconds (default BANK_PW_DUMMY_REFRESH) in each process. */
#define BANK_PW_DUMMY_REFRESH 300 /* BankPasswordDummyRefresh, seconds */
#define BANK_PW_DUMMY_SAMPLE 256
/* A hash of stored's algorithm, parameters and salt and key lengths, with a random salt and
 * key (so it matches no password), and in *cost its algorithm and parameters
 * ("$scrypt$n=16384,r=8,p=1", "$2b$10", "$argon2id$v=19$m=65536,t=3,p=4"); NULL if stored is
 * not a hash this file verifies within its bounds. */
char *bank_password_dummy_like(apr_pool_t *p, const char *stored, const char **cost);
/* bank_password_dummy_like of the most common cost among stored[0..n) (of equally common
 * ones, the first seen), that cost in *cost; or NULL if none is readable. */
const char *bank_password_dummy_of(apr_pool_t *p, const char *const *stored, int n,
                                   const char **cost);
/* Makes hash the process's dummy (0; -1 if it is too long to hold, and the old one stays);
 * reset: back to bank_password_dummy(). One caller at a time (the sign-in flow samples one
 * at a time); readers may run meanwhile. */
int bank_password_set_dummy(const char *hash);
void bank_password_reset_dummy(void);
/* The process's dummy now, copied into p. */
const char *bank_password_dummy_copy(apr_pool_t *p);

#endif
