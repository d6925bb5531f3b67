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
#include <pthread.h>
#include <unistd.h>

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

/* One step of a Salsa20 round on each of `count` chains: d ^= (s + t) <<< k. Step by step
 * rather than chain by chain, so that the core has the next step of the other chain at hand
 * while one waits for its result. */
static inline __attribute__((always_inline)) void step(lane_t *d, const lane_t *s, const lane_t *t,
                                                       int k, int count)
{
    int c;

#pragma GCC unroll 2
    for (c = 0; c < count; c++) {
        d[c] = L_XOR(d[c], L_ROT(L_ADD(s[c], t[c]), k));
    }
}

/* Rotates the lanes of a1, a2, a3 of each chain between columns and rows (there and back). */
static inline __attribute__((always_inline)) void turn(lane_t *a1, lane_t *a2, lane_t *a3,
                                                       int there, int count)
{
    int c;

#pragma GCC unroll 2
    for (c = 0; c < count; c++) {
        a3[c] = there ? L_SHUF(a3[c], 0x39) : L_SHUF(a3[c], 0x93);
        a2[c] = L_SHUF(a2[c], 0x4E);
        a1[c] = there ? L_SHUF(a1[c], 0x93) : L_SHUF(a1[c], 0x39);
    }
}

/* Salsa20/8 on `count` blocks at once (1 or 2, a constant where it is inlined), each b[c][4],
 * in place. Two blocks are two independent chains of steps: the core runs the steps of one
 * while those of the other wait for their results (one chain leaves most of its vector units
 * idle), so two take much less than twice as long as one (docs/benchmarks.md, "Sign-ins
 * verified two at a time", has the figures). */
static inline __attribute__((always_inline)) void salsa20_8(lane_t *const *b, int count)
{
    lane_t a0[2], a1[2], a2[2], a3[2];
    int i, c;

#pragma GCC unroll 2
    for (c = 0; c < count; c++) {
        a0[c] = b[c][0], a1[c] = b[c][1], a2[c] = b[c][2], a3[c] = b[c][3];
    }
    for (i = 0; i < 8; i += 2) {
        /* columns: (x0 x4 x8 x12) (x5 x9 x13 x1) (x10 x14 x2 x6) (x15 x3 x7 x11) */
        step(a1, a0, a3, 7, count);
        step(a2, a1, a0, 9, count);
        step(a3, a2, a1, 13, count);
        step(a0, a3, a2, 18, count);
        /* rows: the same steps once a3 holds (x1 x6 x11 x12), a2 (x2 x7 x8 x13), a1 (x3 x4 x9
         * x14) */
        turn(a1, a2, a3, 1, count);
        step(a3, a0, a1, 7, count);
        step(a2, a3, a0, 9, count);
        step(a1, a2, a3, 13, count);
        step(a0, a1, a2, 18, count);
        turn(a1, a2, a3, 0, count);
    }
#pragma GCC unroll 2
    for (c = 0; c < count; c++) {
        b[c][0] = L_ADD(b[c][0], a0[c]);
        b[c][1] = L_ADD(b[c][1], a1[c]);
        b[c][2] = L_ADD(b[c][2], a2[c]);
        b[c][3] = L_ADD(b[c][3], a3[c]);
    }
}

/* BlockMix of `count` computations: in[c] (2r blocks) to out[c] (2r blocks, even results
 * first, then odd ones). */
static inline __attribute__((always_inline)) void block_mix(lane_t *const *in, lane_t *const *out,
                                                            apr_size_t r, int count)
{
    lane_t x[2][4], *xs[2] = {x[0], x[1]};
    apr_size_t i;
    int k, c;

#pragma GCC unroll 2
    for (c = 0; c < count; c++) {
        for (k = 0; k < 4; k++) {
            x[c][k] = in[c][(2 * r - 1) * 4 + k];
        }
    }
    for (i = 0; i < 2 * r; i++) {
#pragma GCC unroll 2
        for (c = 0; c < count; c++) {
            for (k = 0; k < 4; k++) {
                x[c][k] = L_XOR(x[c][k], in[c][i * 4 + k]);
            }
        }
        salsa20_8(xs, count);
#pragma GCC unroll 2
        for (c = 0; c < count; c++) {
            for (k = 0; k < 4; k++) {
                out[c][((i & 1) * r + i / 2) * 4 + k] = x[c][k];
            }
        }
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

/* The work of one computation: V (n blocks of 128r), then scratch x and y (128r each). */
typedef struct {
    unsigned char *b; /* 128r bytes in and out */
    lane_t *v, *x, *y;
} romix_t;

/* ROMix's second loop, before each BlockMix: x[c] ^= V_j of computation c, j = Integerify(x[c])
 * mod n. */
static inline __attribute__((always_inline)) void
xor_integerify(lane_t *const *x, const romix_t *w, apr_size_t r, unsigned long n, int count)
{
    apr_size_t lanes = 8 * r, k;
    unsigned long j;
    int c;

#pragma GCC unroll 2
    for (c = 0; c < count; c++) {
        j = l_first(x[c][(2 * r - 1) * 4]) & (n - 1);
        for (k = 0; k < lanes; k++) {
            x[c][k] = L_XOR(x[c][k], w[c].v[j * lanes + k]);
        }
    }
}

/* ROMix of `count` computations with the same n and r, each on its own work area. Two steps
 * per turn, so that x and y swap roles instead of being copied. */
static inline __attribute__((always_inline)) void ro_mix(const romix_t *w, apr_size_t r,
                                                         unsigned long n, int count)
{
    apr_size_t lanes = 8 * r;
    lane_t *x[2], *y[2];
    unsigned long i;
    int c;

#pragma GCC unroll 2
    for (c = 0; c < count; c++) {
        x[c] = w[c].x, y[c] = w[c].y;
        load(w[c].b, x[c], r);
    }
    for (i = 0; i < n; i += 2) {
#pragma GCC unroll 2
        for (c = 0; c < count; c++) {
            memcpy(&w[c].v[i * lanes], x[c], lanes * sizeof(lane_t));
        }
        block_mix(x, y, r, count);
#pragma GCC unroll 2
        for (c = 0; c < count; c++) {
            memcpy(&w[c].v[(i + 1) * lanes], y[c], lanes * sizeof(lane_t));
        }
        block_mix(y, x, r, count);
    }
    for (i = 0; i < n; i += 2) {
        xor_integerify(x, w, r, n, count);
        block_mix(x, y, r, count);
        xor_integerify(y, w, r, n, count);
        block_mix(y, x, r, count);
    }
#pragma GCC unroll 2
    for (c = 0; c < count; c++) {
        store(x[c], w[c].b, r);
    }
}

static void ro_mix_one(const romix_t *w, apr_size_t r, unsigned long n)
{
    ro_mix(w, r, n, 1);
}

static void ro_mix_two(const romix_t *w, apr_size_t r, unsigned long n)
{
    ro_mix(w, r, n, 2);
}

apr_size_t bank_scrypt_mem(unsigned long n, unsigned long r)
{
    return (apr_size_t)128 * r * (n + 2);
}

#define HUGE_PAGE ((apr_size_t)2 * 1024 * 1024)

typedef struct {
    void *addr;
    apr_size_t len;
    int kept;            /* kept for the process's next computations (bank_scrypt_keep) */
    unsigned char *used; /* what ROMix wrote (V, x, y), wiped before the unmap */
    apr_size_t used_len;
} mapping_t;

/* Work areas given back by computations and kept for the next ones (bank_scrypt_keep), the
 * last given back on top: the next computation takes the area whose pages the caches hold
 * best: with each of a process's verification threads keeping its own area, the areas were
 * used in turn and sign-ins were slower (docs/benchmarks.md, "What was learned"). Only the
 * process that kept them has them (spare_pid): MADV_DONTFORK leaves them out of a child. */
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *addr;
    apr_size_t len;
} spare[BANK_SCRYPT_KEEP_MAX];
static int spares, keep_max;
static pid_t spare_pid;

/* The spare list as this process's (spare_lock held): a forked child's copy names areas that
 * were not forked, and is emptied. */
static void adopt(void)
{
    if (spare_pid != getpid()) {
        spares = 0;
        spare_pid = getpid();
    }
}

/* Any V_i or the last x lets a guess be tested without scrypt's memory cost: wiped, as
 * OpenSSL wipes its own, before the pages go back (munmap does not clear them) or, for a kept
 * area, before the call returns. */
static apr_status_t unmap(void *data)
{
    mapping_t *m = data;

    if (m->used) {
        explicit_bzero(m->used, m->used_len);
    }
    if (m->kept) {
        pthread_mutex_lock(&spare_lock);
        adopt();
        if (spares < keep_max) {
            spare[spares].addr = m->addr, spare[spares].len = m->len;
            spares++;
            m = NULL;
        }
        pthread_mutex_unlock(&spare_lock);
    }
    if (m) {
        munmap(m->addr, m->len);
    }
    return APR_SUCCESS;
}

/* A private anonymous mapping of len bytes, never in a core file or a child's memory, huge
 * pages asked for from its first huge page boundary on. MAP_FAILED if none. */
static void *map_area(apr_size_t len)
{
    void *addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *area;

    if (addr == MAP_FAILED) {
        return addr;
    }
    area = (unsigned char *)(((uintptr_t)addr + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
#ifdef MADV_HUGEPAGE
    (void)madvise(area, len - (apr_size_t)(area - (unsigned char *)addr), MADV_HUGEPAGE);
#else
    (void)area;
#endif
#ifdef MADV_DONTDUMP
    (void)madvise(addr, len, MADV_DONTDUMP); /* never in a core file */
#endif
#ifdef MADV_DONTFORK
    (void)madvise(addr, len, MADV_DONTFORK);
#endif
    return addr;
}

/* Unmaps the spare areas beyond `keep` (spare_lock held). */
static void drop_spares(int keep)
{
    adopt();
    while (spares > keep) {
        spares--;
        munmap(spare[spares].addr, spare[spares].len);
    }
}

void bank_scrypt_keep(int areas)
{
    pthread_mutex_lock(&spare_lock);
    keep_max = areas < 0 ? 0 : areas > BANK_SCRYPT_KEEP_MAX ? BANK_SCRYPT_KEEP_MAX : areas;
    drop_spares(keep_max);
    pthread_mutex_unlock(&spare_lock);
}

void bank_scrypt_drop_spares(void)
{
    pthread_mutex_lock(&spare_lock);
    drop_spares(0);
    pthread_mutex_unlock(&spare_lock);
}

/* The mapping for len bytes: the spare area on top once those too small above it are
 * unmapped, else a new one; kept afterwards if areas are kept. 0, or -1 if none could be
 * mapped. */
static int area_for(mapping_t *m, apr_size_t len)
{
    pthread_mutex_lock(&spare_lock);
    m->kept = keep_max > 0;
    if (m->kept) {
        adopt();
        while (spares > 0 && spare[spares - 1].len < len) {
            drop_spares(spares - 1);
        }
        if (spares > 0) {
            spares--;
            m->addr = spare[spares].addr, m->len = spare[spares].len;
        }
    }
    pthread_mutex_unlock(&spare_lock);
    if (!m->addr) {
        m->addr = map_area(len), m->len = len;
    }
    return m->addr == MAP_FAILED ? -1 : 0;
}

/* 1 if n, r, p and each computation's lengths are ones this code takes: sizes that would not
 * fit in memory's addresses are refused before any is computed. */
static int sizes_ok(const bank_scrypt_in_t *in, int count, unsigned long n, unsigned long r,
                    unsigned long p)
{
    int c;

    /* Integerify reads 32 bits (n up to 2^32, as OpenSSL) */
    if (n < 2 || (n & (n - 1)) != 0 || n > 0xFFFFFFFFUL || r < 1 || p < 1 ||
        r > SIZE_MAX / 512 / (n + 2) || p > SIZE_MAX / 256 / r) {
        return 0;
    }
    for (c = 0; c < count; c++) {
        if (in[c].passlen > INT_MAX || in[c].saltlen > INT_MAX || in[c].outlen > INT_MAX) {
            return 0;
        }
    }
    return (apr_size_t)128 * r * p <= INT_MAX;
}

/* ROMix of each of the p blocks of every computation's B, the count computations' steps
 * together. */
static void ro_mix_blocks(romix_t *w, unsigned char *const *b, int count, unsigned long n,
                          unsigned long r, unsigned long p)
{
    apr_size_t i;
    int c;

    for (i = 0; i < p; i++) {
        for (c = 0; c < count; c++) {
            w[c].b = b[c] + (apr_size_t)128 * r * i;
        }
        if (count == 2) {
            ro_mix_two(w, r, n);
        } else {
            ro_mix_one(w, r, n);
        }
    }
}

/* scrypt of count (1 or 2) computations with the same n, r and p, their ROMix steps together
 * on this thread. */
static int scrypt_run(apr_pool_t *pool, const bank_scrypt_in_t *in, int count, unsigned long n,
                      unsigned long r, unsigned long p)
{
    apr_size_t blen, vlen;
    mapping_t *m;
    unsigned char *b[2], *area;
    romix_t w[2];
    int rc = 0, c;

    if (!sizes_ok(in, count, n, r, p)) {
        return -1;
    }
    blen = (apr_size_t)128 * r * p;
    vlen = (apr_size_t)128 * r * n;
    /* One mapping, a huge page more than needed so that the work area can start on a huge
     * page boundary (pages never touched are never backed): every computation's V, then every
     * computation's x and y. The pool's cleanup wipes it (and unmaps it unless the process
     * keeps it) even if this call is cut short. */
    m = apr_pcalloc(pool, sizeof(*m));
    if (area_for(m, bank_scrypt_mem(n, r) * (apr_size_t)count + HUGE_PAGE) != 0) {
        return -1;
    }
    apr_pool_cleanup_register(pool, m, unmap, apr_pool_cleanup_null);
    area = (unsigned char *)(((uintptr_t)m->addr + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    for (c = 0; c < count; c++) {
        b[c] = apr_palloc(pool, blen);
        w[c].v = (lane_t *)(void *)(area + vlen * (apr_size_t)c);
        w[c].x = (lane_t *)(void *)(area + vlen * (apr_size_t)count + (apr_size_t)256 * r * c);
        w[c].y = w[c].x + 8 * r;
        if (PKCS5_PBKDF2_HMAC(in[c].pass, (int)in[c].passlen, in[c].salt, (int)in[c].saltlen, 1,
                              EVP_sha256(), (int)blen, b[c]) != 1) {
            rc = -1;
        }
    }
    if (rc == 0) {
        m->used = area;
        m->used_len = (vlen + (apr_size_t)256 * r) * (apr_size_t)count;
        ro_mix_blocks(w, b, count, n, r, p);
        for (c = 0; c < count; c++) {
            if (PKCS5_PBKDF2_HMAC(in[c].pass, (int)in[c].passlen, b[c], (int)blen, 1, EVP_sha256(),
                                  (int)in[c].outlen, in[c].out) != 1) {
                rc = -1;
            }
        }
    }
    for (c = 0; c < count; c++) {
        OPENSSL_cleanse(b[c], blen);
    }
    apr_pool_cleanup_run(pool, m, unmap);
    return rc;
}

int bank_scrypt(apr_pool_t *pool, const char *pass, apr_size_t passlen, const unsigned char *salt,
                apr_size_t saltlen, unsigned long n, unsigned long r, unsigned long p,
                unsigned char *out, apr_size_t outlen)
{
    bank_scrypt_in_t in;

    in.pass = pass, in.passlen = passlen, in.salt = salt, in.saltlen = saltlen;
    in.out = out, in.outlen = outlen;
    return scrypt_run(pool, &in, 1, n, r, p);
}

int bank_scrypt_two(apr_pool_t *pool, const bank_scrypt_in_t in[2], unsigned long n,
                    unsigned long r, unsigned long p)
{
    return scrypt_run(pool, in, 2, n, r, p);
}
