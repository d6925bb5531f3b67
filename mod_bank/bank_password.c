/* Password hashes (docs/api.md): scrypt and argon2 PHC as AdonisJS writes them (argon2's in
 * bank_password_argon2.c), and bcrypt in both its modular-crypt ($2a$/$2b$/$2y$) and AdonisJS
 * PHC ($bcrypt$v=98$r=10$...) forms; the hash an unknown e-mail is verified against. */
#include <string.h>

#include <apr_strings.h>
#include <apr_hash.h>
#include <apr_lib.h>

#include <crypt.h>
#include <openssl/crypto.h>

#include "bank_password.h"
#include "bank_password_internal.h"
#include "bank_encoding.h"
#include "bank_rand.h"
#include "bank_scrypt.h"

/* AdonisJS defaults for new hashes. */
#define SCRYPT_N 16384
#define SCRYPT_R 8
#define SCRYPT_P 1
#define SCRYPT_SALT_LEN 16
#define SCRYPT_KEY_LEN 64

/* Limits on stored hashes, so that a planted hash cannot exhaust memory or CPU. Salt and key
 * lengths are AdonisJS' own accepted ranges. */
#define SCRYPT_MAX_N (1UL << 20)
#define SCRYPT_MAX_R 32
#define SCRYPT_MAX_P 16
#define SCRYPT_MAX_MEM (32UL * 1024 * 1024) /* AdonisJS's own maxmem default */
/* Work per verification at most 4x the default (n*r*p = 131072): a stored hash must not
 * let one sign-in hold a worker for seconds. The fuzz build (t/fuzz, `make fuzz`) lowers this
 * ceiling and bcrypt's so that each of its runs costs milliseconds: the same checks, smaller
 * numbers. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define SCRYPT_MAX_WORK (1024UL * 8)
#else
#define SCRYPT_MAX_WORK (4UL * 16384 * 8)
#endif
#define SCRYPT_MIN_SALT 8
#define SCRYPT_MAX_SALT 1024
#define SCRYPT_MIN_KEY 64
#define SCRYPT_MAX_KEY 128

/* htpasswd's ceiling; beyond it one verification takes tens of seconds. */
#define BCRYPT_MIN_COST 4
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define BCRYPT_MAX_COST 5
#else
#define BCRYPT_MAX_COST 14 /* 16 times AdonisJS's default work (10): the most a hash may cost */
#endif
#define BCRYPT_SALT_LEN 16
#define BCRYPT_HASH_LEN 23

/* scrypt(n=16384,r=8,p=1) of a random password that was thrown away. */
static const char dummy_hash[] =
    "$scrypt$n=16384,r=8,p=1$dF780RQ+X3AB4wTn5/mhQw$EmXiMsK1lAYDyDgIwnKQnF6z9lxrG/HfjHnJPF4aC966"
    "98/mmD5t1S8tcAqgHpirG8ep8dTnGHePI5Z3G4XnEQ";

typedef struct {
    unsigned long n, r, p;
    unsigned char *salt, *key;
    apr_size_t saltlen, keylen;
} scrypt_params;

static int scrypt_parse_params(const char *s, scrypt_params *sp)
{
    unsigned long v[3];

    if (bank_phc_params(s, "nrp", v) != 0) {
        return -1;
    }
    sp->n = v[0], sp->r = v[1], sp->p = v[2];
    return 0;
}

/* What one verification needs: B (128*r*p) plus the work area (bank_scrypt.c). */
static unsigned long scrypt_mem(const scrypt_params *sp)
{
    return 128UL * sp->r * sp->p + bank_scrypt_mem(sp->n, sp->r);
}

static int scrypt_params_ok(const scrypt_params *sp)
{
    if (sp->n < 2 || sp->n > SCRYPT_MAX_N || (sp->n & (sp->n - 1)) != 0) {
        return 0;
    }
    if (sp->r < 1 || sp->r > SCRYPT_MAX_R || sp->p < 1 || sp->p > SCRYPT_MAX_P) {
        return 0;
    }
    if (scrypt_mem(sp) > SCRYPT_MAX_MEM || (unsigned long)sp->n * sp->r * sp->p > SCRYPT_MAX_WORK) {
        return 0;
    }
    return sp->saltlen >= SCRYPT_MIN_SALT && sp->saltlen <= SCRYPT_MAX_SALT &&
           sp->keylen >= SCRYPT_MIN_KEY && sp->keylen <= SCRYPT_MAX_KEY;
}

static int scrypt_derive(apr_pool_t *p, const char *plain, const scrypt_params *sp,
                         unsigned char *out)
{
    return bank_scrypt(p, plain, strlen(plain), sp->salt, sp->saltlen, sp->n, sp->r, sp->p, out,
                       sp->keylen);
}

/* "n=16384,r=8,p=1$<salt>$<hash>" after "$scrypt$", within the bounds: 0, else -1. */
static int scrypt_parse(apr_pool_t *p, const char *rest, scrypt_params *sp)
{
    char *f[3];

    memset(sp, 0, sizeof(*sp));
    if (bank_phc_fields(p, rest, f, 3) != 0 || scrypt_parse_params(f[0], sp) != 0 ||
        bank_b64std_decode(p, f[1], &sp->salt, &sp->saltlen) != 0 ||
        bank_b64std_decode(p, f[2], &sp->key, &sp->keylen) != 0 || !scrypt_params_ok(sp)) {
        return -1;
    }
    return 0;
}

/* stored, when it is "$scrypt$..." within the bounds, into sp: 1, else 0. */
static int scrypt_of(apr_pool_t *p, const char *stored, scrypt_params *sp)
{
    return stored && strncmp(stored, "$scrypt$", 8) == 0 && scrypt_parse(p, stored + 8, sp) == 0;
}

/* sp's algorithm and parameters, "$scrypt$n=16384,r=8,p=1". */
static const char *scrypt_cost(apr_pool_t *p, const scrypt_params *sp)
{
    return apr_psprintf(p, "$scrypt$n=%lu,r=%lu,p=%lu", sp->n, sp->r, sp->p);
}

/* The verdict on a derived key, in constant time. */
static int scrypt_verdict(const unsigned char *got, const scrypt_params *sp)
{
    return CRYPTO_memcmp(got, sp->key, sp->keylen) == 0 ? BANK_PW_MATCH : BANK_PW_MISMATCH;
}

static int verify_scrypt(apr_pool_t *p, const char *plain, const char *rest)
{
    scrypt_params sp;
    unsigned char *got;

    if (scrypt_parse(p, rest, &sp) != 0) {
        return BANK_PW_MALFORMED;
    }
    got = apr_palloc(p, sp.keylen);
    if (scrypt_derive(p, plain, &sp, got) != 0) {
        return BANK_PW_MALFORMED;
    }
    return scrypt_verdict(got, &sp);
}

/* $2a$/$2b$/$2y$, two-digit cost, then 22 salt + 31 hash characters of bcrypt's alphabet. */
static int bcrypt_mcf_ok(const char *s)
{
    apr_size_t i;
    int cost;

    if (strlen(s) != 60 || strncmp(s, "$2", 2) != 0 || !strchr("aby", s[2]) || s[3] != '$' ||
        !apr_isdigit(s[4]) || !apr_isdigit(s[5]) || s[6] != '$') {
        return 0;
    }
    cost = (s[4] - '0') * 10 + (s[5] - '0');
    if (cost < BCRYPT_MIN_COST || cost > BCRYPT_MAX_COST) {
        return 0;
    }
    for (i = 7; i < 60; i++) {
        if (!strchr(BANK_BCRYPT_ALPHABET, s[i])) {
            return 0;
        }
    }
    return 1;
}

static int verify_bcrypt_mcf(apr_pool_t *p, const char *plain, const char *stored)
{
    struct crypt_data *cd;
    const char *out;
    apr_size_t len = strlen(stored);

    if (!bcrypt_mcf_ok(stored)) {
        return BANK_PW_MALFORMED;
    }
    cd = apr_pcalloc(p, sizeof(*cd));
    out = crypt_rn(plain, stored, cd, (int)sizeof(*cd));
    if (!out) {
        return BANK_PW_MALFORMED;
    }
    return strlen(out) == len && CRYPTO_memcmp(out, stored, len) == 0 ? BANK_PW_MATCH
                                                                      : BANK_PW_MISMATCH;
}

/* bcrypt packs bits as standard base64 does, in its own alphabet. */
static char *bcrypt_b64(apr_pool_t *p, const unsigned char *in, apr_size_t len)
{
    return bank_b64_encode(p, in, len, BANK_BCRYPT_ALPHABET);
}

/* AdonisJS' PHC form: $bcrypt$[v=97|98$]r=NN$<salt>$<hash>, no v meaning 97 ('a').
 * Rewritten as the modular-crypt string it stands for, then verified as one. */
static const char *bcrypt_phc_to_mcf(apr_pool_t *p, const char *rest)
{
    char *f[4];
    unsigned long version = 'a', cost;
    unsigned char *salt, *hash;
    apr_size_t saltlen, hashlen;

    /* f[0] is the optional version; f[1..3] are cost, salt and hash. */
    if (bank_phc_fields(p, rest, f, 4) == 0) {
        if (strncmp(f[0], "v=", 2) != 0 || bank_phc_uint(f[0] + 2, strlen(f[0] + 2), &version) ||
            (version != 'a' && version != 'b')) {
            return NULL;
        }
    } else if (bank_phc_fields(p, rest, f + 1, 3) != 0) {
        return NULL;
    }
    if (strncmp(f[1], "r=", 2) != 0 || bank_phc_uint(f[1] + 2, strlen(f[1] + 2), &cost) ||
        cost < BCRYPT_MIN_COST || cost > BCRYPT_MAX_COST ||
        bank_b64std_decode(p, f[2], &salt, &saltlen) || saltlen != BCRYPT_SALT_LEN ||
        bank_b64std_decode(p, f[3], &hash, &hashlen) || hashlen != BCRYPT_HASH_LEN) {
        return NULL;
    }
    return apr_psprintf(p, "$2%c$%02lu$%s%s", (char)version, cost, bcrypt_b64(p, salt, saltlen),
                        bcrypt_b64(p, hash, hashlen));
}

static int verify_bcrypt_phc(apr_pool_t *p, const char *plain, const char *rest)
{
    const char *mcf = bcrypt_phc_to_mcf(p, rest);
    return mcf ? verify_bcrypt_mcf(p, plain, mcf) : BANK_PW_MALFORMED;
}

int bank_password_verify(apr_pool_t *p, const char *plain, const char *stored)
{
    if (!stored) {
        return BANK_PW_MALFORMED;
    }
    if (!plain) {
        return BANK_PW_MISMATCH;
    }
    if (strncmp(stored, "$scrypt$", 8) == 0) {
        return verify_scrypt(p, plain, stored + 8);
    }
    if (strncmp(stored, "$bcrypt$", 8) == 0) {
        return verify_bcrypt_phc(p, plain, stored + 8);
    }
    if (strncmp(stored, "$2", 2) == 0) {
        return verify_bcrypt_mcf(p, plain, stored);
    }
    if (strncmp(stored, "$argon2", 7) == 0) {
        return bank_argon2_verify(p, plain, stored + 7);
    }
    return BANK_PW_MALFORMED;
}

const char *bank_password_pair_kind(apr_pool_t *p, const char *stored)
{
    scrypt_params sp;

    return scrypt_of(p, stored, &sp) ? scrypt_cost(p, &sp) : NULL;
}

void bank_password_verify_two(apr_pool_t *p, const char *const plain[2],
                              const char *const stored[2], int rc[2])
{
    scrypt_params sp[2];
    bank_scrypt_in_t in[2];
    int c, pair = 1;

    for (c = 0; c < 2 && pair; c++) {
        pair = plain[c] && scrypt_of(p, stored[c], &sp[c]);
    }
    if (pair && sp[0].n == sp[1].n && sp[0].r == sp[1].r && sp[0].p == sp[1].p) {
        for (c = 0; c < 2; c++) {
            in[c].pass = plain[c], in[c].passlen = strlen(plain[c]);
            in[c].salt = sp[c].salt, in[c].saltlen = sp[c].saltlen;
            in[c].out = apr_palloc(p, sp[c].keylen), in[c].outlen = sp[c].keylen;
        }
        if (bank_scrypt_two(p, in, sp[0].n, sp[0].r, sp[0].p) == 0) {
            for (c = 0; c < 2; c++) {
                rc[c] = scrypt_verdict(in[c].out, &sp[c]);
            }
            return;
        }
    }
    /* not two scrypt hashes of one cost (or their work area could not be had): one by one */
    for (c = 0; c < 2; c++) {
        rc[c] = bank_password_verify(p, plain[c], stored[c]);
    }
}

char *bank_password_hash(apr_pool_t *p, const char *plain)
{
    unsigned char salt[SCRYPT_SALT_LEN], key[SCRYPT_KEY_LEN];
    scrypt_params sp;

    if (!plain || bank_random_bytes(salt, sizeof(salt)) != 0) {
        return NULL;
    }
    sp.n = SCRYPT_N;
    sp.r = SCRYPT_R;
    sp.p = SCRYPT_P;
    sp.salt = salt;
    sp.saltlen = sizeof(salt);
    sp.key = key;
    sp.keylen = sizeof(key);
    if (scrypt_derive(p, plain, &sp, key) != 0) {
        return NULL;
    }
    return apr_psprintf(p, "$scrypt$n=%d,r=%d,p=%d$%s$%s", SCRYPT_N, SCRYPT_R, SCRYPT_P,
                        bank_b64std_encode(p, salt, sizeof(salt)),
                        bank_b64std_encode(p, key, sizeof(key)));
}

/* base64 (standard, unpadded) of n random bytes, or NULL. */
static const char *random_b64(apr_pool_t *p, apr_size_t n)
{
    unsigned char *b = apr_palloc(p, n);
    return bank_random_bytes(b, n) == 0 ? bank_b64std_encode(p, b, n) : NULL;
}

char *bank_password_dummy_like(apr_pool_t *p, const char *stored, const char **cost)
{
    scrypt_params sp;
    bank_argon2_params ap;
    const char *mcf, *salt, *key;
    unsigned char raw[BCRYPT_SALT_LEN + BCRYPT_HASH_LEN];

    if (!stored) {
        return NULL;
    }
    if (scrypt_of(p, stored, &sp)) {
        *cost = scrypt_cost(p, &sp);
        salt = random_b64(p, sp.saltlen), key = random_b64(p, sp.keylen);
        return salt && key ? apr_pstrcat(p, *cost, "$", salt, "$", key, (char *)NULL) : NULL;
    }
    if (!strncmp(stored, "$argon2", 7) && bank_argon2_parse(p, stored + 7, &ap) == 0) {
        *cost = apr_psprintf(p, "$argon2%s$v=%lu$m=%lu,t=%lu,p=%lu",
                             ap.type == Argon2_id  ? "id"
                             : ap.type == Argon2_i ? "i"
                                                   : "d",
                             ap.version, ap.m, ap.t, ap.p);
        salt = random_b64(p, ap.saltlen), key = random_b64(p, ap.keylen);
        return salt && key ? apr_pstrcat(p, *cost, "$", salt, "$", key, (char *)NULL) : NULL;
    }
    /* bcrypt in either form: one cost, written as modular crypt */
    mcf = !strncmp(stored, "$bcrypt$", 8) ? bcrypt_phc_to_mcf(p, stored + 8) : stored;
    if (mcf && bcrypt_mcf_ok(mcf) && bank_random_bytes(raw, sizeof(raw)) == 0) {
        *cost = apr_psprintf(p, "$2b$%.2s", mcf + 4);
        return apr_pstrcat(p, *cost, "$", bcrypt_b64(p, raw, BCRYPT_SALT_LEN),
                           bcrypt_b64(p, raw + BCRYPT_SALT_LEN, BCRYPT_HASH_LEN), (char *)NULL);
    }
    return NULL;
}

const char *bank_password_dummy_of(apr_pool_t *p, const char *const *stored, int n,
                                   const char **cost)
{
    const char **costs = apr_pcalloc(p, sizeof(*costs) * (apr_size_t)(n > 0 ? n : 1));
    const char **dummies = apr_pcalloc(p, sizeof(*dummies) * (apr_size_t)(n > 0 ? n : 1));
    apr_hash_t *count = apr_hash_make(p);
    int i, best = -1, best_n = 0;

    for (i = 0; i < n; i++) {
        int *c;
        if (!(dummies[i] = bank_password_dummy_like(p, stored[i], &costs[i]))) {
            continue; /* unreadable or past the bounds: verified as such, at the dummy's cost */
        }
        if (!(c = apr_hash_get(count, costs[i], APR_HASH_KEY_STRING))) {
            c = apr_pcalloc(p, sizeof(*c));
            apr_hash_set(count, costs[i], APR_HASH_KEY_STRING, c);
        }
        /* the most common cost; of equally common ones, the first seen */
        if (++*c > best_n) {
            best_n = *c, best = i;
        }
    }
    *cost = best >= 0 ? costs[best] : NULL;
    return best >= 0 ? dummies[best] : NULL;
}

/* The dummy in use: published whole by one atomic store into one of two buffers, the one not
 * in use, so a reader (bank_password_dummy_copy) never sees half of one. A buffer is written
 * again only two refreshes later, minutes after readers copied it. */
#define DUMMY_MAX 512
static char dummy_buf[2][DUMMY_MAX];
static const char *dummy_now = dummy_hash;
static int dummy_next;

int bank_password_set_dummy(const char *hash)
{
    char *b;

    if (!hash || strlen(hash) >= DUMMY_MAX) {
        return -1;
    }
    b = dummy_buf[dummy_next];
    dummy_next ^= 1;
    memcpy(b, hash, strlen(hash) + 1);
    __atomic_store_n(&dummy_now, b, __ATOMIC_RELEASE);
    return 0;
}

void bank_password_reset_dummy(void)
{
    __atomic_store_n(&dummy_now, dummy_hash, __ATOMIC_RELEASE);
}

const char *bank_password_dummy_copy(apr_pool_t *p)
{
    return apr_pstrdup(p, __atomic_load_n(&dummy_now, __ATOMIC_ACQUIRE));
}

const char *bank_password_dummy(void)
{
    return dummy_hash;
}
