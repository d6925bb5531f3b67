/* A payment notice as one line of an archive (bank_notice_line.h). */
#include <string.h>
#include <apr_strings.h>
#include "bank_json.h"
#include "bank_notice_line.h"
#include "bank_time.h"

const char *bank_notice_line(apr_pool_t *p, const bank_notice_record_t *r)
{
    json_object *o = bank_json_own(p, json_object_new_object());
    int i;

    for (i = 0; i < BANK_NOTICE_COLUMNS; i++) {
        const char *v = r->v[i];
        if (v && i == BANK_NOTICE_RECEIVED_AT) {
            v = bank_time_api(p, v);
        }
        json_object_object_add(o, bank_notice_column_names[i], bank_json_str(v));
    }
    return apr_pstrcat(p, bank_json_text(p, o), "\n", (char *)NULL);
}

/* 1 for an optional minus and 1 to 19 digits. */
static int whole_number(const char *s)
{
    apr_size_t n;

    s += *s == '-';
    n = strspn(s, "0123456789");
    return n > 0 && n <= 19 && s[n] == '\0';
}

const char *bank_notice_unline(apr_pool_t *p, const char *line, apr_size_t len,
                               bank_notice_record_t *r)
{
    const char *why = NULL;
    json_object *o = bank_json_parse(p, line, len, &why), *v;
    apr_time_t t;
    int i;

    if (!o || !json_object_is_type(o, json_type_object)) {
        return "not a JSON object";
    }
    if (json_object_object_length(o) != BANK_NOTICE_COLUMNS) {
        return "not a notice's columns";
    }
    for (i = 0; i < BANK_NOTICE_COLUMNS; i++) {
        if (!json_object_object_get_ex(o, bank_notice_column_names[i], &v)) {
            return apr_psprintf(p, "no %s", bank_notice_column_names[i]);
        }
        if (v && !json_object_is_type(v, json_type_string)) {
            return apr_psprintf(p, "%s is not a string", bank_notice_column_names[i]);
        }
        r->v[i] = v ? json_object_get_string(v) : NULL;
    }
    if (!r->v[BANK_NOTICE_ID] || !r->v[BANK_NOTICE_PARTNER] || !r->v[BANK_NOTICE_REFERENCE] ||
        !r->v[BANK_NOTICE_STATUS_CODE]) {
        return "a key column is null";
    }
    if (!r->v[BANK_NOTICE_RECEIVED_AT] || bank_time_parse(r->v[BANK_NOTICE_RECEIVED_AT], &t)) {
        return "received_at is not a time";
    }
    r->v[BANK_NOTICE_RECEIVED_AT] = bank_time_iso(p, t);
    if (r->v[BANK_NOTICE_AMOUNT] && !whole_number(r->v[BANK_NOTICE_AMOUNT])) {
        return "amount is not a whole number";
    }
    return NULL;
}
