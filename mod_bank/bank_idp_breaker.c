/* The identity providers' circuit breaker (docs/identity.md): per base URL, after
 * BANK_IDP_BREAKER_FAILURES failures in a row no call for BANK_IDP_BREAKER_OPEN seconds, then
 * one trial call. Beside it, the durations of the provider's latest answers, which an answer
 * judged without a call is held for (docs/security.md). */
#include <string.h>
#include <apr_strings.h>
#include <apr_atomic.h>
#include "bank_idp.h"

/* Lock-free over a block of shared memory, so every process of a server sees one breaker
 * per base URL: a slot holds a hash of the URL, the failures in a row and the second the
 * breaker closes again. */

#define BREAKER_SLOTS 64

typedef struct {
    volatile apr_uint32_t key; /* FNV-1a of the URL, never 0; 0: a free slot */
    volatile apr_uint32_t failures;
    volatile apr_uint32_t open_until; /* seconds since the epoch */
    volatile apr_uint32_t answers;    /* answers recorded so far (the ring's next place) */
    volatile apr_uint32_t took[BANK_IDP_LATENCY_SAMPLES]; /* microseconds, a ring */
} breaker_slot;

struct bank_idp_breaker_s {
    breaker_slot slot[BREAKER_SLOTS];
};

apr_size_t bank_idp_breaker_size(void)
{
    return sizeof(bank_idp_breaker_t);
}

bank_idp_breaker_t *bank_idp_breaker_at(void *mem)
{
    memset(mem, 0, sizeof(bank_idp_breaker_t));
    return mem;
}

/* The slot of url, taken on first use; NULL when every slot holds another URL: that URL
 * then goes without a breaker. */
static breaker_slot *find(bank_idp_breaker_t *b, const char *url)
{
    apr_uint32_t h = 2166136261u, i;
    for (; *url; url++) {
        h = (h ^ (unsigned char)*url) * 16777619u;
    }
    h = h ? h : 1;
    for (i = 0; i < BREAKER_SLOTS; i++) {
        breaker_slot *s = &b->slot[(h + i) % BREAKER_SLOTS];
        apr_uint32_t k = apr_atomic_read32(&s->key);
        if (k == 0) {
            k = apr_atomic_cas32(&s->key, h, 0);
            k = k ? k : h;
        }
        if (k == h) {
            return s;
        }
    }
    return NULL;
}

int bank_idp_breaker_allow(bank_idp_breaker_t *b, const char *url, apr_time_t now)
{
    breaker_slot *s = b ? find(b, url) : NULL;
    apr_uint32_t sec = (apr_uint32_t)apr_time_sec(now), until;

    if (!s || apr_atomic_read32(&s->failures) < BANK_IDP_BREAKER_FAILURES) {
        return 0;
    }
    until = apr_atomic_read32(&s->open_until);
    if (sec < until) {
        return (int)(until - sec);
    }
    /* Half open: the one call that moves the closing time on is the trial; the others
     * wait for its outcome. */
    if (apr_atomic_cas32(&s->open_until, sec + BANK_IDP_BREAKER_OPEN, until) == until) {
        return 0;
    }
    until = apr_atomic_read32(&s->open_until);
    return sec < until ? (int)(until - sec) : 1;
}

int bank_idp_breaker_record(bank_idp_breaker_t *b, const char *url, int ok, apr_time_t now)
{
    breaker_slot *s = b ? find(b, url) : NULL;

    if (!s) {
        return 0;
    }
    if (ok) {
        apr_atomic_set32(&s->failures, 0);
        apr_atomic_set32(&s->open_until, 0);
        return 0;
    }
    if (apr_atomic_inc32(&s->failures) + 1 < BANK_IDP_BREAKER_FAILURES) {
        return 0;
    }
    apr_atomic_set32(&s->open_until, (apr_uint32_t)apr_time_sec(now) + BANK_IDP_BREAKER_OPEN);
    return 1;
}

void bank_idp_latency_record(bank_idp_breaker_t *b, const char *url, apr_interval_time_t took)
{
    breaker_slot *s = b ? find(b, url) : NULL;
    apr_uint32_t i;

    if (!s || took < 0) {
        return;
    }
    if (took > (apr_interval_time_t)BANK_IDP_TIMEOUT_MAX * APR_USEC_PER_SEC) {
        took = (apr_interval_time_t)BANK_IDP_TIMEOUT_MAX * APR_USEC_PER_SEC;
    }
    i = apr_atomic_inc32(&s->answers) % BANK_IDP_LATENCY_SAMPLES;
    apr_atomic_set32(&s->took[i], (apr_uint32_t)took);
}

apr_interval_time_t bank_idp_latency_draw(bank_idp_breaker_t *b, const char *url, apr_uint32_t r)
{
    breaker_slot *s = b ? find(b, url) : NULL;
    apr_uint32_t n = s ? apr_atomic_read32(&s->answers) : 0;

    if (n == 0) {
        return -1;
    }
    n = n < BANK_IDP_LATENCY_SAMPLES ? n : BANK_IDP_LATENCY_SAMPLES;
    return (apr_interval_time_t)apr_atomic_read32(&s->took[r % n]);
}
