/* Byte encodings: one base64 (any 64-character alphabet), hex, and ASCII case folding. */
#include <string.h>

#include <apr_strings.h>

#include "bank_encoding.h"

char *bank_b64_encode(apr_pool_t *p, const unsigned char *in, apr_size_t len, const char *alpha)
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
int bank_b64_decode(apr_pool_t *p, const char *in, const char *alpha, unsigned char **out,
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
    return bank_b64_encode(p, in, len, BANK_B64URL_ALPHABET);
}

int bank_b64url_decode(apr_pool_t *p, const char *in, unsigned char **out, apr_size_t *outlen)
{
    return bank_b64_decode(p, in, BANK_B64URL_ALPHABET, out, outlen);
}

char *bank_b64std_encode(apr_pool_t *p, const unsigned char *in, apr_size_t len)
{
    return bank_b64_encode(p, in, len, BANK_B64STD_ALPHABET);
}

int bank_b64std_decode(apr_pool_t *p, const char *in, unsigned char **out, apr_size_t *outlen)
{
    return bank_b64_decode(p, in, BANK_B64STD_ALPHABET, out, outlen);
}

int bank_hex_digit(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
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

char bank_ascii_fold(char c, int upper)
{
    if (upper && c >= 'a' && c <= 'z') {
        return (char)(c - 'a' + 'A');
    }
    if (!upper && c >= 'A' && c <= 'Z') {
        return (char)(c - 'A' + 'a');
    }
    return c;
}

char *bank_ascii_lower(apr_pool_t *p, const char *s)
{
    char *out = apr_pstrdup(p, s), *c;
    for (c = out; *c; c++) {
        *c = bank_ascii_fold(*c, 0);
    }
    return out;
}

apr_size_t bank_utf8_sequence(const unsigned char *s, apr_size_t avail)
{
    unsigned char c = s[0];
    unsigned long cp, min;
    apr_size_t n, k;

    if (c >= 0xC2 && c <= 0xDF) {
        n = 1, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 2, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 3, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (avail <= n) {
        return 0;
    }
    for (k = 1; k <= n; k++) {
        if ((s[k] & 0xC0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 0;
    }
    return n + 1;
}

int bank_utf8_valid(const char *s, apr_size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    apr_size_t i = 0, n;

    while (i < len) {
        if (u[i] < 0x80) {
            i++;
        } else if ((n = bank_utf8_sequence(u + i, len - i)) != 0) {
            i += n;
        } else {
            return 0;
        }
    }
    return 1;
}
