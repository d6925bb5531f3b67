/* Limits and names that the module and bankctl share, each named once here (docs/api.md,
 * docs/configuration.md and docs/operations.md give the same values). */
#ifndef BANK_LIMITS_H
#define BANK_LIMITS_H

/* Characters (UTF-8 code points) of request fields and bankctl values. */
#define BANK_EMAIL_MAX 254
#define BANK_PASSWORD_MAX 1024
#define BANK_DEVICE_TOKEN_MAX 4096
#define BANK_NAME_MAX 100
#define BANK_PHONE_MAX 32 /* bytes of +0-9, space, -() */
/* A string field longer than this fails maxLength rather than its format rule. */
#define BANK_FIELD_MAX 1024

/* Lifetime of an access token, seconds: BankTokenLifetime and bankctl token issue --ttl. */
#define BANK_TOKEN_TTL_MIN 60
#define BANK_TOKEN_TTL_MAX 31536000 /* one year */
#define BANK_TOKEN_TTL_DEFAULT 86400
/* BankMaxDevices: the devices kept per customer (default, most) */
#define BANK_MAX_DEVICES_DEFAULT 10
#define BANK_MAX_DEVICES_MAX 1000
/* BankTokenCacheSeconds: how long a verified token is kept by a process (default, most) */
#define BANK_TOKEN_CACHE_DEFAULT 5
#define BANK_TOKEN_CACHE_MAX 60
/* BankBvnCacheSeconds: how long a verified customer's BVN answer is kept (default; most:
 * BANK_TOKEN_CACHE_MAX) */
#define BANK_BVN_CACHE_DEFAULT 5
/* The revocation feed: a process answers from its token cache only if it read the feed at
 * most this long ago, milliseconds; and the revocations one read handles one by one (more:
 * the whole cache is dropped; bank_token_revocations' LIMIT is one more). */
#define BANK_CHANGE_FEED_INTERVAL_MS 200
#define BANK_CHANGE_FEED_MAX 1000

/* The abilities a token may carry, as the endpoints check them; "*" grants all. */
#define BANK_ABILITY_BANKS "banks:read"
#define BANK_ABILITY_BVN "onboarding:bvn"
#define BANK_ABILITY_ALL "*"
#define BANK_ABILITIES_TEXT "banks:read, onboarding:bvn, *"

/* 1 if name is one of the abilities above. */
int bank_ability_known(const char *name);

#endif
