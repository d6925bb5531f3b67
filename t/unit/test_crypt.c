/* Unit tests for the identity-data codec: sealing, opening, the associated data, key ids,
 * the keyed hash, key files. */
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include "bank_crypt.h"
#include "bank_encoding.h"

static const unsigned char K1[BANK_KEY_LEN] = "0123456789abcdef0123456789abcdef";
static const unsigned char K2[BANK_KEY_LEN] = "fedcba9876543210fedcba9876543210";
static const unsigned char H[BANK_KEY_LEN] = "hash-key-hash-key-hash-key-hash!";

static bank_keyring_t *ring(apr_pool_t *p, const char *cur_id, const unsigned char *cur,
                            const char *old_id, const unsigned char *old)
{
    bank_keyring_t *kr = bank_keyring_make(p);

    if (cur_id) {
        CHECK(bank_keyring_add(kr, cur_id, cur, 1) == NULL);
    }
    if (old_id) {
        CHECK(bank_keyring_add(kr, old_id, old, 0) == NULL);
    }
    bank_keyring_set_hash_key(kr, H);
    return kr;
}

static bank_open_rc open_as(apr_pool_t *p, const bank_keyring_t *kr, const char *col,
                            const char *row, const char *sealed, const char **plain)
{
    return bank_open(p, kr, col, row, sealed, plain, NULL);
}

static void test_round_trip(apr_pool_t *p)
{
    bank_keyring_t *kr = ring(p, "k1", K1, NULL, NULL);
    const char *a = bank_seal(p, kr, "customers.bvn", "row-1", "22212345678");
    const char *b = bank_seal(p, kr, "customers.bvn", "row-1", "22212345678");
    const char *plain = NULL, *id = NULL;

    CHECK(a != NULL && b != NULL);
    CHECK(strncmp(a, "k1:", 3) == 0);
    /* a fresh nonce each time: the same value seals differently */
    CHECK(a && b && strcmp(a, b) != 0);
    CHECK(strstr(a, "22212345678") == NULL);
    CHECK(bank_open(p, kr, "customers.bvn", "row-1", a, &plain, &id) == BANK_OPEN_OK);
    CHECK_STR(plain, "22212345678");
    CHECK_STR(id, "k1");
    CHECK(open_as(p, kr, "customers.bvn", "row-1", b, &plain) == BANK_OPEN_OK);
    CHECK_STR(plain, "22212345678");
    /* the empty string and non-ASCII text */
    CHECK(open_as(p, kr, "c", "r", bank_seal(p, kr, "c", "r", ""), &plain) == BANK_OPEN_OK);
    CHECK_STR(plain, "");
    CHECK(open_as(p, kr, "c", "r", bank_seal(p, kr, "c", "r", "Ọlámídé"), &plain) == BANK_OPEN_OK);
    CHECK_STR(plain, "Ọlámídé");
    CHECK_STR(bank_sealed_key_id(p, a), "k1");
    CHECK(bank_sealed_key_id(p, "22212345678") == NULL);
}

/* Every byte of the sealed value matters: nonce, ciphertext, tag, key id. */
static void test_tamper(apr_pool_t *p)
{
    bank_keyring_t *kr = ring(p, "k1", K1, NULL, NULL);
    const char *sealed = bank_seal(p, kr, "bvn_records.date_of_birth", "h", "1990-01-15");
    const char *plain = NULL;
    unsigned char *raw = NULL;
    apr_size_t len = 0, i;
    int all_refused = 1;

    CHECK(sealed && bank_b64std_decode(p, sealed + 3, &raw, &len) == 0);
    for (i = 0; raw && i < len; i++) {
        unsigned char *copy = apr_pmemdup(p, raw, len);
        const char *t;
        copy[i] ^= 0x01;
        t = apr_pstrcat(p, "k1:", bank_b64std_encode(p, copy, len), (char *)NULL);
        if (open_as(p, kr, "bvn_records.date_of_birth", "h", t, &plain) != BANK_OPEN_FAILED ||
            plain) {
            all_refused = 0;
        }
    }
    CHECK(len == 12 + 10 + 16);
    CHECK(all_refused);
    /* cut short, not base64, not sealed at all */
    CHECK(open_as(p, kr, "c", "r", "k1:AAAA", &plain) == BANK_OPEN_MALFORMED);
    CHECK(open_as(p, kr, "c", "r", "k1:!!!!", &plain) == BANK_OPEN_MALFORMED);
    CHECK(open_as(p, kr, "c", "r", "1990-01-15", &plain) == BANK_OPEN_MALFORMED);
    CHECK(plain == NULL);
}

/* The associated data: another row, another column. */
static void test_wrong_aad(apr_pool_t *p)
{
    bank_keyring_t *kr = ring(p, "k1", K1, NULL, NULL);
    const char *sealed = bank_seal(p, kr, "customers.bvn", "row-1", "22212345678");
    const char *plain = "x";

    CHECK(open_as(p, kr, "customers.bvn", "row-2", sealed, &plain) == BANK_OPEN_FAILED);
    CHECK(plain == NULL);
    CHECK(open_as(p, kr, "bvn_records.bvn", "row-1", sealed, &plain) == BANK_OPEN_FAILED);
    /* the boundary between column and row is part of the data */
    sealed = bank_seal(p, kr, "ab", "c", "v");
    CHECK(open_as(p, kr, "a", "bc", sealed, &plain) == BANK_OPEN_FAILED);
    CHECK(open_as(p, kr, "ab", "c", sealed, &plain) == BANK_OPEN_OK);
}

/* Key ids: an unknown id, a relabelled value, the same id with another key, rotation. */
static void test_key_ids(apr_pool_t *p)
{
    bank_keyring_t *one = ring(p, "k1", K1, NULL, NULL);
    bank_keyring_t *other = ring(p, "k1", K2, NULL, NULL);
    bank_keyring_t *rotated = ring(p, "k2", K2, "k1", K1);
    bank_keyring_t *both_k = ring(p, "k2", K1, "k1", K1);
    const char *sealed = bank_seal(p, one, "c", "r", "v"), *plain = NULL, *id = NULL;

    /* an id the keyring lacks */
    CHECK(bank_open(p, ring(p, "k9", K1, NULL, NULL), "c", "r", sealed, &plain, &id) ==
          BANK_OPEN_NO_KEY);
    CHECK_STR(id, "k1");
    /* the same id, another key: a wrong key file */
    CHECK(open_as(p, other, "c", "r", sealed, &plain) == BANK_OPEN_FAILED);
    /* relabelled with another id of the same key: the id is associated data */
    CHECK(open_as(p, both_k, "c", "r", apr_pstrcat(p, "k2", sealed + 2, (char *)NULL), &plain) ==
          BANK_OPEN_FAILED);
    /* an older key still opens; new values take the current one */
    CHECK(open_as(p, rotated, "c", "r", sealed, &plain) == BANK_OPEN_OK);
    CHECK_STR(plain, "v");
    CHECK_STR(bank_keyring_current(rotated), "k2");
    CHECK(strncmp(bank_seal(p, rotated, "c", "r", "v"), "k2:", 3) == 0);
    CHECK(bank_keyring_count(rotated) == 2);
    /* keyring rules */
    CHECK(bank_keyring_add(rotated, "k1", K2, 0) != NULL);
    CHECK(bank_keyring_add(rotated, "k3", K2, 1) != NULL);
    CHECK(bank_keyring_add(rotated, "bad id", K2, 0) != NULL);
    CHECK(bank_keyring_add(rotated, "", K2, 0) != NULL);
    CHECK(bank_keyring_incomplete(rotated) == NULL);
    CHECK(bank_keyring_incomplete(bank_keyring_make(p)) != NULL);
    CHECK(bank_seal(p, bank_keyring_make(p), "c", "r", "v") == NULL);
}

static void test_hash(apr_pool_t *p)
{
    bank_keyring_t *a = ring(p, "k1", K1, NULL, NULL), *b = ring(p, "k2", K2, NULL, NULL);
    bank_keyring_t *c = bank_keyring_make(p);
    const char *h = bank_blind_hash(p, a, "bvn", "22212345678");

    CHECK(h && strlen(h) == 64);
    /* HMAC-SHA256 under the hash key of "bvn\0" "22212345678\0", as every stored hash was
     * made: a change of how it is computed must not change a value */
    CHECK_STR(h, "ee9c6bf62a79590680d4466f1768395b354f3502a1a1dca0908c9c7c2f661824");
    /* the hash key alone decides it, not the encryption keys */
    CHECK_STR(bank_blind_hash(p, b, "bvn", "22212345678"), h);
    CHECK(strcmp(bank_blind_hash(p, a, "bvn", "22212345679"), h) != 0);
    CHECK(strcmp(bank_blind_hash(p, a, "bvn2", "2212345678"), h) != 0);
    bank_keyring_set_hash_key(c, K1);
    CHECK(strcmp(bank_blind_hash(p, c, "bvn", "22212345678"), h) != 0);
    CHECK(bank_blind_hash(p, bank_keyring_make(p), "bvn", "1") == NULL);
    /* check values: per key and kind, never the key itself */
    CHECK_STR(bank_key_check_value(p, K1, "enc"),
              "06391ae111b9d4f8d4c069422ae8d65f53aebffac0e34ff9ea52aaacb3d937d5");
    CHECK(strcmp(bank_key_check_value(p, K1, "enc"), bank_key_check_value(p, K2, "enc")) != 0);
    CHECK(strcmp(bank_key_check_value(p, K1, "enc"), bank_key_check_value(p, K1, "hash")) != 0);
}

static const char *write_file(apr_pool_t *p, const char *dir, const char *name, const char *content,
                              apr_size_t len, int mode)
{
    const char *path = apr_pstrcat(p, dir, "/", name, (char *)NULL);
    FILE *f = fopen(path, "wb");

    if (f) {
        fwrite(content, 1, len, f);
        fclose(f);
    }
    chmod(path, (mode_t)mode);
    return path;
}

static void test_key_files(apr_pool_t *p)
{
    char *dir = apr_pstrdup(p, "/tmp/mod_bank-crypt.XXXXXX");
    const char *hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    unsigned char key[BANK_KEY_LEN], want[BANK_KEY_LEN];
    const char *f;
    int i;

    for (i = 0; i < BANK_KEY_LEN; i++) {
        want[i] = (unsigned char)i;
    }
    CHECK(mkdtemp(dir) != NULL);
    f = write_file(p, dir, "hex", apr_pstrcat(p, hex, "\n", (char *)NULL), 65, 0600);
    CHECK(bank_key_file_read(p, f, key) == NULL && memcmp(key, want, BANK_KEY_LEN) == 0);
    unlink(f);
    f = write_file(p, dir, "raw", (const char *)want, BANK_KEY_LEN, 0400);
    CHECK(bank_key_file_read(p, f, key) == NULL && memcmp(key, want, BANK_KEY_LEN) == 0);
    unlink(f);
    /* another account's (as root: nobody's): refused, whatever its mode */
    if (geteuid() == 0) {
        f = write_file(p, dir, "theirs", hex, 64, 0600);
        CHECK(chown(f, 65534, 65534) == 0);
        CHECK(bank_key_file_read(p, f, key) != NULL);
        CHECK(strstr(bank_key_file_read(p, f, key), "must belong to root") != NULL);
        unlink(f);
    } else {
        printf("test_crypt: skipped: a key file of another account: only root can make one "
               "(chown)\n");
    }
    /* readable by the group or others */
    f = write_file(p, dir, "open", hex, 64, 0640);
    CHECK(bank_key_file_read(p, f, key) != NULL);
    CHECK(strstr(bank_key_file_read(p, f, key), "chmod 600") != NULL);
    unlink(f);
    /* too short, too long, not hex: the message never shows the content */
    f = write_file(p, dir, "short", hex, 62, 0600);
    CHECK(bank_key_file_read(p, f, key) != NULL);
    CHECK(strstr(bank_key_file_read(p, f, key), "000102") == NULL);
    unlink(f);
    f = write_file(p, dir, "long", apr_pstrcat(p, hex, "00", (char *)NULL), 66, 0600);
    CHECK(bank_key_file_read(p, f, key) != NULL);
    unlink(f);
    f = write_file(p, dir, "nothex", apr_pstrcat(p, "zz", hex + 2, (char *)NULL), 64, 0600);
    CHECK(bank_key_file_read(p, f, key) != NULL);
    unlink(f);
    CHECK(bank_key_file_read(p, apr_pstrcat(p, dir, "/none", (char *)NULL), key) != NULL);
    rmdir(dir);
}

static void test_process_keyring(apr_pool_t *p)
{
    apr_pool_t *sub;
    bank_keyring_t *kr;

    apr_pool_create(&sub, p);
    kr = ring(sub, "k1", K1, NULL, NULL);
    bank_crypt_use(kr);
    CHECK(bank_crypt_keyring() == kr);
    apr_pool_destroy(sub); /* the keys are wiped and the store no longer sees them */
    CHECK(bank_crypt_keyring() == NULL);
}

/* One keyring's hash from many threads at once, as httpd's threads use it: each hash is
 * computed on a copy of the keyring's one keyed context, which must stay as it was. */
#define HASH_THREADS 8
#define HASH_ROUNDS 2000

typedef struct {
    const bank_keyring_t *kr;
    const char *want;
    int wrong;
} hasher_t;

static void *APR_THREAD_FUNC hasher(apr_thread_t *t, void *data)
{
    hasher_t *h = data;
    apr_pool_t *p;
    int i;

    apr_pool_create_unmanaged(&p);
    for (i = 0; i < HASH_ROUNDS; i++) {
        const char *got = bank_blind_hash(p, h->kr, "bvn", "22212345678");
        h->wrong += !got || strcmp(got, h->want) != 0;
        if (i % 100 == 99) {
            apr_pool_clear(p);
        }
    }
    apr_pool_destroy(p);
    apr_thread_exit(t, APR_SUCCESS);
    return NULL;
}

static void test_hash_threads(apr_pool_t *p)
{
    bank_keyring_t *kr = ring(p, "k1", K1, NULL, NULL);
    apr_thread_t *t[HASH_THREADS];
    hasher_t h[HASH_THREADS];
    apr_status_t rv;
    int i, wrong = 0;

    for (i = 0; i < HASH_THREADS; i++) {
        h[i].kr = kr;
        h[i].want = bank_blind_hash(p, kr, "bvn", "22212345678");
        h[i].wrong = 0;
        CHECK(apr_thread_create(&t[i], NULL, hasher, &h[i], p) == APR_SUCCESS);
    }
    for (i = 0; i < HASH_THREADS; i++) {
        CHECK(apr_thread_join(&rv, t[i]) == APR_SUCCESS);
        wrong += h[i].wrong;
    }
    CHECK(wrong == 0);
    /* and the shared context is unchanged after them */
    CHECK_STR(bank_blind_hash(p, kr, "bvn", "22212345678"), h[0].want);
}

static void run_tests(apr_pool_t *p)
{
    test_round_trip(p);
    test_tamper(p);
    test_wrong_aad(p);
    test_key_ids(p);
    test_hash(p);
    test_hash_threads(p);
    test_key_files(p);
    test_process_keyring(p);
}
