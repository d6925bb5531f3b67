/* A minimal test harness for the C unit tests: CHECK records a failure and goes on. */
#ifndef BANK_UNIT_H
#define BANK_UNIT_H

#include <stdio.h>
#include <string.h>
#include <apr_general.h>
#include <apr_pools.h>

static int unit_passed, unit_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            unit_passed++;                                                                         \
        } else {                                                                                   \
            unit_failed++;                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_STR(got, want)                                                                       \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        if (g_ && w_ && strcmp(g_, w_) == 0) {                                                     \
            unit_passed++;                                                                         \
        } else {                                                                                   \
            unit_failed++;                                                                         \
            fprintf(stderr, "%s:%d: got '%s', want '%s'\n", __FILE__, __LINE__,                    \
                    g_ ? g_ : "(null)", w_ ? w_ : "(null)");                                       \
        }                                                                                          \
    } while (0)

/* A predicate's answer for a list of inputs: want 1 (accepted) or 0 (refused). */
typedef struct {
    const char *in;
    int want;
} unit_case_t;

static void __attribute__((unused))
check_cases(const char *what, int (*fn)(const char *), const unit_case_t *cases, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (!!fn(cases[i].in) == cases[i].want) {
            unit_passed++;
        } else {
            unit_failed++;
            fprintf(stderr, "%s('%s'): want %d\n", what, cases[i].in ? cases[i].in : "(null)",
                    cases[i].want);
        }
    }
}
#define CHECK_CASES(fn, cases) check_cases(#fn, fn, cases, sizeof(cases) / sizeof((cases)[0]))

/* Each test file defines run_tests(pool); main prints one line the runner sums up. */
static void run_tests(apr_pool_t *p);

int main(int argc, const char *const *argv)
{
    apr_pool_t *p;
    (void)argc;
    apr_initialize();
    apr_pool_create(&p, NULL);
    run_tests(p);
    apr_pool_destroy(p);
    apr_terminate();
    printf("%s: %d passed, %d failed\n", argv[0], unit_passed, unit_failed);
    return unit_failed ? 1 : 0;
}

#endif
