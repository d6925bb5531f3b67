/* The pure rules of BVN onboarding (docs/api.md): matching the customer's names against the
 * identity record, the account name, referral codes and money text. No httpd dependency. */
#ifndef BANK_ACCOUNT_H
#define BANK_ACCOUNT_H

#include <apr_pools.h>

/* Referral codes: 8 characters from A-Z and 2-9 (no 0/O or 1/I to misread). */
#define BANK_REFERRAL_LEN 8
#define BANK_REFERRAL_ALPHABET "ABCDEFGHIJKLMNOPQRSTUVWXYZ23456789"

/* 1 if the record's names are the customer's, in either order: ASCII letters compared
 * case-insensitively, surrounding white space ignored, inner runs of it taken as one space.
 * Other bytes (accented letters in UTF-8) must be equal. */
int bank_names_match(apr_pool_t *p, const char *rec_first, const char *rec_last, const char *first,
                     const char *last);
/* "ADA OBI" for "Ada", " obi ": the record's names, spaces normalised, ASCII upper-cased. */
char *bank_account_name(apr_pool_t *p, const char *first, const char *last);
/* A fresh referral code, or NULL if randomness failed. */
char *bank_referral_code(apr_pool_t *p);
/* Minor units (kobo) as a decimal string with two fraction digits: 0 -> "0.00",
 * -105 -> "-1.05". Integer arithmetic only. */
char *bank_money_text(apr_pool_t *p, apr_int64_t minor);

#endif
