/* NUBAN account numbers (CBN 2020 revision): 9-digit serial + 1 check digit, computed over
 * the 6-digit institution code followed by the serial with weights 3,7,3 repeated. */
#ifndef BANK_NUBAN_H
#define BANK_NUBAN_H

#include <apr_pools.h>

/* The 6-digit institution code for a 3-digit (prefixed 000), 5-digit (prefixed 9) or 6-digit
 * CBN code; NULL for anything else. */
char *bank_nuban_institution(apr_pool_t *p, const char *bank_code);
/* Check digit 0..9 for a bank code and a 9-digit serial, or -1 if either is malformed. */
int bank_nuban_check_digit(const char *bank_code, const char *serial9);
/* The 10-digit account number for a bank code and a serial number (0 < serial < 10^9),
 * or NULL. */
char *bank_nuban_account(apr_pool_t *p, const char *bank_code, apr_int64_t serial);

#endif
