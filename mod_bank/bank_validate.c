/* Field validators shared by every endpoint. */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include "bank_validate.h"
#include "bank_encoding.h"
#include "bank_time.h"

apr_array_header_t *bank_errors_new(apr_pool_t *p)
{
    return apr_array_make(p, 4, sizeof(bank_field_error_t));
}

void bank_errors_add(apr_array_header_t *errs, const char *field, const char *rule,
                     const char *message)
{
    bank_field_error_t *e = apr_array_push(errs);
    e->field = field;
    e->rule = rule;
    e->message = message;
}

apr_size_t bank_utf8_length(const char *s)
{
    apr_size_t n = 0;
    for (; *s; s++) {
        if (((unsigned char)*s & 0xC0) != 0x80) {
            n++;
        }
    }
    return n;
}

const char *bank_v_string(apr_array_header_t *errs, json_object *body, const char *field,
                          apr_size_t min, apr_size_t max)
{
    return bank_v_string_at(errs, body, field, field, min, max);
}

const char *bank_v_string_at(apr_array_header_t *errs, json_object *obj, const char *key,
                             const char *field, apr_size_t min, apr_size_t max)
{
    apr_pool_t *p = errs->pool;
    json_object *v = NULL;
    const char *s;
    apr_size_t n;

    if (!json_object_object_get_ex(obj, key, &v) || v == NULL) {
        bank_errors_add(errs, field, "required",
                        apr_psprintf(p, "The %s field must be defined", field));
        return NULL;
    }
    if (!json_object_is_type(v, json_type_string)) {
        bank_errors_add(errs, field, "string",
                        apr_psprintf(p, "The %s field must be a string", field));
        return NULL;
    }
    s = json_object_get_string(v);
    /* A NUL inside the JSON string would silently cut the value: refuse it. */
    if ((apr_size_t)json_object_get_string_len(v) != strlen(s)) {
        bank_errors_add(errs, field, "string",
                        apr_psprintf(p, "The %s field must not contain NUL characters", field));
        return NULL;
    }
    n = bank_utf8_length(s);
    if (n < min) {
        bank_errors_add(
            errs, field, min == 1 ? "required" : "minLength",
            min == 1
                ? apr_psprintf(p, "The %s field must be defined", field)
                : apr_psprintf(p, "The %s field must have at least %" APR_SIZE_T_FMT " characters",
                               field, min));
        return NULL;
    }
    if (n > max) {
        bank_errors_add(
            errs, field, "maxLength",
            apr_psprintf(p, "The %s field must not be greater than %" APR_SIZE_T_FMT " characters",
                         field, max));
        return NULL;
    }
    return apr_pstrdup(p, s);
}

int bank_email_plausible(const char *s)
{
    const char *at = strchr(s, '@'), *dot, *c;

    if (!at || at == s || strchr(at + 1, '@')) {
        return 0;
    }
    for (c = s; *c; c++) {
        if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '"' || *c == '(' || *c == ')' ||
            *c == ',' || *c == ';' || *c == ':' || *c == '<' || *c == '>' || *c == '[' ||
            *c == ']' || *c == '\\') {
            return 0;
        }
    }
    if (at - s > 64 || s[0] == '.' || at[-1] == '.' || strstr(s, "..")) {
        return 0;
    }
    /* domain: labels separated by dots, at least one dot, no empty label, TLD of 2+ letters */
    dot = strrchr(at + 1, '.');
    if (!dot || at[1] == '.' || strlen(dot + 1) < 2 || at[1] == '-' || strstr(at + 1, ".-") ||
        strstr(at + 1, "-.")) {
        return 0;
    }
    for (c = at + 1; *c; c++) {
        if (!apr_isalnum(*c) && *c != '-' && *c != '.' && !((unsigned char)*c & 0x80)) {
            return 0;
        }
    }
    return 1;
}

int bank_bvn_valid(const char *s)
{
    int i;
    for (i = 0; i < 11; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return 0;
        }
    }
    return s[11] == '\0';
}

int bank_date_check(const char *s, apr_time_t now)
{
    apr_time_exp_t today;
    int i, y, m, d;

    for (i = 0; i < 10; i++) {
        int want_dash = (i == 4 || i == 7);
        if (want_dash ? s[i] != '-' : (s[i] < '0' || s[i] > '9')) {
            return BANK_DATE_FORMAT;
        }
    }
    if (s[10] != '\0') {
        return BANK_DATE_FORMAT;
    }
    y = atoi(s);
    m = atoi(s + 5);
    d = atoi(s + 8);
    if (y < 1 || d < 1 || d > bank_days_in_month(y, m)) {
        return BANK_DATE_UNREAL;
    }
    apr_time_exp_gmt(&today, now);
    if (y > today.tm_year + 1900 ||
        (y == today.tm_year + 1900 &&
         (m > today.tm_mon + 1 || (m == today.tm_mon + 1 && d > today.tm_mday)))) {
        return BANK_DATE_FUTURE;
    }
    return BANK_DATE_OK;
}
