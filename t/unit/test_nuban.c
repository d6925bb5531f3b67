/* Unit tests for NUBAN check digits (CBN 2020). Expected values were worked by hand and
 * with a separate python implementation of the published rule. */
#include "unit.h"

#include "bank_nuban.h"

static void test_institution(apr_pool_t *p)
{
    static const char *const bad[] = {
        "",     "1",    "01",  "0111", "1234567", "01a",    "5021a",
        " 011", "011 ", "-11", "+11",  "0x1",     "09026a", "\xd9\xa1\xd9\xa1\xd9\xa1"};
    apr_size_t i;
    int ok = 1;

    CHECK_STR(bank_nuban_institution(p, "011"), "000011");
    CHECK_STR(bank_nuban_institution(p, "999"), "000999");
    CHECK_STR(bank_nuban_institution(p, "50211"), "950211");
    CHECK_STR(bank_nuban_institution(p, "090267"), "090267");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (bank_nuban_institution(p, bad[i]) != NULL) {
            ok = 0;
            fprintf(stderr, "accepted bank code '%s'\n", bad[i]);
        }
    }
    CHECK(ok);
    CHECK(bank_nuban_institution(p, NULL) == NULL);
}

static void test_check_digit(void)
{
    /* 000011 000001457: 0*3+0*7+0*3 +0*3+1*7+1*3 +0*3+0*7+0*3 +0*3+0*7+1*3 +4*3+5*7+7*3 = 81,
     * (10 - 1) % 10 = 9. */
    CHECK(bank_nuban_check_digit("011", "000001457") == 9);
    CHECK(bank_nuban_check_digit("011", "000000022") == 0);
    CHECK(bank_nuban_check_digit("50211", "000001457") == 1);
    CHECK(bank_nuban_check_digit("950211", "000001457") == 1);
    CHECK(bank_nuban_check_digit("090267", "123456789") == 3);
    CHECK(bank_nuban_check_digit("999", "000000002") == 7);
    CHECK(bank_nuban_check_digit("058", "000000001") == 8);
    CHECK(bank_nuban_check_digit("058", "999999998") == 3);
    CHECK(bank_nuban_check_digit("999999", "987654321") == 1);

    CHECK(bank_nuban_check_digit("011", "00001457") == -1);
    CHECK(bank_nuban_check_digit("011", "0000014570") == -1);
    CHECK(bank_nuban_check_digit("011", "00000145a") == -1);
    CHECK(bank_nuban_check_digit("011", "-00001457") == -1);
    CHECK(bank_nuban_check_digit("011", "") == -1);
    CHECK(bank_nuban_check_digit("011", NULL) == -1);
    CHECK(bank_nuban_check_digit("0111", "000001457") == -1);
    CHECK(bank_nuban_check_digit("", "000001457") == -1);
    CHECK(bank_nuban_check_digit(NULL, "000001457") == -1);
}

static void test_account(apr_pool_t *p)
{
    CHECK_STR(bank_nuban_account(p, "011", 1457), "0000014579");
    CHECK_STR(bank_nuban_account(p, "011", 22), "0000000220");
    CHECK_STR(bank_nuban_account(p, "50211", 1457), "0000014571");
    CHECK_STR(bank_nuban_account(p, "090267", 123456789), "1234567893");
    CHECK_STR(bank_nuban_account(p, "999", 2), "0000000027");
    CHECK_STR(bank_nuban_account(p, "058", 999999998), "9999999983");

    CHECK(bank_nuban_account(p, "011", 0) == NULL);
    CHECK(bank_nuban_account(p, "011", -1) == NULL);
    CHECK(bank_nuban_account(p, "011", APR_INT64_C(1000000000)) == NULL);
    CHECK(bank_nuban_account(p, "011", APR_INT64_C(-9223372036854775807) - 1) == NULL);
    CHECK(bank_nuban_account(p, "11", 1457) == NULL);
    CHECK(bank_nuban_account(p, "abc", 1457) == NULL);
    CHECK(bank_nuban_account(p, NULL, 1457) == NULL);
}

static void run_tests(apr_pool_t *p)
{
    test_institution(p);
    test_check_digit();
    test_account(p);
}
