/* BVN onboarding rules that need no request: name matching, account names, referral codes,
 * money text (docs/api.md). */
#include <string.h>
#include <strings.h>
#include <apr_strings.h>
#include "bank_account.h"
#include "bank_encoding.h"
#include "bank_rand.h"

/* ASCII only: a byte of a UTF-8 sequence is never changed, whatever the C locale says. */
static int ascii_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* A copy with white space trimmed and inner runs collapsed to one space; ASCII letters
 * lower-cased (upper=0) or upper-cased (upper=1). */
static char *normalise(apr_pool_t *p, const char *s, int upper)
{
    char *out = apr_palloc(p, strlen(s) + 1), *o = out;

    for (; *s; s++) {
        if (ascii_space(*s)) {
            if (o != out && o[-1] != ' ') {
                *o++ = ' ';
            }
            continue;
        }
        *o++ = bank_ascii_fold(*s, upper);
    }
    if (o != out && o[-1] == ' ') {
        o--;
    }
    *o = '\0';
    return out;
}

int bank_names_match(apr_pool_t *p, const char *rec_first, const char *rec_last, const char *first,
                     const char *last)
{
    const char *rf, *rl, *f, *l;

    if (!rec_first || !rec_last || !first || !last) {
        return 0;
    }
    rf = normalise(p, rec_first, 0);
    rl = normalise(p, rec_last, 0);
    f = normalise(p, first, 0);
    l = normalise(p, last, 0);
    if (!*rf || !*rl) {
        return 0;
    }
    return (!strcmp(rf, f) && !strcmp(rl, l)) || (!strcmp(rf, l) && !strcmp(rl, f));
}

char *bank_account_name(apr_pool_t *p, const char *first, const char *last)
{
    return normalise(p, apr_pstrcat(p, first, " ", last, (char *)NULL), 1);
}

char *bank_referral_code(apr_pool_t *p)
{
    return bank_random_string(p, BANK_REFERRAL_LEN, BANK_REFERRAL_ALPHABET);
}

char *bank_money_text(apr_pool_t *p, apr_int64_t minor)
{
    /* the magnitude as unsigned, so the most negative value does not overflow */
    apr_uint64_t m = minor < 0 ? (apr_uint64_t)0 - (apr_uint64_t)minor : (apr_uint64_t)minor;

    return apr_psprintf(p, "%s%" APR_UINT64_T_FMT ".%02d", minor < 0 ? "-" : "", m / 100,
                        (int)(m % 100));
}
