/* bankctl bvn check (mod_bank/bankctl_bvn_check.c): asks an identity provider whether a BVN,
 * a date of birth and two names belong together, as the module would, and prints match or
 * mismatch. Needs no database. */
#ifndef BANKCTL_BVN_CHECK_H
#define BANKCTL_BVN_CHECK_H

#include <apr_pools.h>

#define BANKCTL_BVN_CHECK_USAGE                                                                    \
    "  bvn check --bvn B --dob YYYY-MM-DD --first F --last L [--provider dojah|prembly]\n"         \
    "            [--url BASE-URL] [--app-id ID] [--key SECRET | --credentials FILE]\n"             \
    "            [--timeout SECONDS]\n"                                                            \
    "      ask the identity provider; print match (exit 0) or mismatch (exit 3); options\n"        \
    "      default to BANK_BVN_PROVIDER, BANK_BVN_PROVIDER_URL, BANK_BVN_PROVIDER_APP_ID and\n"    \
    "      BANK_BVN_PROVIDER_KEY (prefer those or --credentials: arguments show in ps)\n"

/* argv: the words after "bvn check". Returns the exit status. */
int bankctl_bvn_check(apr_pool_t *p, int argc, const char *const *argv);

#endif
