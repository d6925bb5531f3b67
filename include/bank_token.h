/* Customer access tokens in the AdonisJS v6 format (docs/api.md):
 *   oat_ + base64url(id) + "." + base64url(secret)
 * where secret = 40 random characters + decimal CRC-32 of those characters.
 * The database stores only sha256_hex(secret). */
#ifndef BANK_TOKEN_H
#define BANK_TOKEN_H

#include <apr_pools.h>

#define BANK_TOKEN_PREFIX "oat_"
#define BANK_TOKEN_SEED_LEN 40

/* A fresh secret and its stored hash. 0 on success, -1 if randomness failed. */
int bank_token_secret_new(apr_pool_t *p, const char **secret, const char **hash_hex);
/* The plaintext token a client sends, for a database id and a secret. */
char *bank_token_encode(apr_pool_t *p, const char *id, const char *secret);
/* Splits a plaintext token. 0 and the decoded id and secret, or -1 if it is not one of ours
 * (wrong prefix, bad base64url, empty parts, id not decimal digits). */
int bank_token_decode(apr_pool_t *p, const char *plain, const char **id, const char **secret);
/* 1 if sha256_hex(secret) equals stored_hex, compared in constant time. */
int bank_token_verify(apr_pool_t *p, const char *secret, const char *stored_hex);

/* Abilities: a JSON array text such as ["*"] or ["banks:read","onboarding:bvn"], read by
 * bank_json_parse (its parse lives in p). 1 if the list grants ability (or holds "*"),
 * 0 otherwise (also for malformed text, or an element that is not a string). */
int bank_abilities_allow(apr_pool_t *p, const char *abilities_json, const char *ability);

#endif
