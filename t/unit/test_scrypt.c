/* Unit tests for scrypt (mod_bank/bank_scrypt.c): RFC 7914's vectors, OpenSSL's
 * EVP_PBE_scrypt for random parameters, and the work area given back to the system. The same
 * file is built twice (Makefile): with the SSE2 lanes where the compiler has them and with
 * BANK_SCRYPT_PORTABLE, the plain C lanes. */
#include "unit.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>
#include <openssl/evp.h>

#include "bank_scrypt.h"

static int hex_is(const unsigned char *got, apr_size_t len, const char *want)
{
    char buf[3];
    apr_size_t i;

    if (strlen(want) != 2 * len) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        apr_snprintf(buf, sizeof(buf), "%02x", got[i]);
        if (memcmp(buf, want + 2 * i, 2) != 0) {
            return 0;
        }
    }
    return 1;
}

static void test_rfc7914(apr_pool_t *p)
{
    unsigned char out[64];

    /* RFC 7914 section 12, the first three vectors (the fourth needs 1 GiB) */
    CHECK(bank_scrypt(p, "", 0, (const unsigned char *)"", 0, 16, 1, 1, out, 64) == 0);
    CHECK(hex_is(out, 64,
                 "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442"
                 "fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"));
    CHECK(bank_scrypt(p, "password", 8, (const unsigned char *)"NaCl", 4, 1024, 8, 16, out, 64) ==
          0);
    CHECK(hex_is(out, 64,
                 "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
                 "2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"));
    CHECK(bank_scrypt(p, "pleaseletmein", 13, (const unsigned char *)"SodiumChloride", 14, 16384, 8,
                      1, out, 64) == 0);
    CHECK(hex_is(out, 64,
                 "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2"
                 "d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"));
}

/* xorshift64: the same random cases on every run */
static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_against_openssl(apr_pool_t *p)
{
    uint64_t seed = 0x6d6f645f62616e6bULL;
    unsigned char pass[48], salt[48], want[96], got[96];
    int i, same = 0, cases = 300;

    for (i = 0; i < cases; i++) {
        /* r up to 32 as a stored hash may have it, with n small enough to stay quick */
        unsigned long n = 1UL << (1 + next(&seed) % 10), r = 1 + next(&seed) % 32,
                      par = 1 + next(&seed) % 3;

        if (r > 8 && n > 64) {
            n = 64;
        }
        apr_size_t pl = next(&seed) % sizeof(pass), sl = next(&seed) % sizeof(salt),
                   ol = 1 + next(&seed) % sizeof(want), k;

        for (k = 0; k < sizeof(pass); k++) {
            pass[k] = (unsigned char)next(&seed);
            salt[k] = (unsigned char)next(&seed);
        }
        if (EVP_PBE_scrypt((const char *)pass, pl, salt, sl, n, r, par, 0, want, ol) != 1) {
            fprintf(stderr, "OpenSSL refused n=%lu r=%lu p=%lu\n", n, r, par);
            continue;
        }
        if (bank_scrypt(p, (const char *)pass, pl, salt, sl, n, r, par, got, ol) == 0 &&
            memcmp(got, want, ol) == 0) {
            same++;
        } else {
            fprintf(stderr, "differs from OpenSSL: n=%lu r=%lu p=%lu pass %zu salt %zu out %zu\n",
                    n, r, par, (size_t)pl, (size_t)sl, (size_t)ol);
        }
    }
    CHECK(same == cases);
}

/* Two computations together give what each gives alone: RFC 7914's third vector beside
 * another password, then random pairs of one n, r and p against OpenSSL. */
static void test_two(apr_pool_t *p)
{
    uint64_t seed = 0x74776f5f61745f31ULL;
    unsigned char pass[2][48], salt[2][48], want[2][96], got[2][96], alone[64];
    bank_scrypt_in_t in[2];
    int i, c, same = 0, cases = 100;

    in[0].pass = "pleaseletmein", in[0].passlen = 13;
    in[0].salt = (const unsigned char *)"SodiumChloride", in[0].saltlen = 14;
    in[0].out = got[0], in[0].outlen = 64;
    in[1].pass = "pleaseletmeout", in[1].passlen = 14;
    in[1].salt = (const unsigned char *)"NaCl", in[1].saltlen = 4;
    in[1].out = got[1], in[1].outlen = 32;
    CHECK(bank_scrypt_two(p, in, 16384, 8, 1) == 0);
    CHECK(hex_is(got[0], 64,
                 "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2"
                 "d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"));
    CHECK(bank_scrypt(p, "pleaseletmeout", 14, (const unsigned char *)"NaCl", 4, 16384, 8, 1, alone,
                      32) == 0);
    CHECK(memcmp(got[1], alone, 32) == 0);
    for (i = 0; i < cases; i++) {
        unsigned long n = 1UL << (1 + next(&seed) % 10), r = 1 + next(&seed) % 16,
                      par = 1 + next(&seed) % 3;
        int ok = 1;

        if (r > 8 && n > 64) {
            n = 64;
        }
        for (c = 0; c < 2; c++) {
            apr_size_t k;

            for (k = 0; k < sizeof(pass[c]); k++) {
                pass[c][k] = (unsigned char)next(&seed);
                salt[c][k] = (unsigned char)next(&seed);
            }
            in[c].pass = (const char *)pass[c], in[c].passlen = next(&seed) % sizeof(pass[c]);
            in[c].salt = salt[c], in[c].saltlen = next(&seed) % sizeof(salt[c]);
            in[c].out = got[c], in[c].outlen = 1 + next(&seed) % sizeof(want[c]);
            ok = ok && EVP_PBE_scrypt(in[c].pass, in[c].passlen, salt[c], in[c].saltlen, n, r, par,
                                      0, want[c], in[c].outlen) == 1;
        }
        if (ok && bank_scrypt_two(p, in, n, r, par) == 0 &&
            memcmp(got[0], want[0], in[0].outlen) == 0 &&
            memcmp(got[1], want[1], in[1].outlen) == 0) {
            same++;
        } else {
            fprintf(stderr, "two differ from OpenSSL: n=%lu r=%lu p=%lu\n", n, r, par);
        }
    }
    CHECK(same == cases);
    /* refused as one would be */
    CHECK(bank_scrypt_two(p, in, 1000, 8, 1) == -1);
    CHECK(bank_scrypt_two(p, in, 1024, 1UL << 56, 1) == -1);
}

static void test_refused(apr_pool_t *p)
{
    unsigned char out[64];

    CHECK(bank_scrypt(p, "x", 1, (const unsigned char *)"s", 1, 0, 8, 1, out, 64) == -1);
    CHECK(bank_scrypt(p, "x", 1, (const unsigned char *)"s", 1, 1, 8, 1, out, 64) == -1);
    CHECK(bank_scrypt(p, "x", 1, (const unsigned char *)"s", 1, 1000, 8, 1, out, 64) == -1);
    CHECK(bank_scrypt(p, "x", 1, (const unsigned char *)"s", 1, 1024, 0, 1, out, 64) == -1);
    CHECK(bank_scrypt(p, "x", 1, (const unsigned char *)"s", 1, 1024, 8, 0, out, 64) == -1);
    /* a work area beyond what memory can address is refused, not wrapped around */
    CHECK(bank_scrypt(p, "x", 1, (const unsigned char *)"s", 1,
                      (unsigned long)1 << (sizeof(long) * CHAR_BIT - 2), 8, 1, out, 64) == -1);
    CHECK(bank_scrypt(p, "x", 1, (const unsigned char *)"s", 1, 1024, 1UL << 56, 1, out, 64) == -1);
#if ULONG_MAX > 0xFFFFFFFFUL
    /* 2^32 and above: beyond what Integerify reads (as OpenSSL) */
    CHECK(bank_scrypt(p, "x", 1, (const unsigned char *)"s", 1, 0xFFFFFFFFUL + 1, 1, 1, out, 64) ==
          -1);
#endif
    CHECK(bank_scrypt_mem(16384, 8) == (apr_size_t)128 * 8 * 16386);
}

/* Resident kilobytes of this process (VmRSS). */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;

    if (!f) {
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = atol(line + 6);
        }
    }
    fclose(f);
    return kib;
}

/* scrypt as sign-in computes it (n=16384, r=8) of one password and salt, into out[64]; and
 * the same twice as bank_scrypt_two's input. */
static int bench_one(apr_pool_t *p, unsigned char *out)
{
    return bank_scrypt(p, "bench-password", 14, (const unsigned char *)"0123456789abcdef", 16,
                       16384, 8, 1, out, 64);
}

static void bench_in(bank_scrypt_in_t in[2], unsigned char out[2][64])
{
    int i;

    for (i = 0; i < 2; i++) {
        in[i].pass = "bench-password", in[i].passlen = 14;
        in[i].salt = (const unsigned char *)"0123456789abcdef", in[i].saltlen = 16;
        in[i].out = out[i], in[i].outlen = 64;
    }
}

static void *APR_THREAD_FUNC verify_four(apr_thread_t *t, void *data)
{
    apr_pool_t *p;
    unsigned char out[64];
    int i, *ok = data;

    apr_pool_create(&p, NULL);
    for (i = 0; i < 4; i++) {
        *ok += bench_one(p, out) == 0;
    }
    apr_pool_destroy(p);
    apr_thread_exit(t, APR_SUCCESS);
    return NULL;
}

/* A thread that verified (as httpd's verification threads do) leaves nothing of the 16 MiB
 * work area resident: OpenSSL's malloc'd one stayed in the thread's glibc arena. */
static void test_memory_given_back(apr_pool_t *p)
{
    apr_thread_t *t;
    apr_status_t rv;
    long before = rss_kib(), after;
    int ok = 0;

    CHECK(before > 0);
    CHECK(apr_thread_create(&t, NULL, verify_four, &ok, p) == APR_SUCCESS);
    apr_thread_join(&rv, t);
    CHECK(ok == 4);
    after = rss_kib();
    if (after - before >= 4096) {
        fprintf(stderr, "resident after four verifications: +%ld KiB\n", after - before);
    }
    CHECK(after - before < 4096);
}

/* Kept areas (bank_scrypt_keep): the first computation maps one and leaves it resident, the
 * next ones use it again instead of mapping more, and bank_scrypt_drop_spares gives it back. */
static void test_kept_area(apr_pool_t *p)
{
    unsigned char out[2][64];
    bank_scrypt_in_t in[2];
    long before = rss_kib(), first, again, dropped;
    int ok = 0;

    bank_scrypt_keep(1);
    ok += bench_one(p, out[0]) == 0;
    first = rss_kib();
    bench_in(in, out);
    /* a pair needs twice the area: the one kept is too small, replaced by one of that size */
    ok += bank_scrypt_two(p, in, 16384, 8, 1) == 0;
    ok += bench_one(p, out[0]) == 0;
    ok += bank_scrypt_two(p, in, 16384, 8, 1) == 0;
    again = rss_kib();
    bank_scrypt_drop_spares();
    dropped = rss_kib();
    bank_scrypt_keep(0);
    fprintf(stderr, "kept area: %+ld KiB after one, %+ld after four, %+ld dropped\n",
            first - before, again - before, dropped - before);
    CHECK(ok == 4);
    CHECK(first - before >= 16 * 1024);
    CHECK(again - before >= 32 * 1024 && again - before < 40 * 1024);
    CHECK(dropped - before < 4096);
    CHECK(memcmp(out[0], out[1], sizeof(out[0])) == 0);
}

/* Two threads that verify at once, both started behind a barrier: they leave two spare areas
 * of one computation's size. */
typedef struct {
    pthread_barrier_t go;
    int ok[2];
} at_once_t;

static void *APR_THREAD_FUNC verify_at_once(apr_thread_t *t, void *data)
{
    at_once_t *a = data;
    apr_pool_t *p;
    unsigned char out[64];
    int i, me = pthread_barrier_wait(&a->go) == PTHREAD_BARRIER_SERIAL_THREAD;

    apr_pool_create(&p, NULL);
    for (i = 0; i < 4; i++) {
        a->ok[me] += bench_one(p, out) == 0;
    }
    apr_pool_destroy(p);
    apr_thread_exit(t, APR_SUCCESS);
    return NULL;
}

/* Kept areas of one computation's size, then a pair: the spares too small for it are all
 * given back and a new area mapped (a pair written into a single's area would run past its
 * end). Tried until the two threads did compute at once (at most 5 times). */
static void test_kept_areas_too_small(apr_pool_t *p)
{
    apr_thread_t *t[2];
    apr_status_t rv;
    unsigned char out[2][64], alone[64];
    bank_scrypt_in_t in[2];
    at_once_t a;
    long before = rss_kib(), two_spares = 0;
    int i, try;

    bank_scrypt_keep(2);
    for (try = 0; try < 5 && two_spares < 32 * 1024; try++) {
        bank_scrypt_drop_spares();
        memset(&a, 0, sizeof(a));
        pthread_barrier_init(&a.go, NULL, 2);
        for (i = 0; i < 2; i++) {
            CHECK(apr_thread_create(&t[i], NULL, verify_at_once, &a, p) == APR_SUCCESS);
        }
        for (i = 0; i < 2; i++) {
            apr_thread_join(&rv, t[i]);
        }
        pthread_barrier_destroy(&a.go);
        CHECK(a.ok[0] == 4 && a.ok[1] == 4);
        two_spares = rss_kib() - before;
    }
    bench_in(in, out);
    CHECK(bank_scrypt_two(p, in, 16384, 8, 1) == 0);
    CHECK(bench_one(p, alone) == 0);
    fprintf(stderr, "two threads at once left %+ld KiB (try %d); then a pair: %+ld KiB\n",
            two_spares, try, rss_kib() - before);
    bank_scrypt_keep(0);
    CHECK(two_spares >= 32 * 1024); /* two spares of one computation's size were there */
    CHECK(memcmp(out[0], alone, sizeof(alone)) == 0 && memcmp(out[1], alone, sizeof(alone)) == 0);
    CHECK(rss_kib() - before < 4096);
}

static void run_tests(apr_pool_t *p)
{
    test_rfc7914(p);
    test_against_openssl(p);
    test_two(p);
    test_refused(p);
    test_memory_given_back(p);
    test_kept_area(p);
    test_kept_areas_too_small(p);
}
