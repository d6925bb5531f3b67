/* Byte encodings shared by the module and bankctl: one base64 implementation over any
 * 64-character alphabet, hex, and the one ASCII case folding of the tree (a byte of a UTF-8
 * sequence is never changed, whatever the C locale says). No httpd dependency. */
#ifndef BANK_ENCODING_H
#define BANK_ENCODING_H

#include <apr_pools.h>

/* RFC 4648 section 5 (url-safe), section 4 (standard), and bcrypt's own order. */
#define BANK_B64URL_ALPHABET "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
#define BANK_B64STD_ALPHABET "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
#define BANK_BCRYPT_ALPHABET "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/* base64 without padding in the given alphabet. */
char *bank_b64_encode(apr_pool_t *p, const unsigned char *in, apr_size_t len, const char *alpha);
/* Strict decode: only the alphabet, no padding, no trailing bits set (one accepted encoding
 * per byte string). Returns 0 and a NUL-terminated buffer, or -1. */
int bank_b64_decode(apr_pool_t *p, const char *in, const char *alpha, unsigned char **out,
                    apr_size_t *outlen);
/* The two alphabets by name: url-safe (tokens) and standard (PHC password strings). */
char *bank_b64url_encode(apr_pool_t *p, const unsigned char *in, apr_size_t len);
int bank_b64url_decode(apr_pool_t *p, const char *in, unsigned char **out, apr_size_t *outlen);
char *bank_b64std_encode(apr_pool_t *p, const unsigned char *in, apr_size_t len);
int bank_b64std_decode(apr_pool_t *p, const char *in, unsigned char **out, apr_size_t *outlen);

/* RFC 3629 UTF-8: the length (2 to 4) of the multi-byte sequence that starts s, of at most
 * avail bytes, or 0 if it is not one (an overlong form, a surrogate, above U+10FFFF, cut
 * short, or an ASCII byte). */
apr_size_t bank_utf8_sequence(const unsigned char *s, apr_size_t avail);
/* 1 if the len bytes at s are UTF-8 text by RFC 3629 (NUL bytes included), else 0. */
int bank_utf8_valid(const char *s, apr_size_t len);

/* The value of one hex digit (either case), or -1. */
int bank_hex_digit(int c);
/* Lower-case hex. */
char *bank_hex(apr_pool_t *p, const unsigned char *in, apr_size_t len);

/* c with an ASCII letter lower-cased (upper=0) or upper-cased (upper=1); any other byte
 * as it is. */
char bank_ascii_fold(char c, int upper);
/* A copy of s with ASCII letters lower-cased (e-mail keys). */
char *bank_ascii_lower(apr_pool_t *p, const char *s);

#endif
