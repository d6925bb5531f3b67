/* Cryptographically strong randomness (OpenSSL RAND_bytes). */
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <openssl/rand.h>

#include "bank_rand.h"

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

/* Identifiers' bytes: ID_BLOCK drawn at once, per thread. fork_count counts the forks of the
 * process (atfork's child handler, registered once); a thread's buffer filled before a fork
 * is refilled in the child, which would otherwise hand out the same ids as its parent. */
#define ID_BLOCK 256
static __thread unsigned char id_block[ID_BLOCK];
static __thread apr_size_t id_used = ID_BLOCK;
static __thread unsigned long id_fork;
static unsigned long fork_count;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void forked(void)
{
    __atomic_add_fetch(&fork_count, 1, __ATOMIC_RELAXED); /* the child has one thread: this one */
}

static void watch_forks(void)
{
    (void)pthread_atfork(NULL, NULL, forked);
}

int bank_random_id_bytes(unsigned char *buf, apr_size_t len)
{
    if (len > ID_BLOCK / 4) {
        return bank_random_bytes(buf, len);
    }
    (void)pthread_once(&fork_once, watch_forks);
    if (id_fork != __atomic_load_n(&fork_count, __ATOMIC_RELAXED) || ID_BLOCK - id_used < len) {
        if (bank_random_bytes(id_block, ID_BLOCK) != 0) {
            return -1;
        }
        id_fork = __atomic_load_n(&fork_count, __ATOMIC_RELAXED);
        id_used = 0;
    }
    memcpy(buf, id_block + id_used, len);
    memset(id_block + id_used, 0, len); /* handed out once only */
    id_used += len;
    return 0;
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
