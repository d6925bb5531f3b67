/* argon2 hashes ($argon2id$, $argon2i$, $argon2d$ as AdonisJS's argon2 driver writes them)
 * within bounds, verified with libargon2 (bank_password.c). */
#include <string.h>

#include <apr_strings.h>

#include <sys/mman.h>

#include <argon2.h>
#include <openssl/crypto.h>

#include "bank_password.h"
#include "bank_password_internal.h"
#include "bank_encoding.h"

/* argon2: memory in KiB (m), passes (t) and lanes (p). AdonisJS's defaults are m=65536 (64
 * MiB), t=3, p=4. Lanes are computed one after another on the verifying thread, so one
 * verification uses one CPU, as scrypt's does, and holds one slot of the server-wide bound.
 * Memory at most twice the default; work (m*t) at most 4x the default, as scrypt's. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define ARGON2_MAX_M 256UL
#define ARGON2_MAX_WORK 1024UL
#else
#define ARGON2_MAX_M (2UL * 65536)
#define ARGON2_MAX_WORK (4UL * 65536 * 3)
#endif
#define ARGON2_MAX_T 16
#define ARGON2_MAX_P 16
#define ARGON2_MIN_SALT 8
#define ARGON2_MAX_SALT 1024
#define ARGON2_MIN_KEY 16
#define ARGON2_MAX_KEY 128

/* libargon2's work area (m KiB) mapped for the call and unmapped after it, as scrypt's
 * (bank_scrypt.c): a malloc'd area would stay in the calling thread's glibc arena. libargon2
 * wipes it before it gives it back. */
static int argon2_map(uint8_t **memory, size_t len)
{
    void *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (a == MAP_FAILED) {
        return ARGON2_MEMORY_ALLOCATION_ERROR;
    }
#ifdef MADV_DONTDUMP
    (void)madvise(a, len, MADV_DONTDUMP); /* never in a core file */
#endif
    *memory = a;
    return ARGON2_OK;
}

static void argon2_unmap(uint8_t *memory, size_t len)
{
    munmap(memory, len);
}

static int argon2_params_ok(const bank_argon2_params *ap)
{
    return (ap->version == ARGON2_VERSION_10 || ap->version == ARGON2_VERSION_13) && ap->p >= 1 &&
           ap->p <= ARGON2_MAX_P && ap->m >= 8 * ap->p && ap->m <= ARGON2_MAX_M && ap->t >= 1 &&
           ap->t <= ARGON2_MAX_T && ap->m * ap->t <= ARGON2_MAX_WORK &&
           ap->saltlen >= ARGON2_MIN_SALT && ap->saltlen <= ARGON2_MAX_SALT &&
           ap->keylen >= ARGON2_MIN_KEY && ap->keylen <= ARGON2_MAX_KEY;
}

int bank_argon2_parse(apr_pool_t *p, const char *rest, bank_argon2_params *ap)
{
    char *f[5], **g = f + 1;
    unsigned long v[3];

    memset(ap, 0, sizeof(*ap));
    if (!strncmp(rest, "id$", 3)) {
        ap->type = Argon2_id, rest += 3;
    } else if (!strncmp(rest, "i$", 2) || !strncmp(rest, "d$", 2)) {
        ap->type = rest[0] == 'i' ? Argon2_i : Argon2_d, rest += 2;
    } else {
        return -1;
    }
    ap->version = ARGON2_VERSION_10;
    if (bank_phc_fields(p, rest, f, 4) == 0) {
        if (strncmp(f[0], "v=", 2) != 0 ||
            bank_phc_uint(f[0] + 2, strlen(f[0] + 2), &ap->version)) {
            return -1;
        }
    } else if (bank_phc_fields(p, rest, g, 3) != 0) {
        return -1;
    }
    if (bank_phc_params(g[0], "mtp", v) != 0 ||
        bank_b64std_decode(p, g[1], &ap->salt, &ap->saltlen) ||
        bank_b64std_decode(p, g[2], &ap->key, &ap->keylen)) {
        return -1;
    }
    ap->m = v[0], ap->t = v[1], ap->p = v[2];
    return argon2_params_ok(ap) ? 0 : -1;
}

int bank_argon2_verify(apr_pool_t *p, const char *plain, const char *rest)
{
    bank_argon2_params ap;
    argon2_context c;
    unsigned char *got;
    apr_size_t len = strlen(plain);

    if (bank_argon2_parse(p, rest, &ap) != 0 || len > ARGON2_MAX_PWD_LENGTH) {
        return BANK_PW_MALFORMED;
    }
    got = apr_palloc(p, ap.keylen);
    memset(&c, 0, sizeof(c));
    c.out = got;
    c.outlen = (uint32_t)ap.keylen;
    c.pwd = (uint8_t *)apr_pmemdup(p, plain, len + 1);
    c.pwdlen = (uint32_t)len;
    c.salt = ap.salt;
    c.saltlen = (uint32_t)ap.saltlen;
    c.t_cost = (uint32_t)ap.t;
    c.m_cost = (uint32_t)ap.m;
    c.lanes = (uint32_t)ap.p;
    c.threads = 1;
    c.version = (uint32_t)ap.version;
    c.allocate_cbk = argon2_map;
    c.free_cbk = argon2_unmap;
    c.flags = ARGON2_FLAG_CLEAR_PASSWORD;
    if (argon2_ctx(&c, ap.type) != ARGON2_OK) {
        return BANK_PW_MALFORMED;
    }
    return CRYPTO_memcmp(got, ap.key, ap.keylen) == 0 ? BANK_PW_MATCH : BANK_PW_MISMATCH;
}
