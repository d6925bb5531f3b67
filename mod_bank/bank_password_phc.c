/* The fields of a PHC string (bank_password.c, bank_password_argon2.c): "$"-separated fields,
 * "k=V,..." parameter lists and their decimals, read strictly so that each hash has one
 * spelling. */
#include <string.h>

#include <apr_strings.h>
#include <apr_lib.h>

#include "bank_password_internal.h"

/* A decimal without sign or leading zeros, at most 9 digits (no overflow). */
int bank_phc_uint(const char *s, apr_size_t len, unsigned long *v)
{
    apr_size_t i;

    if (len == 0 || len > 9 || (s[0] == '0' && len > 1)) {
        return -1;
    }
    *v = 0;
    for (i = 0; i < len; i++) {
        if (!apr_isdigit(s[i])) {
            return -1;
        }
        *v = *v * 10 + (unsigned long)(s[i] - '0');
    }
    return 0;
}

/* Splits "a$b$c" after a scheme prefix into exactly want fields (none empty, no more). */
int bank_phc_fields(apr_pool_t *p, const char *s, char **fields, int want)
{
    char *copy = apr_pstrdup(p, s), *f = copy;
    int i;

    for (i = 0; i < want; i++) {
        char *end = strchr(f, '$');

        if ((end == NULL) != (i == want - 1)) {
            return -1;
        }
        if (end) {
            *end = '\0';
        }
        if (*f == '\0') {
            return -1;
        }
        fields[i] = f;
        f = end ? end + 1 : NULL;
    }
    return 0;
}

/* "k=V,k=V,..." in any order, each key of `keys` (one letter each) exactly once, into
 * v[i] for keys[i]: scrypt's "n=16384,r=8,p=1", argon2's "m=65536,t=3,p=4". */
int bank_phc_params(const char *s, const char *keys, unsigned long *v)
{
    unsigned int seen = 0, all = (1U << strlen(keys)) - 1;

    while (*s) {
        const char *comma = strchr(s, ',');
        apr_size_t len = comma ? (apr_size_t)(comma - s) : strlen(s);
        const char *k = s[0] ? strchr(keys, s[0]) : NULL;
        unsigned int bit;

        if (len < 3 || s[1] != '=' || !k) {
            return -1;
        }
        bit = 1U << (k - keys);
        if ((seen & bit) || bank_phc_uint(s + 2, len - 2, &v[k - keys]) != 0) {
            return -1;
        }
        seen |= bit;
        s += len;
        if (comma && *++s == '\0') {
            return -1;
        }
    }
    return seen == all ? 0 : -1;
}
