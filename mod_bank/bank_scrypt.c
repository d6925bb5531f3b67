/* scrypt (RFC 7914), why our own: include/bank_scrypt.h.
 *
 * Every 64-byte Salsa20 block is kept as four lanes of four 32-bit words, in the diagonal order
 * (x0 x5 x10 x15) (x4 x9 x14 x3) (x8 x13 x2 x7) (x12 x1 x6 x11): a column round is then four
 * lane-wise steps, and a row round the same steps after rotating three lanes. XOR and addition
 * are lane-wise, so the work area holds blocks in that order too; bytes are reordered only when
 * PBKDF2's output goes in and comes back out. */
#include <stdint.h>
#include <string.h>
#include <limits.h>
#include <sys/mman.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "bank_scrypt.h"

#if defined(__SSE2__) && !defined(BANK_SCRYPT_PORTABLE)
#include <emmintrin.h>
typedef __m128i lane_t;
#define L_ADD(a, b) _mm_add_epi32(a, b)
#define L_XOR(a, b) _mm_xor_si128(a, b)
#define L_ROT(a, n) _mm_or_si128(_mm_slli_epi32(a, n), _mm_srli_epi32(a, 32 - (n)))
#define L_SHUF(a, k) _mm_shuffle_epi32(a, k)
static inline lane_t l_make(const uint32_t w[4])
{
    return _mm_loadu_si128((const __m128i *)(const void *)w);
}
static inline void l_split(lane_t a, uint32_t w[4])
{
    _mm_storeu_si128((__m128i *)(void *)w, a);
}
static inline uint32_t l_first(lane_t a)
{
    return (uint32_t)_mm_cvtsi128_si32(a);
}
#else
typedef struct {
    uint32_t w[4];
} lane_t;
static inline lane_t l_add(lane_t a, lane_t b)
{
    int i;

    for (i = 0; i < 4; i++) {
        a.w[i] += b.w[i];
    }
    return a;
}
static inline lane_t l_xor(lane_t a, lane_t b)
{
    int i;

    for (i = 0; i < 4; i++) {
        a.w[i] ^= b.w[i];
    }
    return a;
}
static inline lane_t l_rot(lane_t a, int n)
{
    int i;

    for (i = 0; i < 4; i++) {
        a.w[i] = (a.w[i] << n) | (a.w[i] >> (32 - n));
    }
    return a;
}
/* lane i of the result is lane (k >> 2i) & 3 of a, as SSE2's pshufd */
static inline lane_t l_shuf(lane_t a, int k)
{
    lane_t r;
    int i;

    for (i = 0; i < 4; i++) {
        r.w[i] = a.w[(k >> (2 * i)) & 3];
    }
    return r;
}
#define L_ADD(a, b) l_add(a, b)
#define L_XOR(a, b) l_xor(a, b)
#define L_ROT(a, n) l_rot(a, n)
#define L_SHUF(a, k) l_shuf(a, k)
static inline lane_t l_make(const uint32_t w[4])
{
    lane_t r;

    memcpy(r.w, w, sizeof(r.w));
    return r;
}
static inline void l_split(lane_t a, uint32_t w[4])
{
    memcpy(w, a.w, sizeof(a.w));
}
static inline uint32_t l_first(lane_t a)
{
    return a.w[0];
}
#endif

/* Word i of a stored block is word order[i] of the block as RFC 7914 writes it. */
static const int order[16] = {0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12, 1, 6, 11};

/* Salsa20/8 on one block b[4], in place. */
static inline void salsa20_8(lane_t *b)
{
    lane_t a0 = b[0], a1 = b[1], a2 = b[2], a3 = b[3];
    int i;

    for (i = 0; i < 8; i += 2) {
        /* columns: (x0 x4 x8 x12) (x5 x9 x13 x1) (x10 x14 x2 x6) (x15 x3 x7 x11) */
        a1 = L_XOR(a1, L_ROT(L_ADD(a0, a3), 7));
        a2 = L_XOR(a2, L_ROT(L_ADD(a1, a0), 9));
        a3 = L_XOR(a3, L_ROT(L_ADD(a2, a1), 13));
        a0 = L_XOR(a0, L_ROT(L_ADD(a3, a2), 18));
        /* rows: the same steps once a3 holds (x1 x6 x11 x12), a2 (x2 x7 x8 x13), a1 (x3 x4 x9
         * x14) */
        a3 = L_SHUF(a3, 0x39);
        a2 = L_SHUF(a2, 0x4E);
        a1 = L_SHUF(a1, 0x93);
        a3 = L_XOR(a3, L_ROT(L_ADD(a0, a1), 7));
        a2 = L_XOR(a2, L_ROT(L_ADD(a3, a0), 9));
        a1 = L_XOR(a1, L_ROT(L_ADD(a2, a3), 13));
        a0 = L_XOR(a0, L_ROT(L_ADD(a1, a2), 18));
        a3 = L_SHUF(a3, 0x93);
        a2 = L_SHUF(a2, 0x4E);
        a1 = L_SHUF(a1, 0x39);
    }
    b[0] = L_ADD(b[0], a0);
    b[1] = L_ADD(b[1], a1);
    b[2] = L_ADD(b[2], a2);
    b[3] = L_ADD(b[3], a3);
}

/* BlockMix: in (2r blocks) to out (2r blocks, even results first, then odd ones). */
static void block_mix(const lane_t *in, lane_t *out, apr_size_t r)
{
    lane_t x[4];
    apr_size_t i;
    int k;

    for (k = 0; k < 4; k++) {
        x[k] = in[(2 * r - 1) * 4 + k];
    }
    for (i = 0; i < 2 * r; i++) {
        for (k = 0; k < 4; k++) {
            x[k] = L_XOR(x[k], in[i * 4 + k]);
        }
        salsa20_8(x);
        for (k = 0; k < 4; k++) {
            out[((i & 1) * r + i / 2) * 4 + k] = x[k];
        }
    }
}

static void xor_into(lane_t *x, const lane_t *v, apr_size_t lanes)
{
    apr_size_t k;

    for (k = 0; k < lanes; k++) {
        x[k] = L_XOR(x[k], v[k]);
    }
}

/* The block bytes b (128r) as lanes x, in stored word order, and back. */
static void load(const unsigned char *b, lane_t *x, apr_size_t r)
{
    apr_size_t blk;
    uint32_t w[4];
    int i, k;

    for (blk = 0; blk < 2 * r; blk++) {
        for (i = 0; i < 4; i++) {
            for (k = 0; k < 4; k++) {
                const unsigned char *s = b + 64 * blk + 4 * order[4 * i + k];

                w[k] = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 |
                       (uint32_t)s[3] << 24;
            }
            x[blk * 4 + i] = l_make(w);
        }
    }
}

static void store(const lane_t *x, unsigned char *b, apr_size_t r)
{
    apr_size_t blk;
    uint32_t w[4];
    int i, k;

    for (blk = 0; blk < 2 * r; blk++) {
        for (i = 0; i < 4; i++) {
            l_split(x[blk * 4 + i], w);
            for (k = 0; k < 4; k++) {
                unsigned char *d = b + 64 * blk + 4 * order[4 * i + k];

                d[0] = (unsigned char)w[k];
                d[1] = (unsigned char)(w[k] >> 8);
                d[2] = (unsigned char)(w[k] >> 16);
                d[3] = (unsigned char)(w[k] >> 24);
            }
        }
    }
}

/* ROMix on b (128r bytes) with v (n blocks of 128r) and scratch x, y (128r each). Two steps
 * per turn, so that x and y swap roles instead of being copied. */
static void ro_mix(unsigned char *b, apr_size_t r, unsigned long n, lane_t *v, lane_t *x, lane_t *y)
{
    apr_size_t lanes = 8 * r, last = (2 * r - 1) * 4;
    unsigned long i, j;

    load(b, x, r);
    for (i = 0; i < n; i += 2) {
        memcpy(&v[i * lanes], x, lanes * sizeof(lane_t));
        block_mix(x, y, r);
        memcpy(&v[(i + 1) * lanes], y, lanes * sizeof(lane_t));
        block_mix(y, x, r);
    }
    for (i = 0; i < n; i += 2) {
        j = l_first(x[last]) & (n - 1);
        xor_into(x, &v[j * lanes], lanes);
        block_mix(x, y, r);
        j = l_first(y[last]) & (n - 1);
        xor_into(y, &v[j * lanes], lanes);
        block_mix(y, x, r);
    }
    store(x, b, r);
}

apr_size_t bank_scrypt_mem(unsigned long n, unsigned long r)
{
    return (apr_size_t)128 * r * (n + 2);
}

#define HUGE_PAGE ((apr_size_t)2 * 1024 * 1024)

typedef struct {
    void *addr;
    apr_size_t len;
    unsigned char *used; /* what ROMix wrote (V, x, y), wiped before the unmap */
    apr_size_t used_len;
} mapping_t;

/* Any V_i or the last x lets a guess be tested without scrypt's memory cost: wiped, as
 * OpenSSL wipes its own, before the pages go back (munmap does not clear them). */
static apr_status_t unmap(void *data)
{
    mapping_t *m = data;

    if (m->used) {
        OPENSSL_cleanse(m->used, m->used_len);
    }
    munmap(m->addr, m->len);
    return APR_SUCCESS;
}

int bank_scrypt(apr_pool_t *pool, const char *pass, apr_size_t passlen, const unsigned char *salt,
                apr_size_t saltlen, unsigned long n, unsigned long r, unsigned long p,
                unsigned char *out, apr_size_t outlen)
{
    apr_size_t blen, vlen, i;
    mapping_t *m;
    unsigned char *b, *area;
    int rc = -1;

    /* sizes that would not fit in memory's addresses are refused before any is computed */
    /* Integerify reads 32 bits (n up to 2^32, as OpenSSL) */
    if (n < 2 || (n & (n - 1)) != 0 || n > 0xFFFFFFFFUL || r < 1 || p < 1 ||
        r > SIZE_MAX / 256 / (n + 2) || p > SIZE_MAX / 256 / r || passlen > INT_MAX ||
        saltlen > INT_MAX || outlen > INT_MAX) {
        return -1;
    }
    blen = (apr_size_t)128 * r * p;
    vlen = (apr_size_t)128 * r * n;
    if (blen > INT_MAX) {
        return -1;
    }
    /* One mapping, a huge page more than needed so that the work area can start on a huge
     * page boundary (pages never touched are never backed). The pool's cleanup unmaps it
     * even if this call is cut short. */
    m = apr_pcalloc(pool, sizeof(*m));
    m->len = bank_scrypt_mem(n, r) + HUGE_PAGE;
    m->addr = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m->addr == MAP_FAILED) {
        return -1;
    }
    apr_pool_cleanup_register(pool, m, unmap, apr_pool_cleanup_null);
    area = (unsigned char *)(((uintptr_t)m->addr + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
#ifdef MADV_HUGEPAGE
    (void)madvise(area, m->len - (apr_size_t)(area - (unsigned char *)m->addr), MADV_HUGEPAGE);
#endif
#ifdef MADV_DONTDUMP
    (void)madvise(m->addr, m->len, MADV_DONTDUMP); /* never in a core file */
#endif
#ifdef MADV_DONTFORK
    (void)madvise(m->addr, m->len, MADV_DONTFORK);
#endif
    b = apr_palloc(pool, blen);
    if (PKCS5_PBKDF2_HMAC(pass, (int)passlen, salt, (int)saltlen, 1, EVP_sha256(), (int)blen, b) ==
        1) {
        m->used = area;
        m->used_len = vlen + (apr_size_t)256 * r;
        for (i = 0; i < p; i++) {
            ro_mix(b + (apr_size_t)128 * r * i, r, n, (lane_t *)(void *)area,
                   (lane_t *)(void *)(area + vlen), (lane_t *)(void *)(area + vlen + 128 * r));
        }
        rc = PKCS5_PBKDF2_HMAC(pass, (int)passlen, b, (int)blen, 1, EVP_sha256(), (int)outlen,
                               out) == 1
                 ? 0
                 : -1;
    }
    OPENSSL_cleanse(b, blen);
    apr_pool_cleanup_run(pool, m, unmap);
    return rc;
}
