/* Field validators: rules, messages and the error list the 422 answer is built from. */
#include <string.h>
#include "unit.h"
#include "bank_json.h"
#include "bank_validate.h"
#include "bank_encoding.h"

static apr_time_t at(int y, int m, int d)
{
    apr_time_exp_t t;
    apr_time_t out;
    memset(&t, 0, sizeof(t));
    t.tm_year = y - 1900;
    t.tm_mon = m - 1;
    t.tm_mday = d;
    t.tm_hour = 12;
    apr_time_exp_gmt_get(&out, &t);
    return out;
}

static const bank_field_error_t *last(apr_array_header_t *errs)
{
    return errs->nelts ? &APR_ARRAY_IDX(errs, errs->nelts - 1, bank_field_error_t) : NULL;
}

static void test_strings(apr_pool_t *p)
{
    const char *why = NULL;
    const char *text = "{\"s\":\"abc\",\"n\":5,\"e\":\"\",\"u\":\"\xc3\xa1\xc3\xa1\",\"z\":null}";
    json_object *body = bank_json_parse_object(p, text, strlen(text), &why);
    apr_array_header_t *errs = bank_errors_new(p);

    CHECK(body != NULL);
    CHECK_STR(bank_v_string(errs, body, "s", 1, 3), "abc");
    CHECK(errs->nelts == 0);
    CHECK(bank_v_string(errs, body, "missing", 1, 3) == NULL);
    CHECK_STR(last(errs)->rule, "required");
    CHECK_STR(last(errs)->field, "missing");
    CHECK_STR(last(errs)->message, "The missing field must be defined");
    CHECK(bank_v_string(errs, body, "z", 1, 3) == NULL); /* null counts as missing */
    CHECK_STR(last(errs)->rule, "required");
    CHECK(bank_v_string(errs, body, "n", 1, 3) == NULL);
    CHECK_STR(last(errs)->rule, "string");
    CHECK_STR(last(errs)->message, "The n field must be a string");
    CHECK(bank_v_string(errs, body, "e", 1, 3) == NULL);
    CHECK_STR(last(errs)->rule, "required");
    CHECK(bank_v_string(errs, body, "s", 4, 10) == NULL);
    CHECK_STR(last(errs)->rule, "minLength");
    CHECK_STR(last(errs)->message, "The s field must have at least 4 characters");
    CHECK(bank_v_string(errs, body, "s", 1, 2) == NULL);
    CHECK_STR(last(errs)->rule, "maxLength");
    CHECK_STR(last(errs)->message, "The s field must not be greater than 2 characters");
    /* lengths count characters, not bytes */
    CHECK(bank_v_string(errs, body, "u", 2, 2) != NULL);
    CHECK(errs->nelts == 6);
}

static void test_utf8_length(void)
{
    CHECK(bank_utf8_length("") == 0);
    CHECK(bank_utf8_length("abc") == 3);
    CHECK(bank_utf8_length("Ad\xc3\xa1") == 3);                   /* 2-byte */
    CHECK(bank_utf8_length("\xe2\x82\xac\xf0\x9f\x98\x80") == 2); /* 3- and 4-byte */
}

static void test_email(void)
{
    CHECK(bank_email_plausible("ada@example.com"));
    CHECK(bank_email_plausible("ada.obi+bank@mail.example.ng"));
    CHECK(bank_email_plausible("A_B-c@x-y.co"));
    CHECK(!bank_email_plausible(""));
    CHECK(!bank_email_plausible("ada"));
    CHECK(!bank_email_plausible("@example.com"));
    CHECK(!bank_email_plausible("ada@"));
    CHECK(!bank_email_plausible("ada@example"));
    CHECK(!bank_email_plausible("ada@example.c"));
    CHECK(!bank_email_plausible("ada@@example.com"));
    CHECK(!bank_email_plausible("a da@example.com"));
    CHECK(!bank_email_plausible("ada@exa mple.com"));
    CHECK(!bank_email_plausible(".ada@example.com"));
    CHECK(!bank_email_plausible("ada.@example.com"));
    CHECK(!bank_email_plausible("a..da@example.com"));
    CHECK(!bank_email_plausible("ada@-example.com"));
    CHECK(!bank_email_plausible("ada@example..com"));
    CHECK(!bank_email_plausible("ada@.example.com"));
    CHECK(!bank_email_plausible("ada<x>@example.com"));
    CHECK(!bank_email_plausible("ada@exa_mple.com"));
    CHECK(!bank_email_plausible("a\n@example.com"));
}

static void test_bvn(void)
{
    static const unit_case_t cases[] = {{"22212345678", 1},
                                        {"00000000000", 1},
                                        {"2221234567", 0},
                                        {"222123456789", 0},
                                        {"2221234567a", 0},
                                        {"2221234567 ", 0},
                                        {" 2221234567", 0},
                                        {"２２２１２３４５６７８", 0},
                                        {"", 0}};
    CHECK_CASES(bank_bvn_valid, cases);
}

static void test_dates(void)
{
    apr_time_t today = at(2026, 11, 22);

    CHECK(bank_date_check("1990-04-12", today) == BANK_DATE_OK);
    CHECK(bank_date_check("2000-02-29", today) == BANK_DATE_OK); /* leap, divisible by 400 */
    CHECK(bank_date_check("2024-02-29", today) == BANK_DATE_OK);
    CHECK(bank_date_check("2026-11-22", today) == BANK_DATE_OK); /* today */
    CHECK(bank_date_check("1900-02-29", today) == BANK_DATE_UNREAL);
    CHECK(bank_date_check("2023-02-29", today) == BANK_DATE_UNREAL);
    CHECK(bank_date_check("2023-02-30", today) == BANK_DATE_UNREAL);
    CHECK(bank_date_check("1990-04-31", today) == BANK_DATE_UNREAL);
    CHECK(bank_date_check("1990-13-01", today) == BANK_DATE_UNREAL);
    CHECK(bank_date_check("1990-00-10", today) == BANK_DATE_UNREAL);
    CHECK(bank_date_check("1990-01-00", today) == BANK_DATE_UNREAL);
    CHECK(bank_date_check("0000-01-01", today) == BANK_DATE_UNREAL);
    CHECK(bank_date_check("2026-11-23", today) == BANK_DATE_FUTURE);
    CHECK(bank_date_check("2026-12-01", today) == BANK_DATE_FUTURE);
    CHECK(bank_date_check("2027-01-01", today) == BANK_DATE_FUTURE);
    CHECK(bank_date_check("01-01-1990", today) == BANK_DATE_FORMAT);
    CHECK(bank_date_check("1990-1-01", today) == BANK_DATE_FORMAT);
    CHECK(bank_date_check("1990/01/01", today) == BANK_DATE_FORMAT);
    CHECK(bank_date_check("1990-01-01T00:00:00Z", today) == BANK_DATE_FORMAT);
    CHECK(bank_date_check("1990-01-0", today) == BANK_DATE_FORMAT);
    CHECK(bank_date_check("", today) == BANK_DATE_FORMAT);
}

static void run_tests(apr_pool_t *p)
{
    test_utf8_length();
    test_strings(p);
    test_email();
    test_bvn();
    test_dates();
    CHECK_STR(bank_ascii_lower(p, "Ada.OBI@Example.COM"), "ada.obi@example.com");
}
