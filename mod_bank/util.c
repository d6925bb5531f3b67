/* Small pure helpers: base64 variants, hex, digests, randomness, UUIDs and UTC time. */
#include <limits.h>
#include <string.h>

#include <apr_strings.h>
#include <apr_lib.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "bank_util.h"

static const char b64url_alpha[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char b64std_alpha[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(apr_pool_t *p, const unsigned char *in, apr_size_t len, const char *alpha)
{
    char *out = apr_palloc(p, (len + 2) / 3 * 4 + 1);
    char *o = out;
    apr_size_t i;

    for (i = 0; i + 2 < len; i += 3) {
        unsigned long v =
            ((unsigned long)in[i] << 16) | ((unsigned long)in[i + 1] << 8) | in[i + 2];
        *o++ = alpha[(v >> 18) & 63];
        *o++ = alpha[(v >> 12) & 63];
        *o++ = alpha[(v >> 6) & 63];
        *o++ = alpha[v & 63];
    }
    if (len - i == 1) {
        *o++ = alpha[in[i] >> 2];
        *o++ = alpha[(in[i] & 3) << 4];
    } else if (len - i == 2) {
        *o++ = alpha[in[i] >> 2];
        *o++ = alpha[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
        *o++ = alpha[(in[i + 1] & 15) << 2];
    }
    *o = '\0';
    return out;
}

static int b64_value(const char *alpha, char c)
{
    const char *hit;

    if (c == '\0') {
        return -1;
    }
    hit = strchr(alpha, c);
    return hit ? (int)(hit - alpha) : -1;
}

/* Strict: alphabet only, no padding, and unused trailing bits must be zero so that every
 * byte string has exactly one accepted encoding. */
static int b64_decode(apr_pool_t *p, const char *in, const char *alpha, unsigned char **out,
                      apr_size_t *outlen)
{
    apr_size_t len, i, n = 0;
    unsigned long acc = 0;
    int bits = 0;
    unsigned char *buf;

    if (!in || !out || !outlen) {
        return -1;
    }
    len = strlen(in);
    if (len % 4 == 1) {
        return -1;
    }
    buf = apr_palloc(p, len / 4 * 3 + 3);
    for (i = 0; i < len; i++) {
        int v = b64_value(alpha, in[i]);
        if (v < 0) {
            return -1;
        }
        acc = ((acc << 6) | (unsigned long)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (unsigned char)((acc >> bits) & 0xff);
        }
    }
    if (bits > 0 && (acc & ((1UL << bits) - 1)) != 0) {
        return -1;
    }
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return 0;
}

char *bank_b64url_encode(apr_pool_t *p, const unsigned char *in, apr_size_t len)
{
    return b64_encode(p, in, len, b64url_alpha);
}

int bank_b64url_decode(apr_pool_t *p, const char *in, unsigned char **out, apr_size_t *outlen)
{
    return b64_decode(p, in, b64url_alpha, out, outlen);
}

char *bank_b64std_encode(apr_pool_t *p, const unsigned char *in, apr_size_t len)
{
    return b64_encode(p, in, len, b64std_alpha);
}

int bank_b64std_decode(apr_pool_t *p, const char *in, unsigned char **out, apr_size_t *outlen)
{
    return b64_decode(p, in, b64std_alpha, out, outlen);
}

char *bank_hex(apr_pool_t *p, const unsigned char *in, apr_size_t len)
{
    static const char digits[] = "0123456789abcdef";
    char *out = apr_palloc(p, len * 2 + 1);
    apr_size_t i;

    for (i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[len * 2] = '\0';
    return out;
}

char *bank_sha256_hex(apr_pool_t *p, const void *data, apr_size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL)) {
        return NULL;
    }
    return bank_hex(p, md, mdlen);
}

/* Bitwise rather than table-driven: inputs are a few dozen bytes, and no lazily built
 * table means nothing to race on in a threaded MPM. */
unsigned long bank_crc32(const void *data, apr_size_t len)
{
    const unsigned char *b = data;
    unsigned long crc = 0xffffffffUL;
    apr_size_t i;
    int k;

    for (i = 0; i < len; i++) {
        crc ^= b[i];
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xedb88320UL & (0UL - (crc & 1)));
        }
    }
    return (crc ^ 0xffffffffUL) & 0xffffffffUL;
}

int bank_secure_streq(const char *a, const char *b)
{
    unsigned char da[SHA256_DIGEST_LENGTH], db[SHA256_DIGEST_LENGTH];

    if (!a || !b) {
        return 0;
    }
    /* Compare fixed-size digests: the time depends on neither the content nor the length
     * of the secret (client keys and webhook secrets have no fixed length). */
    SHA256((const unsigned char *)a, strlen(a), da);
    SHA256((const unsigned char *)b, strlen(b), db);
    return CRYPTO_memcmp(da, db, sizeof(da)) == 0;
}

int bank_secret_in(const char *given, const char *const *secrets, int n)
{
    int i, found = 0;

    /* Every secret is compared, no early exit: the time does not tell which one matched. */
    for (i = 0; i < n; i++) {
        found |= bank_secure_streq(given, secrets[i]);
    }
    return found;
}

int bank_random_bytes(unsigned char *buf, apr_size_t len)
{
    if (len > INT_MAX) {
        return -1;
    }
    if (len == 0) {
        return 0;
    }
    return RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
}

char *bank_random_string(apr_pool_t *p, apr_size_t len, const char *alphabet)
{
    apr_size_t n = alphabet ? strlen(alphabet) : 0, got = 0;
    unsigned int limit;
    char *out;

    if (n == 0 || n > 256) {
        return NULL;
    }
    /* Bytes at or above the largest multiple of n are redrawn: no modulo bias. */
    limit = 256 - (256 % (unsigned int)n);
    out = apr_palloc(p, len + 1);
    while (got < len) {
        unsigned char buf[64];
        apr_size_t i;

        if (bank_random_bytes(buf, sizeof(buf)) != 0) {
            return NULL;
        }
        for (i = 0; i < sizeof(buf) && got < len; i++) {
            if (buf[i] < limit) {
                out[got++] = alphabet[buf[i] % n];
            }
        }
    }
    out[len] = '\0';
    return out;
}

char *bank_uuid4(apr_pool_t *p)
{
    unsigned char b[16];
    char *h;

    if (bank_random_bytes(b, sizeof(b)) != 0) {
        return NULL;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    h = bank_hex(p, b, sizeof(b));
    return apr_psprintf(p, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
}

int bank_is_uuid(const char *s)
{
    int i;

    if (!s) {
        return 0;
    }
    for (i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') {
                return 0;
            }
        } else if (!apr_isxdigit(s[i])) {
            return 0;
        }
    }
    return s[36] == '\0';
}

/* Proleptic Gregorian calendar <-> days since 1970-01-01 (H. Hinnant's algorithms), so
 * neither TZ nor the C library's mktime/timegm is involved. */
static apr_int64_t days_from_civil(apr_int64_t y, int m, int d)
{
    apr_int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(apr_int64_t z, apr_int64_t *y, int *m, int *d)
{
    apr_int64_t era, doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* Floor division, so instants before 1970 land on the right day and millisecond. */
static apr_int64_t floor_div(apr_int64_t a, apr_int64_t b)
{
    apr_int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

char *bank_time_iso(apr_pool_t *p, apr_time_t t)
{
    apr_int64_t ms = floor_div(t, 1000);
    apr_int64_t secs = floor_div(ms, 1000);
    apr_int64_t days = floor_div(secs, 86400);
    apr_int64_t sod = secs - days * 86400, y;
    int m, d;

    civil_from_days(days, &y, &m, &d);
    return apr_psprintf(p, "%04" APR_INT64_T_FMT "-%02d-%02dT%02d:%02d:%02d.%03dZ", y, m, d,
                        (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60),
                        (int)(ms - secs * 1000));
}

/* Reads exactly n digits at *s into *v and advances; -1 if any is not a digit. */
static int take_digits(const char **s, int n, int *v)
{
    int i;

    *v = 0;
    for (i = 0; i < n; i++) {
        if (!apr_isdigit((*s)[i])) {
            return -1;
        }
        *v = *v * 10 + ((*s)[i] - '0');
    }
    *s += n;
    return 0;
}

static int take_char(const char **s, char c)
{
    if (**s != c) {
        return -1;
    }
    (*s)++;
    return 0;
}

int bank_days_in_month(int year, int month)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

    if (month < 1 || month > 12) {
        return 0;
    }
    return month == 2 ? 28 + leap : mdays[month - 1];
}

/* Fraction: 1..9 digits, kept to the microsecond. */
static int take_fraction(const char **s, apr_int64_t *usec)
{
    int n = 0;

    *usec = 0;
    if (**s != '.') {
        return 0;
    }
    (*s)++;
    while (apr_isdigit(**s) && n < 9) {
        if (n < 6) {
            *usec = *usec * 10 + (**s - '0');
        }
        (*s)++;
        n++;
    }
    if (n == 0 || apr_isdigit(**s)) {
        return -1;
    }
    for (; n < 6; n++) {
        *usec *= 10;
    }
    return 0;
}

/* Zone: nothing (UTC), Z, +HH, +HH:MM, +HHMM or +HH:MM:SS (and '-'); offset in seconds
 * east. PostgreSQL prints the seconds for zones whose offset had them (local mean time
 * before 1900-ish in many TimeZone settings). */
static int take_zone(const char **s, int *offset)
{
    int sign, hh, mm = 0, ss = 0;

    *offset = 0;
    if (**s == '\0') {
        return 0;
    }
    if (**s == 'Z') {
        (*s)++;
        return 0;
    }
    if (**s != '+' && **s != '-') {
        return -1;
    }
    sign = **s == '-' ? -1 : 1;
    (*s)++;
    if (take_digits(s, 2, &hh) != 0) {
        return -1;
    }
    if (**s == ':') {
        (*s)++;
        if (take_digits(s, 2, &mm) != 0 ||
            (**s == ':' && (take_char(s, ':') != 0 || take_digits(s, 2, &ss) != 0))) {
            return -1;
        }
    } else if (**s != '\0' && take_digits(s, 2, &mm) != 0) {
        return -1;
    }
    if (hh > 23 || mm > 59 || ss > 59) {
        return -1;
    }
    *offset = sign * (hh * 3600 + mm * 60 + ss);
    return 0;
}

int bank_time_parse(const char *s, apr_time_t *out)
{
    int y, mo, d, h, mi, se, offset;
    apr_int64_t usec, secs;

    if (!s || !out) {
        return -1;
    }
    if (take_digits(&s, 4, &y) || take_char(&s, '-') || take_digits(&s, 2, &mo) ||
        take_char(&s, '-') || take_digits(&s, 2, &d)) {
        return -1;
    }
    if (*s != 'T' && *s != ' ') {
        return -1;
    }
    s++;
    if (take_digits(&s, 2, &h) || take_char(&s, ':') || take_digits(&s, 2, &mi) ||
        take_char(&s, ':') || take_digits(&s, 2, &se) || take_fraction(&s, &usec) ||
        take_zone(&s, &offset) || *s != '\0') {
        return -1;
    }
    if (d < 1 || d > bank_days_in_month(y, mo) || h > 23 || mi > 59 || se > 59) {
        return -1;
    }
    secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset;
    *out = (apr_time_t)(secs * APR_USEC_PER_SEC + usec);
    return 0;
}

const char *bank_time_api(apr_pool_t *p, const char *db_text)
{
    apr_time_t t;
    return db_text && bank_time_parse(db_text, &t) == 0 ? bank_time_iso(p, t) : db_text;
}
