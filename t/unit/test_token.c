/* Unit tests for the AdonisJS access-token codec and abilities. */
#include "unit.h"

#include <stdlib.h>
#include <apr_strings.h>

#include "bank_token.h"
#include "bank_digest.h"

/* A hand-built vector. Seed: 40 url-safe characters; suffix from python:
 *   zlib.crc32(b'Zx9-_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345678') == 109573417
 * token parts:  printf %s 1 | basenc --base64url            -> MQ==
 *               printf %s "$SECRET" | basenc --base64url -w0 -> Wng5...NxNw==
 * hash:         printf %s "$SECRET" | sha256sum */
#define SEED "Zx9-_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345678"
#define SECRET SEED "109573417"
#define TOKEN "oat_MQ.Wng5LV9hQmNEZUZnSGlKa0xtTm9QcVJzVHVWd1h5WjAxMjM0NTY3ODEwOTU3MzQxNw"
#define HASH "48b0cd93e5103401f2c814979f2e1ae4e1eae10dac09e8c9fceab4853abb3383"

static int decodes(apr_pool_t *p, const char *plain)
{
    const char *id = NULL, *secret = NULL;
    return bank_token_decode(p, plain, &id, &secret) == 0;
}

static void test_known_vector(apr_pool_t *p)
{
    const char *id = NULL, *secret = NULL;

    CHECK(strlen(SEED) == BANK_TOKEN_SEED_LEN);
    CHECK(bank_crc32(SEED, BANK_TOKEN_SEED_LEN) == 109573417UL);
    CHECK_STR(bank_token_encode(p, "1", SECRET), TOKEN);
    CHECK(bank_token_decode(p, TOKEN, &id, &secret) == 0);
    CHECK_STR(id, "1");
    CHECK_STR(secret, SECRET);
    CHECK_STR(bank_sha256_hex(p, SECRET, strlen(SECRET)), HASH);
    CHECK(bank_token_verify(p, SECRET, HASH) == 1);
    /* One character off in the secret, in the hash, or a truncated hash. */
    CHECK(bank_token_verify(p, SEED "109573418", HASH) == 0);
    CHECK(bank_token_verify(
              p, SECRET, "58b0cd93e5103401f2c814979f2e1ae4e1eae10dac09e8c9fceab4853abb3383") == 0);
    CHECK(bank_token_verify(
              p, SECRET, "48b0cd93e5103401f2c814979f2e1ae4e1eae10dac09e8c9fceab4853abb338") == 0);
    CHECK(bank_token_verify(p, SECRET, "") == 0);
    CHECK(bank_token_verify(p, SECRET, NULL) == 0);
}

static void test_new_secret(apr_pool_t *p)
{
    const char *secret = NULL, *hash = NULL, *secret2 = NULL, *hash2 = NULL, *id, *back;
    char crc[16];
    char *token;
    apr_size_t i;
    int ok = 1;

    CHECK(bank_token_secret_new(p, &secret, &hash) == 0);
    CHECK(bank_token_secret_new(p, &secret2, &hash2) == 0);
    CHECK(secret && secret2 && strcmp(secret, secret2) != 0);
    if (!secret || !hash) {
        return;
    }
    /* 40 url-safe characters, then the CRC-32 of exactly those in decimal. */
    CHECK(strlen(secret) > BANK_TOKEN_SEED_LEN && strlen(secret) <= BANK_TOKEN_SEED_LEN + 10);
    for (i = 0; i < BANK_TOKEN_SEED_LEN; i++) {
        ok &= strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                     secret[i]) != NULL;
    }
    CHECK(ok);
    apr_snprintf(crc, sizeof(crc), "%lu", bank_crc32(secret, BANK_TOKEN_SEED_LEN));
    CHECK_STR(secret + BANK_TOKEN_SEED_LEN, crc);
    CHECK(strtoul(secret + BANK_TOKEN_SEED_LEN, NULL, 10) <= 4294967295UL);
    CHECK(strlen(hash) == 64);
    CHECK_STR(hash, bank_sha256_hex(p, secret, strlen(secret)));
    CHECK(bank_token_verify(p, secret, hash) == 1);
    CHECK(bank_token_verify(p, secret2, hash) == 0);

    /* Round trip through the plaintext form, with the largest id. */
    token = bank_token_encode(p, "9223372036854775807", secret);
    CHECK(strncmp(token, "oat_OTIyMzM3MjAzNjg1NDc3NTgwNw.", 31) == 0);
    CHECK(bank_token_decode(p, token, &id, &back) == 0);
    CHECK_STR(id, "9223372036854775807");
    CHECK_STR(back, secret);
    CHECK(strchr(token, '=') == NULL);
}

static void test_decode_rejects(apr_pool_t *p)
{
    CHECK(decodes(p, TOKEN));
    CHECK(!decodes(p, NULL));
    CHECK(!decodes(p, ""));
    CHECK(!decodes(p, "oat_"));
    CHECK(!decodes(p, "oat_."));
    /* Wrong or missing prefix. */
    CHECK(!decodes(p, "OAT_MQ.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "pat_MQ.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "MQ.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "Bearer oat_MQ.Wng5LV9hQmNEZUZn"));
    /* Missing dot or empty parts. */
    CHECK(!decodes(p, "oat_MQWng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "oat_.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "oat_MQ."));
    /* Split at the first dot: a second one lands in the secret, where it is not base64url. */
    CHECK(!decodes(p, "oat_MQ.Wng5.LV9hQmNEZUZn"));
    /* Padding, standard-alphabet characters, stray bytes. */
    CHECK(!decodes(p, "oat_MQ==.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "oat_MQ.Wng5LV9hQmNEZUZn=="));
    CHECK(!decodes(p, "oat_MQ.Wng5LV9h+mNEZUZn"));
    CHECK(!decodes(p, "oat_MQ.Wng5LV9h/mNEZUZn"));
    CHECK(!decodes(p, "oat_MQ.Wng5LV9hQmNEZUZn "));
    CHECK(!decodes(p, "oat_M Q.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "oat_MR.Wng5LV9hQmNEZUZn"));
    /* Ids: "a" (YQ), "-1" (LTE), "" inside, 20 digits (MTIzNDU2Nzg5MDEyMzQ1Njc4OTA). */
    CHECK(!decodes(p, "oat_YQ.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "oat_LTE.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "oat_MTIzNDU2Nzg5MDEyMzQ1Njc4OTA.Wng5LV9hQmNEZUZn"));
    CHECK(decodes(p, "oat_MTIzNDU2Nzg5MDEyMzQ1Njc4OQ.Wng5LV9hQmNEZUZn"));
    /* one spelling per id, and only ids a signed 64-bit column holds (printf %s ID | basenc
     * --base64url): 0, 01, 2^63 and 9999999999999999999 refused; 2^63-1 accepted */
    CHECK(!decodes(p, "oat_MA.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "oat_MDE.Wng5LV9hQmNEZUZn"));
    CHECK(decodes(p, "oat_OTIyMzM3MjAzNjg1NDc3NTgwNw.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "oat_OTIyMzM3MjAzNjg1NDc3NTgwOA.Wng5LV9hQmNEZUZn"));
    CHECK(!decodes(p, "oat_OTk5OTk5OTk5OTk5OTk5OTk5OQ.Wng5LV9hQmNEZUZn"));
    /* A NUL byte inside the secret (printf 'a\0b' | basenc --base64url -> YQBi). */
    CHECK(!decodes(p, "oat_MQ.YQBi"));
}

static void test_abilities(apr_pool_t *p)
{
    CHECK(bank_abilities_allow(p, "[\"*\"]", "banks:read") == 1);
    CHECK(bank_abilities_allow(p, "[\"*\"]", "onboarding:bvn") == 1);
    CHECK(bank_abilities_allow(p, "[\"banks:read\"]", "banks:read") == 1);
    CHECK(bank_abilities_allow(p, "[\"banks:read\"]", "onboarding:bvn") == 0);
    CHECK(bank_abilities_allow(p, " [ \"banks:read\" , \"onboarding:bvn\" ] ", "onboarding:bvn") ==
          1);
    CHECK(bank_abilities_allow(p, "[]", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"banks\"]", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"banks:read:all\"]", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"BANKS:READ\"]", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"*x\"]", "banks:read") == 0);
    /* Malformed text and other JSON types. */
    CHECK(bank_abilities_allow(p, "", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"*\"", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"*\"]]", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"*\"] x", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "['*']", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"*\",]", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "\"*\"", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "{\"*\": true}", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "*", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "null", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[[\"*\"]]", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[1, \"*\"]", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"banks:read\\u0000x\"]", "banks:read") == 0);
    /* Read by bank_json_parse: white space around the array, but nothing JSON refuses. */
    CHECK(bank_abilities_allow(p, "\n[\"*\"]\r\n", "banks:read") == 1);
    CHECK(bank_abilities_allow(p, "[\"*\", \"\xff\"]", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"*\", \"a\\u0000\"]", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"*\"]\x01", "banks:read") == 0);
    CHECK(bank_abilities_allow(p, NULL, "banks:read") == 0);
    CHECK(bank_abilities_allow(p, "[\"*\"]", NULL) == 0);
}

static void run_tests(apr_pool_t *p)
{
    test_known_vector(p);
    test_new_secret(p);
    test_decode_rejects(p);
    test_abilities(p);
}
