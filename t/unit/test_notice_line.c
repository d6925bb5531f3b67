/* Unit tests for a payment notice as an archive's line (bank_notice_line.h): every column
 * back as it went, NULLs kept, received_at from either driver's form to the API's, the
 * partner's raw body with newlines, quotes and UTF-8 on one line; and each kind of line
 * refused, with a reason that never quotes the line. */
#include "unit.h"

#include <apr_strings.h>

#include "bank_notice_line.h"

static bank_notice_record_t sample(void)
{
    bank_notice_record_t r;
    int i;

    for (i = 0; i < BANK_NOTICE_COLUMNS; i++) {
        r.v[i] = NULL;
    }
    r.v[BANK_NOTICE_ID] = "0190a5b4-7c1e-7000-8000-000000000001";
    r.v[BANK_NOTICE_PARTNER] = "partner";
    r.v[2] = "payments";
    r.v[3] = "fund_transfer";
    r.v[4] = "received";
    r.v[BANK_NOTICE_AMOUNT] = "-5000";
    r.v[6] = "10.75";
    r.v[BANK_NOTICE_STATUS_CODE] = "T100";
    r.v[BANK_NOTICE_REFERENCE] = "TRF-1";
    r.v[17] = "\"CLI-1\"";
    r.v[21] = "{\"narration\":\"Rent\\nfor \xc3\x89meka\",\n\"q\":\"\\\"\"}";
    /* PostgreSQL's text of a timestamptz in another zone */
    r.v[BANK_NOTICE_RECEIVED_AT] = "2025-01-01 05:45:00.123+05:45";
    return r;
}

static void test_round_trip(apr_pool_t *p)
{
    bank_notice_record_t r = sample(), back;
    const char *line = bank_notice_line(p, &r);
    size_t len = strlen(line);
    int i, same = 1;

    CHECK(len > 1 && line[len - 1] == '\n');
    CHECK(strchr(line, '\n') == line + len - 1); /* one line, whatever the body holds */
    CHECK(strstr(line, "\"received_at\":\"2025-01-01T00:00:00.123Z\"") != NULL);
    CHECK(strstr(line, "\"currency\":null") != NULL);
    CHECK(bank_notice_unline(p, line, len - 1, &back) == NULL);
    for (i = 0; i < BANK_NOTICE_COLUMNS; i++) {
        if (i == BANK_NOTICE_RECEIVED_AT) {
            continue;
        }
        if (r.v[i] ? !back.v[i] || strcmp(r.v[i], back.v[i]) != 0 : back.v[i] != NULL) {
            fprintf(stderr, "column %s differs\n", bank_notice_column_names[i]);
            same = 0;
        }
    }
    CHECK(same);
    CHECK_STR(back.v[BANK_NOTICE_RECEIVED_AT], "2025-01-01T00:00:00.123Z");
    /* SQLite's stored form comes back as it is */
    r.v[BANK_NOTICE_RECEIVED_AT] = "2024-02-29T23:59:59.999Z";
    line = bank_notice_line(p, &r);
    CHECK(bank_notice_unline(p, line, strlen(line) - 1, &back) == NULL);
    CHECK_STR(back.v[BANK_NOTICE_RECEIVED_AT], "2024-02-29T23:59:59.999Z");
}

/* The line of sample() with one column's JSON value replaced by raw text. */
static const char *with(apr_pool_t *p, const char *column, const char *raw)
{
    bank_notice_record_t r = sample();
    const char *line = bank_notice_line(p, &r), *key = apr_psprintf(p, "\"%s\":", column);
    const char *at = strstr(line, key), *end;

    if (!at) {
        return "";
    }
    at += strlen(key);
    if (*at == 'n') {
        end = at + 4; /* null */
    } else {          /* a string: to its closing quote, past escaped ones */
        for (end = at + 1; *end && *end != '"'; end += *end == '\\' ? 2 : 1) {
        }
        end++;
    }
    return apr_pstrcat(p, apr_pstrndup(p, line, (apr_size_t)(at - line)), raw, end, (char *)NULL);
}

static const char *refused(apr_pool_t *p, const char *line)
{
    bank_notice_record_t r;
    size_t len = strlen(line);

    if (len && line[len - 1] == '\n') {
        len--;
    }
    return bank_notice_unline(p, line, len, &r);
}

static void test_refused(apr_pool_t *p)
{
    static const struct {
        const char *column, *raw, *why;
    } cases[] = {
        {"amount", "\"1-2\"", "amount is not a whole number"},
        {"amount", "\"\"", "amount is not a whole number"},
        {"amount", "\"-\"", "amount is not a whole number"},
        {"amount", "\"12345678901234567890\"", "amount is not a whole number"},
        {"amount", "5000", "amount is not a string"},
        {"currency", "{}", "currency is not a string"},
        {"id", "null", "a key column is null"},
        {"partner", "null", "a key column is null"},
        {"transaction_reference", "null", "a key column is null"},
        {"status_code", "null", "a key column is null"},
        {"received_at", "\"yesterday\"", "received_at is not a time"},
        {"received_at", "null", "received_at is not a time"},
    };
    size_t i;
    const char *why;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        why = refused(p, with(p, cases[i].column, cases[i].raw));
        if (!why || strcmp(why, cases[i].why) != 0) {
            fprintf(stderr, "%s = %s: got '%s', want '%s'\n", cases[i].column, cases[i].raw,
                    why ? why : "(accepted)", cases[i].why);
            unit_failed++;
        } else {
            unit_passed++;
        }
    }
    CHECK(refused(p, with(p, "amount", "null")) == NULL); /* no amount: null */
    CHECK(refused(p, with(p, "amount", "\"-9223372036854775808\"")) == NULL);
    CHECK_STR(refused(p, "[1,2]"), "not a JSON object");
    CHECK_STR(refused(p, "{\"id\":\"x\"}"), "not a notice's columns");
    CHECK_STR(refused(p, "{\"id\":"), "not a JSON object");
    CHECK_STR(refused(p, ""), "not a JSON object");
    /* 23 names, one of them not a column */
    CHECK_STR(refused(p, apr_pstrcat(p, "{\"idx\"",
                                     strchr(bank_notice_line(p, &(bank_notice_record_t){0}), ':'),
                                     (char *)NULL)),
              "no id");
    /* the reason never quotes the line */
    why = refused(p, with(p, "received_at", "\"SECRET-123\""));
    CHECK(why && !strstr(why, "SECRET"));
}

static void run_tests(apr_pool_t *p)
{
    test_round_trip(p);
    test_refused(p);
}
