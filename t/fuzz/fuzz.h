/* Shared by the libFuzzer harnesses (one per target, t/fuzz/fuzz_*.c): a pool per input
 * and a check that aborts, so that a broken property is a crash libFuzzer keeps. */
#ifndef BANK_FUZZ_H
#define BANK_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <apr_general.h>
#include <apr_pools.h>
#include <apr_strings.h>

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond);            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* One pool for the whole run; each input gets a subpool destroyed after it, as a request's. */
static inline apr_pool_t *fuzz_pool(void)
{
    static apr_pool_t *root;
    apr_pool_t *p;

    if (!root) {
        apr_initialize();
        apr_pool_create(&root, NULL);
    }
    apr_pool_create(&p, root);
    return p;
}

/* The input as the C string the module would hold (cut at its first NUL, as a header or a
 * database column would be). */
static inline const char *fuzz_cstr(apr_pool_t *p, const uint8_t *data, size_t size)
{
    return apr_pstrmemdup(p, (const char *)data, size);
}

#endif
