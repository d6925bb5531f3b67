/* Unit tests for the UUIDs: version 4's and version 7's version and variant bits, version 7's
 * time prefix, and its order within a process (one thread, within one millisecond, and across
 * threads). */
#include "unit.h"

#include <apr_time.h>

#include "bank_uuid.h"

/* The 48-bit millisecond prefix of a version 7 UUID's text. */
static apr_uint64_t uuid7_ms(const char *u)
{
    char hex[13];

    memcpy(hex, u, 8);
    memcpy(hex + 8, u + 9, 4);
    hex[12] = '\0';
    return (apr_uint64_t)strtoull(hex, NULL, 16);
}

/* The 12-bit counter after the version nibble. */
static unsigned uuid7_counter(const char *u)
{
    char hex[4] = {u[15], u[16], u[17], '\0'};

    return (unsigned)strtoul(hex, NULL, 16);
}

static int variant_ok(const char *u)
{
    return u[19] == '8' || u[19] == '9' || u[19] == 'a' || u[19] == 'b';
}

static void test_uuid4(apr_pool_t *p)
{
    const char *a = bank_uuid4(p), *b = bank_uuid4(p);

    CHECK(bank_is_uuid(a));
    CHECK(a && a[14] == '4');
    CHECK(a && variant_ok(a));
    CHECK(a && b && strcmp(a, b) != 0);
}

static void test_uuid7_bits(apr_pool_t *p)
{
    apr_uint64_t before = (apr_uint64_t)apr_time_as_msec(apr_time_now());
    const char *u = bank_uuid7(p);
    apr_uint64_t after = (apr_uint64_t)apr_time_as_msec(apr_time_now());
    int i, lower = 1, bits = 1;

    CHECK(bank_is_uuid(u));
    if (!u) {
        return;
    }
    for (i = 0; u[i]; i++) {
        lower = lower && !(u[i] >= 'A' && u[i] <= 'F');
    }
    CHECK(lower);
    CHECK(u[14] == '7');
    CHECK(variant_ok(u));
    /* the time prefix is the clock's millisecond (a counter overflow may push it ahead by
     * one: not within a single call after a quiet start) */
    CHECK(uuid7_ms(u) >= before && uuid7_ms(u) <= after + 1);
    /* every later one keeps the version and variant bits */
    for (i = 0; i < 1000; i++) {
        const char *v = bank_uuid7(p);

        bits = bits && v && bank_is_uuid(v) && v[14] == '7' && variant_ok(v);
    }
    CHECK(bits);
}

/* 20,000 in a row: each sorts after the one before, as text; several share a millisecond and
 * there each one's counter is the one before's plus one. */
static void test_uuid7_order(apr_pool_t *p)
{
    const char *prev = bank_uuid7(p);
    int i, ordered = 1, same_ms = 0, counted = 1;

    for (i = 0; i < 20000 && prev; i++) {
        const char *u = bank_uuid7(p);

        if (!u || strcmp(u, prev) <= 0) {
            ordered = 0;
            fprintf(stderr, "out of order: %s after %s\n", u ? u : "(null)", prev);
            break;
        }
        if (uuid7_ms(u) == uuid7_ms(prev)) {
            same_ms++;
            counted = counted && uuid7_counter(u) == uuid7_counter(prev) + 1;
        }
        prev = u;
    }
    CHECK(prev != NULL);
    CHECK(ordered);
    CHECK(same_ms > 0); /* the case of one millisecond was met */
    CHECK(counted);
}

#define UUID7_THREADS 4
#define UUID7_PER_THREAD 5000

typedef struct {
    char ids[UUID7_PER_THREAD][37];
    int ok;
} uuid7_run;

static void *uuid7_thread(void *arg)
{
    uuid7_run *run = arg;
    apr_pool_t *p;
    int i;

    apr_pool_create(&p, NULL);
    run->ok = 1;
    for (i = 0; i < UUID7_PER_THREAD; i++) {
        const char *u = bank_uuid7(p);

        if (!u) {
            run->ok = 0;
            break;
        }
        memcpy(run->ids[i], u, 37);
    }
    apr_pool_destroy(p);
    return NULL;
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Threads at once: each one's ids in order, and no id given twice in the process. */
static void test_uuid7_threads(apr_pool_t *p)
{
    pthread_t th[UUID7_THREADS];
    uuid7_run *runs = apr_pcalloc(p, sizeof(*runs) * UUID7_THREADS);
    char(*all)[37] = apr_palloc(p, sizeof(*all) * UUID7_THREADS * UUID7_PER_THREAD);
    int t, i, ok = 1, ordered = 1, unique = 1;

    for (t = 0; t < UUID7_THREADS; t++) {
        pthread_create(&th[t], NULL, uuid7_thread, &runs[t]);
    }
    for (t = 0; t < UUID7_THREADS; t++) {
        pthread_join(th[t], NULL);
        ok = ok && runs[t].ok;
        for (i = 1; i < UUID7_PER_THREAD; i++) {
            ordered = ordered && strcmp(runs[t].ids[i], runs[t].ids[i - 1]) > 0;
        }
        memcpy(all[t * UUID7_PER_THREAD], runs[t].ids, sizeof(runs[t].ids));
    }
    qsort(all, UUID7_THREADS * UUID7_PER_THREAD, sizeof(*all), cmp_id);
    for (i = 1; i < UUID7_THREADS * UUID7_PER_THREAD; i++) {
        unique = unique && strcmp(all[i], all[i - 1]) != 0;
    }
    CHECK(ok);
    CHECK(ordered);
    CHECK(unique);
}

static void run_tests(apr_pool_t *p)
{
    test_uuid4(p);
    test_uuid7_bits(p);
    test_uuid7_order(p);
    test_uuid7_threads(p);
}
