/* Request-body parsing: what is JSON text, what is an object, and what we refuse although
 * json-c would take it; and the thread's locale around a parse. */
#include <dlfcn.h>
#include <locale.h>
#include <string.h>
#include "unit.h"

#include <math.h>
#include "bank_json.h"

static int parses(apr_pool_t *p, const char *text, apr_size_t len)
{
    const char *why = NULL;
    json_object *o = bank_json_parse_object(p, text, len, &why);
    return o != NULL && why == NULL;
}
#define OK_JSON(p, s) parses(p, s, sizeof(s) - 1)

static char *nested(apr_pool_t *p, int depth)
{
    char *s = apr_palloc(p, (apr_size_t)depth * 6 + 8), *c = s;
    int i;
    for (i = 0; i < depth; i++) {
        memcpy(c, "{\"a\":", 5);
        c += 5;
    }
    *c++ = '1';
    for (i = 0; i < depth; i++) {
        *c++ = '}';
    }
    *c = '\0';
    return s;
}

/* bank_json_parse: the type of the value it read, "refused" or "null". */
static const char *value_type(apr_pool_t *p, const char *text, apr_size_t len)
{
    const char *why = "unset";
    json_object *o = bank_json_parse(p, text, len, &why);

    if (!o) {
        return why ? "refused" : "null";
    }
    return why ? "why set" : json_type_to_name(json_object_get_type(o));
}
#define TYPE_OF(p, s) value_type(p, s, sizeof(s) - 1)

static void test_any_value(apr_pool_t *p)
{
    char *n16 = nested(p, 16), *n17 = nested(p, 17);
    const char *why = NULL;
    json_object *o;

    /* top-level numbers end where the text ends (json-c needs to be told) */
    CHECK_STR(TYPE_OF(p, "12"), "int");
    CHECK_STR(TYPE_OF(p, "-0"), "double"); /* json-c says int; its sign is put back */
    CHECK_STR(TYPE_OF(p, "12 \n"), "int");
    CHECK_STR(TYPE_OF(p, "2.5e3"), "double");
    CHECK_STR(TYPE_OF(p, "true"), "boolean");
    CHECK_STR(TYPE_OF(p, "false"), "boolean");
    CHECK_STR(TYPE_OF(p, "null"), "null");
    CHECK_STR(TYPE_OF(p, " null "), "null");
    CHECK_STR(TYPE_OF(p, "\"x\""), "string");
    CHECK_STR(TYPE_OF(p, "[1, \"a\", null]"), "array");
    CHECK_STR(TYPE_OF(p, " [] "), "array");
    CHECK_STR(TYPE_OF(p, "{}"), "object");
    CHECK_STR(value_type(p, n16, strlen(n16)), "object");
    o = bank_json_parse(p, "1234567890123", 13, &why);
    CHECK(o && json_object_get_int64(o) == APR_INT64_C(1234567890123));
    o = bank_json_parse(p, "\"caf\xc3\xa9\"", 7, &why);
    CHECK(o && strcmp(json_object_get_string(o), "caf\xc3\xa9") == 0);
    /* only the first len bytes are read */
    CHECK_STR(value_type(p, "12]", 2), "int");
    CHECK_STR(value_type(p, "[1]x", 3), "array");

    /* the same refusals as for a request body */
    CHECK_STR(TYPE_OF(p, ""), "refused");
    CHECK_STR(TYPE_OF(p, "  "), "refused");
    CHECK_STR(TYPE_OF(p, "nul"), "refused");
    CHECK_STR(TYPE_OF(p, "tru"), "refused");
    CHECK_STR(TYPE_OF(p, "-"), "refused");
    CHECK_STR(TYPE_OF(p, "1.5e"), "refused");
    CHECK_STR(TYPE_OF(p, "0012"), "refused");
    CHECK_STR(TYPE_OF(p, "1 2"), "refused");
    CHECK_STR(TYPE_OF(p, "12x"), "refused");
    CHECK_STR(TYPE_OF(p, "null x"), "refused");
    CHECK_STR(TYPE_OF(p, "[1]]"), "refused");
    CHECK_STR(TYPE_OF(p, "[1,]"), "refused");
    CHECK_STR(TYPE_OF(p, "'x'"), "refused");
    CHECK_STR(TYPE_OF(p, "\"\xff\""), "refused");
    CHECK_STR(TYPE_OF(p, "\"a\x01\""), "refused");
    CHECK_STR(TYPE_OF(p, "\"a\\u0000\""), "refused");
    /* lone UTF-16 surrogates escaped: either half alone, a high one before anything but a low
     * one, two highs; a pair is a character (U+1F600) */
    CHECK_STR(TYPE_OF(p, "\"\\ud800\""), "refused");
    CHECK_STR(TYPE_OF(p, "\"\\uDC00\""), "refused");
    CHECK_STR(TYPE_OF(p, "\"\\ud83dx\""), "refused");
    CHECK_STR(TYPE_OF(p, "\"\\ud83d\\u0041\""), "refused");
    CHECK_STR(TYPE_OF(p, "\"\\ud83d\\ud83d\\ude00\""), "refused");
    CHECK_STR(TYPE_OF(p, "\"\\ude00\\ud83d\""), "refused");
    CHECK_STR(TYPE_OF(p, "\"a\\ud83d\\ude00b\""), "string");
    CHECK_STR(TYPE_OF(p, "\"\\uD83D\\uDE00\\ud83d\\ude00\""), "string");
    CHECK_STR(TYPE_OF(p, "\"\\\\ud800\""), "string"); /* an escaped backslash, then text */
    CHECK_STR(TYPE_OF(p, "NaN"), "refused");
    CHECK_STR(TYPE_OF(p, "Infinity"), "refused");
    CHECK_STR(TYPE_OF(p, "-Infinity"), "refused");
    CHECK_STR(TYPE_OF(p, "1e400"), "refused");
    CHECK_STR(TYPE_OF(p, "[1e400]"), "refused");
    CHECK_STR(value_type(p, "12\0", 3), "refused");
    CHECK_STR(value_type(p, n17, strlen(n17)), "refused");
    why = NULL;
    CHECK(bank_json_parse(p, "1e400", 5, &why) == NULL && why && strstr(why, "number"));
}

/* The same member name twice in one object, at any depth, after unescaping: refused. */
static void test_duplicates(apr_pool_t *p)
{
    const char *why = NULL;

    CHECK(!bank_json_parse_object(p, "{\"amount\":1,\"amount\":777777}", 28, &why));
    CHECK(why && strstr(why, "same member name"));
    CHECK(!OK_JSON(p, "{\"a\":1,\"\\u0061\":2}"));
    CHECK(!OK_JSON(p, "{\"\\u00e9\":1,\"\xc3\xa9\":2}"));
    CHECK(!OK_JSON(p, "{\"a\\/b\":1,\"a/b\":2}"));
    CHECK(!OK_JSON(p, "{\"d\":{\"x\":1,\"y\":2,\"x\":3}}"));
    CHECK(!OK_JSON(p, "{\"d\":[{\"x\":1},{\"x\":1,\"x\":1}]}"));
    CHECK(!OK_JSON(p, "{\"d\":[[[{\"k\":{\"z\":null,\"z\":null}}]]]}"));
    /* the first value holds more members than the second, or fewer, or the same */
    CHECK(!OK_JSON(p, "{\"a\":{\"x\":1,\"y\":2},\"a\":{}}"));
    CHECK(!OK_JSON(p, "{\"a\":{},\"a\":{\"x\":1,\"y\":2}}"));
    CHECK(!OK_JSON(p, "{\"a\":{\"x\":1},\"a\":{\"x\":1}}"));
    CHECK(!OK_JSON(p, "{\"a\":null,\"a\":null}"));
    /* names that differ, colons and braces inside strings, equal names in different objects */
    CHECK(OK_JSON(p, "{\"a\":1,\"A\":2,\"a \":3,\"\\u0062\":4}"));
    CHECK(OK_JSON(p, "{\"a:b\":\"c:d\",\"e\":\"{\\\"f\\\":1,\\\"f\\\":2}\"}"));
    CHECK(OK_JSON(p, "{\"x\":{\"a\":1},\"y\":{\"a\":1},\"z\":[{\"a\":1},{\"a\":2}]}"));
    CHECK(OK_JSON(p, "{\"\\\"\":1,\"\\\\\":2,\"\":3}"));
}

static int exact(apr_pool_t *p, const char *text)
{
    const char *why = NULL;
    json_object *o = bank_json_parse(p, text, strlen(text), &why);
    return o && bank_json_number_exact(o);
}

/* bank_json_number_exact: the text's value is the one its double gives back. */
static void test_round_trip(apr_pool_t *p)
{
    static const char *const yes[] = {"0",
                                      "1",
                                      "10.75",
                                      "10.750",
                                      "1.075e1",
                                      "1075E-2",
                                      "0.1",
                                      "0.30000000000000004",
                                      "100",
                                      "1e2",
                                      "1E+2",
                                      "0.0",
                                      "0e0",
                                      "0e-400",
                                      "5e-324",
                                      "1.7976931348623157e308",
                                      "9007199254740992",
                                      "9007199254740993e0" /* see below */,
                                      "123.456",
                                      "0.000123",
                                      "-2.5",
                                      "0.10000000000000000000000000000000000000000000000000"};
    static const char *const no[] = {"-0",
                                     "-0.0",
                                     "-0e5",
                                     "-1e-400",
                                     "1e-400",
                                     "4.9e-324",
                                     "0.30000000000000001",
                                     "9007199254740993",
                                     "123456789012345678",
                                     "1.0000000000000001",
                                     "0.1000000000000000000000000000000000000000000000000001",
                                     "2.2250738585072011e-308",
                                     "\"1\"",
                                     "true",
                                     "null",
                                     "[1]"};
    apr_size_t i;
    int ok = 1;

    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        /* 9007199254740993e0 is a double literal: its nearest double prints 9007199254740992 */
        int want = strcmp(yes[i], "9007199254740993e0") != 0;
        if (exact(p, yes[i]) != want) {
            ok = 0;
            fprintf(stderr, "round trip of %s: %d\n", yes[i], !want);
        }
    }
    for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        if (exact(p, no[i])) {
            ok = 0;
            fprintf(stderr, "round trip of %s accepted\n", no[i]);
        }
    }
    CHECK(ok);
}

/* json-c reads the integer -0 as 0: the parser puts the sign back, wherever it is. */
static void test_negative_zero(apr_pool_t *p)
{
    const char *why = NULL, *t = "{\"a\":-0,\"b\":[0,-0,{\"c\":-0}],\"d\":-0.0,\"e\":-10,\"f\":0}";
    json_object *o = bank_json_parse_object(p, t, strlen(t), &why), *v;

    CHECK(o != NULL);
    if (!o) {
        return;
    }
    v = json_object_object_get(o, "a");
    CHECK(json_object_is_type(v, json_type_double) && signbit(json_object_get_double(v)));
    v = json_object_object_get(o, "b");
    CHECK(json_object_is_type(json_object_array_get_idx(v, 0), json_type_int));
    CHECK(signbit(json_object_get_double(json_object_array_get_idx(v, 1))));
    CHECK(signbit(
        json_object_get_double(json_object_object_get(json_object_array_get_idx(v, 2), "c"))));
    CHECK(json_object_get_int64(json_object_object_get(o, "e")) == -10);
    CHECK(!signbit(json_object_get_double(json_object_object_get(o, "f"))));
    CHECK_STR(bank_json_text(p, o),
              "{\"a\":-0,\"b\":[0,-0,{\"c\":-0}],\"d\":-0.0,\"e\":-10,\"f\":0}");
    o = bank_json_parse(p, "-0", 2, &why);
    CHECK(o && signbit(json_object_get_double(o)));
    /* "-0" inside a string is text */
    o = bank_json_parse_object(p, "{\"s\":\"-0\",\"n\":-0}", 17, &why);
    CHECK(o && json_object_is_type(json_object_object_get(o, "s"), json_type_string) &&
          signbit(json_object_get_double(json_object_object_get(o, "n"))));
}

/* A parser kept in a pool gives every text the answer a new parser gives, after refusals that
 * left it mid-value, mid-escape (a pending high surrogate), too deep or not strict. It is kept
 * while json-c reads texts to their end (the same one from one to the next) and dropped when
 * json-c stops on one; a long text has a parser of its own and leaves the kept one as it was. */
static void test_kept_parser(apr_pool_t *p)
{
    apr_pool_t *keep;
    char *long_text = apr_palloc(p, BANK_JSON_KEEP_MAX + 32);
    const char *texts[] = {"{\"a\":1}",
                           "{\"z\":2}",
                           "{\"a\":",
                           "{\"b\":[1,2]}",
                           "{\"a\":1,}",
                           "{'a':1}",
                           NULL,
                           NULL,
                           "{\"a\":\"\x80\"}",
                           "{\"a\":1,\"a\":2}",
                           long_text,
                           "[1]",
                           "{\"c\":-0.0}",
                           "{\"d\":true}",
                           "{\"a\":\"\\ud800",
                           "{\"n\":\"Jos\\u00e9\"}",
                           "{\"a\":\"\\ud800\\u12G\"}",
                           "{\"n\":\"\\udc00\"}"};
    /* the kept parser after each text: k kept, d dropped, u unchanged (the lone surrogates never
     * reach json-c) */
    const char *after = "kkdkdddkukukkkukuu";
    void *kept = NULL, *now = NULL;
    int i, same = 1, reused = 0;

    texts[6] = nested(p, 17);
    texts[7] = nested(p, 16);
    memset(long_text, ' ', BANK_JSON_KEEP_MAX + 20);
    memcpy(long_text, "{\"long\":1}", 10);
    long_text[BANK_JSON_KEEP_MAX + 20] = '\0';
    apr_pool_create(&keep, p);
    for (i = 0; i < (int)(sizeof(texts) / sizeof(texts[0])); i++) {
        const char *why_in = NULL, *why_new = NULL;
        json_object *in = bank_json_parse_object_in(p, keep, texts[i], strlen(texts[i]), &why_in);
        json_object *fresh = bank_json_parse_object(p, texts[i], strlen(texts[i]), &why_new);

        same &= !in == !fresh && !why_in == !why_new && (!why_in || !strcmp(why_in, why_new)) &&
                (!in || !strcmp(bank_json_text(p, in), bank_json_text(p, fresh)));
        now = NULL;
        apr_pool_userdata_get(&now, "bank_json_tokener", keep);
        if (after[i] == 'u') { /* never reached json-c, or had a parser of its own */
            same &= now == kept;
        } else if (after[i] == 'k') { /* json-c read it to its end */
            same &= now != NULL;
            reused += kept && now == kept;
        } else { /* json-c stopped with an error or mid-value */
            same &= now == NULL;
        }
        kept = now;
    }
    CHECK(same);
    CHECK(reused >= 2);     /* "{\"z\":2}" after "{\"a\":1}", "{\"d\":true}" after "{\"c\":-0.0}" */
    apr_pool_destroy(keep); /* frees the parser (ASan: no leak) */
}

/* glibc's duplocale, counting the copies of the process's global locale (each takes glibc's
 * process-wide locale lock for writing). */
static int global_copies;

locale_t duplocale(locale_t l)
{
    static locale_t (*real)(locale_t);

    if (!real) {
        *(void **)&real = dlsym(RTLD_NEXT, "duplocale");
    }
    if (l == LC_GLOBAL_LOCALE) {
        global_copies++;
    }
    return real ? real(l) : (locale_t)0;
}

/* A parse from a thread in the global locale (as httpd's are) copies no global locale, reads
 * numbers in C, and leaves the thread in the locale it was in. */
static void test_locale(apr_pool_t *p)
{
    const char *why = NULL;
    json_object *o;
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);

    uselocale(LC_GLOBAL_LOCALE);
    global_copies = 0;
    o = bank_json_parse_object(p, "{\"n\": 1.5}", 10, &why);
    CHECK(o && !why && json_object_get_double(json_object_object_get(o, "n")) == 1.5);
    CHECK(global_copies == 0);
    CHECK(uselocale((locale_t)0) == LC_GLOBAL_LOCALE);
    /* the copy counted is the one a plain json-c parse makes */
    json_object_put(json_tokener_parse("[2.5]"));
    CHECK(global_copies > 0);
    /* a thread in a locale object of its own: back in it after a parse */
    if (c) {
        uselocale(c);
        CHECK(bank_json_parse(p, "[1]", 3, &why) != NULL);
        CHECK(uselocale((locale_t)0) == c);
        uselocale(LC_GLOBAL_LOCALE);
        freelocale(c);
    }
}

static void run_tests(apr_pool_t *p)
{
    test_locale(p);
    test_kept_parser(p);
    test_duplicates(p);
    test_round_trip(p);
    test_negative_zero(p);
    test_any_value(p);
    const char *why = NULL;
    json_object *o;
    char *n16 = nested(p, 16), *n17 = nested(p, 17);

    CHECK(OK_JSON(p, "{}"));
    CHECK(OK_JSON(p, " {\"a\": [1, 2.5, \"x\", null, true]} \r\n"));
    CHECK(OK_JSON(p, "{\"name\":\"Ad\xc3\xa1 \xe2\x82\xac \xf0\x9f\x98\x80\"}"));
    CHECK(parses(p, n16, strlen(n16)));  /* 16 levels are allowed */
    CHECK(!parses(p, n17, strlen(n17))); /* 17 are not */

    /* not JSON, or not an object */
    CHECK(!OK_JSON(p, ""));
    CHECK(!OK_JSON(p, "garbage"));
    CHECK(!OK_JSON(p, "[1,2]"));
    CHECK(!OK_JSON(p, "\"text\""));
    CHECK(!OK_JSON(p, "{\"a\":1} trailing"));
    CHECK(!OK_JSON(p, "{\"a\":1}{\"b\":2}"));
    CHECK(!OK_JSON(p, "{'a':1}"));
    CHECK(!OK_JSON(p, "{\"a\":1,}"));
    CHECK(!OK_JSON(p, "{\"a\":"));

    /* invalid UTF-8: stray continuation, overlong, surrogate, beyond U+10FFFF, truncated */
    CHECK(!OK_JSON(p, "{\"a\":\"\x80\"}"));
    CHECK(!OK_JSON(p, "{\"a\":\"\xc0\xaf\"}"));
    CHECK(!OK_JSON(p, "{\"a\":\"\xe0\x80\xaf\"}"));
    CHECK(!OK_JSON(p, "{\"a\":\"\xed\xa0\x80\"}"));
    CHECK(!OK_JSON(p, "{\"a\":\"\xf4\x90\x80\x80\"}"));
    CHECK(!OK_JSON(p, "{\"a\":\"\xff\"}"));
    CHECK(!OK_JSON(p, "{\"a\":\"\xe2\x82\"}"));

    /* control bytes inside strings, NULs raw or escaped */
    CHECK(!OK_JSON(p, "{\"a\":\"x\x01y\"}"));
    CHECK(!OK_JSON(p, "{\"a\":\"x\ty\"}"));
    CHECK(!parses(p, "{\"a\":\"x\0y\"}", 11));
    CHECK(!OK_JSON(p, "{\"a\\u0000b\":1}"));
    CHECK(!OK_JSON(p, "{\"a\":\"\\u0000\"}"));
    CHECK(OK_JSON(p, "{\"a\":\"tab\\tnew\\nline\"}"));

    /* An escaped backslash followed by the text u0000 is no NUL: runs of backslashes pair
     * up, and only an odd run escapes the u. */
    CHECK(OK_JSON(p, "{\"a\":\"a\\\\u0000b\"}"));
    CHECK(OK_JSON(p, "{\"a\\\\u0000b\":1}"));
    CHECK(OK_JSON(p, "{\"a\":\"\\\\\\\\u0000\"}"));    /* 4 backslashes */
    CHECK(!OK_JSON(p, "{\"a\":\"\\\\\\u0000\"}"));     /* 3 */
    CHECK(!OK_JSON(p, "{\"a\":\"\\\\\\\\\\u0000\"}")); /* 5 */
    CHECK(!OK_JSON(p, "{\"a\":\"\\\"\\u0000\"}"));     /* \" then \u0000 */
    CHECK(!OK_JSON(p, "{\"a\":\"\\u00001\",\"b\":\"u0000\"}"));
    CHECK(OK_JSON(p, "{\"a\":\"\\u0001\",\"b\":\"u0000\"}"));
    o = bank_json_parse_object(p, "{\"a\":\"a\\\\u0000b\"}", 17, &why);
    CHECK(o && !why);
    CHECK_STR(json_object_get_string(json_object_object_get(o, "a")), "a\\u0000b");
    why = NULL;
    CHECK(!bank_json_parse_object(p, "{\"a\":\"\\u0000\"}", 14, &why));
    CHECK(why && strstr(why, "NUL"));

    /* numbers JSON cannot carry */
    CHECK(!OK_JSON(p, "{\"a\":NaN}"));
    CHECK(!OK_JSON(p, "{\"a\":Infinity}"));
    CHECK(!OK_JSON(p, "{\"a\":-Infinity}"));
    CHECK(!OK_JSON(p, "{\"a\":[1e400]}"));
    CHECK(OK_JSON(p, "{\"a\":1e300}"));

    /* a request body that is not an object keeps its reason */
    why = NULL;
    o = bank_json_parse_object(p, "12", 2, &why);
    CHECK(o == NULL && why && strstr(why, "not valid JSON"));
    why = NULL;
    o = bank_json_parse_object(p, "\"x\"", 3, &why);
    CHECK(o == NULL && why && strstr(why, "object"));

    /* the reason is a sentence for the client */
    o = bank_json_parse_object(p, "[]", 2, &why);
    CHECK(o == NULL && why && strstr(why, "object"));
    why = NULL;
    o = bank_json_parse_object(p, n17, strlen(n17), &why);
    CHECK(o == NULL && why && strstr(why, "nested"));

    /* rendering: compact, slashes not escaped, null for NULL strings */
    o = bank_json_own(p, json_object_new_object());
    json_object_object_add(o, "url", json_object_new_string("a/b"));
    json_object_object_add(o, "none", bank_json_str(NULL));
    CHECK_STR(bank_json_text(p, o), "{\"url\":\"a/b\",\"none\":null}");
}
