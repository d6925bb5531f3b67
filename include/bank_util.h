/* Small pure helpers shared by the module and bankctl: encodings, ids, time, digests.
 * No httpd dependency: a unit test links these with APR and OpenSSL only. */
#ifndef BANK_UTIL_H
#define BANK_UTIL_H

#include <apr_pools.h>
#include <apr_time.h>

/* base64url without padding (RFC 4648 section 5). */
char *bank_b64url_encode(apr_pool_t *p, const unsigned char *in, apr_size_t len);
/* Strict decode: only the url-safe alphabet, no padding, no trailing bits set.
 * Returns 0 and a NUL-terminated buffer, or -1. */
int bank_b64url_decode(apr_pool_t *p, const char *in, unsigned char **out, apr_size_t *outlen);
/* Standard base64 (RFC 4648 section 4) without padding, as PHC strings use. */
char *bank_b64std_encode(apr_pool_t *p, const unsigned char *in, apr_size_t len);
int bank_b64std_decode(apr_pool_t *p, const char *in, unsigned char **out, apr_size_t *outlen);

/* Lower-case hex. */
char *bank_hex(apr_pool_t *p, const unsigned char *in, apr_size_t len);
/* SHA-256 of data, lower-case hex (64 characters). */
char *bank_sha256_hex(apr_pool_t *p, const void *data, apr_size_t len);
/* CRC-32 (IEEE 802.3, as zlib) of data. */
unsigned long bank_crc32(const void *data, apr_size_t len);
/* Constant-time equality of two NUL-terminated strings (length leaks, content does not). */
int bank_secure_streq(const char *a, const char *b);
/* 1 if given equals one of secrets[0..n) (rotation lists: BankWebhookSecret), in time that
 * depends on neither the secrets nor which one matched. given may be NULL (no match). */
int bank_secret_in(const char *given, const char *const *secrets, int n);

/* Cryptographically strong random bytes (OpenSSL RAND_bytes). 0 on success, -1 on failure. */
int bank_random_bytes(unsigned char *buf, apr_size_t len);
/* len random characters drawn uniformly from alphabet (no modulo bias). NULL on failure. */
char *bank_random_string(apr_pool_t *p, apr_size_t len, const char *alphabet);
/* Lower-case RFC 4122 version 4 UUID. NULL on failure. */
char *bank_uuid4(apr_pool_t *p);
/* 1 if s is a lower- or upper-case UUID in 8-4-4-4-12 form. */
int bank_is_uuid(const char *s);

/* Days in a month of the proleptic Gregorian calendar (28..31), or 0 if month is not
 * 1..12: one leap-year rule for timestamps and dates of birth. */
int bank_days_in_month(int year, int month);
/* 2026-11-22T07:40:22.123Z (UTC, millisecond precision). */
char *bank_time_iso(apr_pool_t *p, apr_time_t t);
/* Parses what either database hands back for a timestamp: ISO 8601 with 'T' or ' ',
 * optional fraction, and 'Z', '+HH', '+HH:MM', '+HHMM', '+HH:MM:SS' or no zone (taken as
 * UTC). PostgreSQL prints timestamptz in the session's TimeZone with its offset, so any
 * TimeZone reads back as the same instant.
 * Returns 0 and the instant, or -1. */
int bank_time_parse(const char *s, apr_time_t *out);
/* A timestamp as either database returns it, in the API's form (bank_time_iso); as stored
 * if bank_time_parse cannot read it, NULL for NULL. */
const char *bank_time_api(apr_pool_t *p, const char *db_text);

#endif
