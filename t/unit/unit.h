/* A minimal test harness for the C unit tests: CHECK records a failure and goes on. */
#ifndef BANK_UNIT_H
#define BANK_UNIT_H

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <pthread.h>
#include <apr_general.h>
#include <apr_pools.h>
#include "bank_log.h"

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

/* The core's log, captured (bank_log.h): every message of the run so far, one a line, and
 * with UNIT_LOG set in the environment also on stderr. Any thread may log. */
static char unit_log_text[65536];
static size_t unit_log_len;
static pthread_mutex_t unit_log_lock = PTHREAD_MUTEX_INITIALIZER;

static void unit_log(bank_log_where where, const char *file, int line, int level, const char *msg)
{
    size_t n = strlen(msg);
    (void)where;

    pthread_mutex_lock(&unit_log_lock);
    if (unit_log_len + n + 2 < sizeof(unit_log_text)) {
        memcpy(unit_log_text + unit_log_len, msg, n);
        unit_log_len += n;
        unit_log_text[unit_log_len++] = '\n';
        unit_log_text[unit_log_len] = '\0';
    }
    pthread_mutex_unlock(&unit_log_lock);
    if (getenv("UNIT_LOG")) {
        fprintf(stderr, "log %d %s:%d: %s\n", level, file, line, msg);
    }
}

/* 1 if a message containing text was logged since the last unit_log_clear. */
static int __attribute__((unused)) unit_logged(const char *text)
{
    int found;

    pthread_mutex_lock(&unit_log_lock);
    found = strstr(unit_log_text, text) != NULL;
    pthread_mutex_unlock(&unit_log_lock);
    return found;
}

static void __attribute__((unused)) unit_log_clear(void)
{
    pthread_mutex_lock(&unit_log_lock);
    unit_log_len = 0;
    unit_log_text[0] = '\0';
    pthread_mutex_unlock(&unit_log_lock);
}

/* Each test file defines run_tests(pool); main prints one line the runner sums up. */
static void run_tests(apr_pool_t *p);

int main(int argc, const char *const *argv)
{
    apr_pool_t *p;
    (void)argc;
    apr_initialize();
    apr_pool_create(&p, NULL);
    bank_log_set(unit_log);
    run_tests(p);
    apr_pool_destroy(p);
    apr_terminate();
    printf("%s: %d passed, %d failed\n", argv[0], unit_passed, unit_failed);
    return unit_failed ? 1 : 0;
}

#endif
