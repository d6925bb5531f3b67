/* The strict JSON parser (mod_bank/bank_json.c) on arbitrary bytes, not NUL-terminated: what it
 * accepts prints back as text it accepts again, unchanged; the object form accepts a subset;
 * an accepted object with its first member written twice (once with the name's first
 * character as a \u escape) is refused as a duplicate; the round-trip test of numbers
 * (bank_json_number_exact) holds no negative zero and runs on every number. */
#include "fuzz.h"

#include <math.h>

#include "bank_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void numbers(json_object *o)
{
    if (json_object_is_type(o, json_type_int) || json_object_is_type(o, json_type_double)) {
        if (bank_json_number_exact(o)) {
            FUZZ_CHECK(!(json_object_get_double(o) == 0 && signbit(json_object_get_double(o))));
        }
    } else if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, k, v)
        {
            (void)k;
            if (v) {
                numbers(v);
            }
        }
    } else if (json_object_is_type(o, json_type_array)) {
        size_t i;
        for (i = 0; i < json_object_array_length(o); i++) {
            json_object *v = json_object_array_get_idx(o, i);
            if (v) {
                numbers(v);
            }
        }
    }
}

/* text (o printed) with o's first member written again in front, its name's first character
 * (if ASCII and printable) as \u00XX when escape is set. */
static void twice(apr_pool_t *p, json_object *o, const char *text, int escape)
{
    struct json_object_iterator it = json_object_iter_begin(o);
    const char *name = json_object_iter_peek_name(&it), *why = NULL, *key, *dup;
    json_object *val = json_object_iter_peek_value(&it);

    key = bank_json_text(p, bank_json_own(p, json_object_new_string(name)));
    if (escape && name[0] > 0x20 && name[0] < 0x7f && name[0] != '"' && name[0] != '\\') {
        key = apr_psprintf(p, "\"\\u%04x%s", (unsigned)name[0], key + 2);
    }
    dup = apr_pstrcat(p, "{", key, ":", val ? bank_json_text(p, val) : "null", ",", text + 1,
                      (char *)NULL);
    FUZZ_CHECK(bank_json_parse_object(p, dup, strlen(dup), &why) == NULL);
    FUZZ_CHECK(why && strstr(why, "same member name"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    const char *buf = (const char *)data, *why = NULL, *why_obj = NULL, *text, *again;
    json_object *o, *obj, *o2;

    o = bank_json_parse(p, buf, size, &why);
    obj = bank_json_parse_object(p, buf, size, &why_obj);
    /* NULL is either a refusal with its reason or JSON null without one. */
    FUZZ_CHECK(o == NULL || why == NULL);
    FUZZ_CHECK(obj ? why_obj == NULL : why_obj != NULL);
    if (obj) {
        FUZZ_CHECK(o && json_object_is_type(o, json_type_object));
    }
    if (o) {
        text = bank_json_text(p, o);
        FUZZ_CHECK(text != NULL);
        o2 = bank_json_parse(p, text, strlen(text), &why);
        FUZZ_CHECK(o2 != NULL);
        again = bank_json_text(p, o2);
        FUZZ_CHECK(strcmp(text, again) == 0);
        numbers(o);
        if (json_object_is_type(o, json_type_object) && json_object_object_length(o) > 0) {
            twice(p, o, text, 0);
            twice(p, o, text, 1);
        }
    }
    apr_pool_destroy(p);
    return 0;
}
