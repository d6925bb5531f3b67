/* The strict JSON parser (mod_bank/bank_json.c) on arbitrary bytes, not NUL-terminated: what it
 * accepts prints back as text it accepts again, unchanged; the object form accepts a subset. */
#include "fuzz.h"

#include "bank_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    }
    apr_pool_destroy(p);
    return 0;
}
