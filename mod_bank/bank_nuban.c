/* NUBAN check digits (CBN 2020 revision, docs/api.md). */
#include <string.h>

#include <apr_strings.h>
#include <apr_lib.h>

#include "bank_nuban.h"

#define NUBAN_SERIAL_LEN 9
#define NUBAN_SERIAL_MAX 1000000000LL

static int all_digits(const char *s, apr_size_t len)
{
    apr_size_t i;

    for (i = 0; i < len; i++) {
        if (!apr_isdigit(s[i])) {
            return 0;
        }
    }
    return 1;
}

/* Writes the 6-digit institution code into out[7]; -1 if bank_code is not 3, 5 or 6 digits. */
static int institution(const char *bank_code, char out[7])
{
    apr_size_t len = bank_code ? strlen(bank_code) : 0;

    if (!all_digits(bank_code, len)) {
        return -1;
    }
    switch (len) {
    case 3: /* deposit money banks */
        apr_snprintf(out, 7, "000%s", bank_code);
        return 0;
    case 5: /* other financial institutions */
        apr_snprintf(out, 7, "9%s", bank_code);
        return 0;
    case 6:
        apr_cpystrn(out, bank_code, 7);
        return 0;
    default:
        return -1;
    }
}

char *bank_nuban_institution(apr_pool_t *p, const char *bank_code)
{
    char inst[7];

    return institution(bank_code, inst) == 0 ? apr_pstrdup(p, inst) : NULL;
}

int bank_nuban_check_digit(const char *bank_code, const char *serial9)
{
    static const int weights[3] = {3, 7, 3};
    char digits[16];
    int i, sum = 0;

    if (institution(bank_code, digits) != 0 || !serial9 || strlen(serial9) != NUBAN_SERIAL_LEN ||
        !all_digits(serial9, NUBAN_SERIAL_LEN)) {
        return -1;
    }
    apr_cpystrn(digits + 6, serial9, sizeof(digits) - 6);
    for (i = 0; i < 15; i++) {
        sum += (digits[i] - '0') * weights[i % 3];
    }
    return (10 - sum % 10) % 10;
}

char *bank_nuban_account(apr_pool_t *p, const char *bank_code, apr_int64_t serial)
{
    char serial9[NUBAN_SERIAL_LEN + 1];
    int check;

    if (serial <= 0 || serial >= NUBAN_SERIAL_MAX) {
        return NULL;
    }
    apr_snprintf(serial9, sizeof(serial9), "%09" APR_INT64_T_FMT, serial);
    check = bank_nuban_check_digit(bank_code, serial9);
    if (check < 0) {
        return NULL;
    }
    return apr_psprintf(p, "%s%d", serial9, check);
}
