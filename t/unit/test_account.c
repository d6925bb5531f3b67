/* Unit tests for the BVN onboarding rules: names against the identity record, account names,
 * referral codes, money text, boolean columns. */
#include "unit.h"

#include <apr_strings.h>

#include "bank_account.h"
#include "bank_sql.h"

static void test_names_match(apr_pool_t *p)
{
    CHECK(bank_names_match(p, "Ada", "Obi", "Ada", "Obi"));
    CHECK(bank_names_match(p, "ADA", "obi", "ada", "OBI"));     /* case-insensitive */
    CHECK(bank_names_match(p, "Obi", "Ada", "Ada", "Obi"));     /* either order */
    CHECK(bank_names_match(p, "OBI", "ada", "Ada", "Obi"));     /* both at once */
    CHECK(bank_names_match(p, " Ada ", "Obi\t", "Ada", "Obi")); /* surrounding space */
    CHECK(bank_names_match(p, "Mary  Jane", "Obi", "mary jane", "obi"));
    CHECK(bank_names_match(p, "Adébáyọ̀", "Obi", "adébáyọ̀", "OBI")); /* UTF-8 kept as is */

    CHECK(!bank_names_match(p, "Ada", "Obi", "Ada", "Okafor"));
    CHECK(!bank_names_match(p, "Ada", "Obi", "Adaeze", "Obi"));
    CHECK(!bank_names_match(p, "Ada", "Obi", "Ada", "Ada")); /* one name twice is not both */
    CHECK(!bank_names_match(p, "Ada", "Ada", "Ada", "Obi"));
    CHECK(!bank_names_match(p, "Ada", "Obi", "AdaObi", ""));
    CHECK(!bank_names_match(p, "Ada", "Obi", "Ada Obi", ""));
    CHECK(!bank_names_match(p, "", "", "", "")); /* an empty record never matches */
    CHECK(!bank_names_match(p, " ", "Obi", "", "Obi"));
    CHECK(!bank_names_match(p, "ADÉBÁYỌ̀", "Obi", "adébáyọ̀", "Obi")); /* only ASCII folds */
    CHECK(!bank_names_match(p, NULL, "Obi", "Ada", "Obi"));
    CHECK(!bank_names_match(p, "Ada", "Obi", "Ada", NULL));
}

static void test_account_name(apr_pool_t *p)
{
    CHECK_STR(bank_account_name(p, "Ada", "Obi"), "ADA OBI");
    CHECK_STR(bank_account_name(p, " mary  jane ", "o'neil"), "MARY JANE O'NEIL");
    CHECK_STR(bank_account_name(p, "Adébáyọ̀", "Obi"), "ADéBáYọ̀ OBI");
}

static void test_referral_code(apr_pool_t *p)
{
    int i, ok = 1, differ = 0;
    const char *prev = NULL;

    for (i = 0; i < 200; i++) {
        const char *c = bank_referral_code(p);
        if (!c || strlen(c) != BANK_REFERRAL_LEN ||
            c[strspn(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZ23456789")] != '\0') {
            ok = 0;
            fprintf(stderr, "bad referral code '%s'\n", c ? c : "(null)");
            break;
        }
        differ += prev && strcmp(prev, c) != 0;
        prev = c;
    }
    CHECK(ok);
    CHECK(differ == 199);
    CHECK(strchr(BANK_REFERRAL_ALPHABET, '0') == NULL &&
          strchr(BANK_REFERRAL_ALPHABET, '1') == NULL);
    CHECK(strlen(BANK_REFERRAL_ALPHABET) == 34);
}

static void test_money_text(apr_pool_t *p)
{
    CHECK_STR(bank_money_text(p, 0), "0.00");
    CHECK_STR(bank_money_text(p, 1), "0.01");
    CHECK_STR(bank_money_text(p, 10), "0.10");
    CHECK_STR(bank_money_text(p, 100), "1.00");
    CHECK_STR(bank_money_text(p, 123456789), "1234567.89");
    CHECK_STR(bank_money_text(p, -105), "-1.05");
    CHECK_STR(bank_money_text(p, -5), "-0.05");
    CHECK_STR(bank_money_text(p, APR_INT64_C(9223372036854775807)), "92233720368547758.07");
    CHECK_STR(bank_money_text(p, APR_INT64_C(-9223372036854775807) - 1), "-92233720368547758.08");
    /* 0.1 + 0.2 in kobo: exact, as no double is involved */
    CHECK_STR(bank_money_text(p, 10 + 20), "0.30");
}

static void test_sql_true(void)
{
    static const unit_case_t cases[] = {{"1", 1}, {"t", 1},     {"TRUE", 1}, {"true", 1}, {"0", 0},
                                        {"f", 0}, {"false", 0}, {"", 0},     {NULL, 0}};
    CHECK_CASES(bank_db_bool, cases);
}

static void run_tests(apr_pool_t *p)
{
    test_names_match(p);
    test_account_name(p);
    test_referral_code(p);
    test_money_text(p);
    test_sql_true();
}
