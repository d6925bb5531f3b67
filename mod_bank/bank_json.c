/* JSON parsing and ownership over json-c, for request bodies and answers. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <apr_strings.h>
#include "bank_json.h"
#include "bank_time.h"

static apr_status_t put_json(void *o)
{
    json_object_put(o);
    return APR_SUCCESS;
}

#define NOT_UTF8_JSON "The request body is not valid UTF-8 JSON text."

/* RFC 3629 UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), no control
 * bytes inside strings, only JSON's white space between tokens, and no single-quoted
 * strings: json-c's strict mode lets each of these through. Nor an escaped NUL (\u0000),
 * which would cut a key or a value short in C; found by the escape state, so an escaped
 * backslash followed by the text u0000 ("\\u0000") is the legal string it is.
 * NULL if the text passes, else why not. */
static const char *text_problem(const unsigned char *s, apr_size_t len)
{
    apr_size_t i = 0;
    int in_string = 0, escaped = 0;

    while (i < len) {
        unsigned char c = s[i];
        apr_size_t n, k;
        unsigned long cp, min;

        if (c < 0x80) {
            if (in_string) {
                if (c < 0x20) {
                    return NOT_UTF8_JSON;
                }
                if (escaped) {
                    escaped = 0;
                    if (c == 'u' && len - i > 4 && !memcmp(s + i + 1, "0000", 4)) {
                        return "The request body must not contain NUL characters.";
                    }
                } else if (c == '\\') {
                    escaped = 1;
                } else if (c == '"') {
                    in_string = 0;
                }
            } else if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == '\'') {
                return NOT_UTF8_JSON;
            } else if (c == '"') {
                in_string = 1;
            }
            i++;
            continue;
        }
        if (!in_string) {
            return NOT_UTF8_JSON; /* non-ASCII bytes only inside strings */
        }
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1, cp = c & 0x1F, min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2, cp = c & 0x0F, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return NOT_UTF8_JSON;
        }
        if (len - i <= n) {
            return NOT_UTF8_JSON;
        }
        for (k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return NOT_UTF8_JSON;
            }
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return NOT_UTF8_JSON;
        }
        i += n + 1;
    }
    return NULL;
}

/* 1 if pred holds for o or for any value inside it. */
static int any_value(json_object *o, int (*pred)(json_object *))
{
    if (pred(o)) {
        return 1;
    }
    switch (json_object_get_type(o)) {
    case json_type_object: {
        json_object_object_foreach(o, key, val)
        {
            (void)key;
            if (val && any_value(val, pred)) {
                return 1;
            }
        }
        return 0;
    }
    case json_type_array: {
        size_t i, n = json_object_array_length(o);
        for (i = 0; i < n; i++) {
            json_object *v = json_object_array_get_idx(o, i);
            if (v && any_value(v, pred)) {
                return 1;
            }
        }
        return 0;
    }
    default:
        return 0;
    }
}

/* NaN, Infinity and numbers beyond a double's range parse in json-c, but are not JSON. */
static int not_finite(json_object *o)
{
    return json_object_is_type(o, json_type_double) && !isfinite(json_object_get_double(o));
}

/* json-c stores an integer literal beyond 64 bits as the nearest end of its range, so
 * 1e30 written out in digits reads back as 18446744073709551615: a value at either end
 * cannot be told from one beyond it. */
static int int_saturated(json_object *o)
{
    return json_object_is_type(o, json_type_int) &&
           (json_object_get_uint64(o) == UINT64_MAX || json_object_get_int64(o) == INT64_MIN);
}

int bank_json_int_saturated(json_object *o)
{
    return o && any_value(o, int_saturated);
}

json_object *bank_json_own(apr_pool_t *p, json_object *o)
{
    if (o) {
        apr_pool_cleanup_register(p, o, put_json, apr_pool_cleanup_null);
    }
    return o;
}

/* The text is refused if *why is set; JSON null is NULL with *why left NULL. The object test
 * comes before the number test so bank_json_parse_object keeps its messages' order. */
static json_object *parse(apr_pool_t *p, const char *buf, apr_size_t len, int want_object,
                          const char **why)
{
    json_tokener *tok;
    json_object *o;
    enum json_tokener_error err;
    apr_size_t off;

    *why = NULL;
    if ((*why = text_problem((const unsigned char *)buf, len)) != NULL) {
        return NULL;
    }

    /* json-c counts the top level as depth 1; one more lets 16 nested levels through. */
    tok = json_tokener_new_ex(BANK_JSON_MAX_DEPTH + 1);
    if (!tok) {
        *why = "The request body could not be parsed.";
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, buf, (int)len);
    err = json_tokener_get_error(tok);
    off = json_tokener_get_parse_end(tok);
    if (err == json_tokener_continue && !want_object) {
        /* All of buf was read and the value may be complete: a top-level number or literal
         * ends only where json-c sees the end of the text, which it knows by a NUL. (An
         * object ends at its brace; a request body that does not is "not valid JSON".) */
        o = json_tokener_parse_ex(tok, "", 1);
        err = json_tokener_get_error(tok);
        off = len;
    }
    /* Freed now rather than with p: bankctl parses thousands of values into one pool. */
    json_tokener_free(tok);
    o = bank_json_own(p, o);
    if (err == json_tokener_error_depth) {
        *why = "The request body is nested too deeply.";
        return NULL;
    }
    if (err != json_tokener_success || (want_object && !o)) {
        *why = "The request body is not valid JSON.";
        return NULL;
    }
    for (; off < len; off++) {
        if (buf[off] != ' ' && buf[off] != '\t' && buf[off] != '\r' && buf[off] != '\n') {
            *why = "The request body is not valid JSON.";
            return NULL;
        }
    }
    if (want_object && !json_object_is_type(o, json_type_object)) {
        *why = "The request body must be a JSON object.";
        return NULL;
    }
    if (o && any_value(o, not_finite)) {
        *why = "The request body holds a number JSON cannot represent.";
        return NULL;
    }
    return o;
}

json_object *bank_json_parse(apr_pool_t *p, const char *buf, apr_size_t len, const char **why)
{
    return parse(p, buf, len, 0, why);
}

json_object *bank_json_parse_object(apr_pool_t *p, const char *buf, apr_size_t len,
                                    const char **why)
{
    return parse(p, buf, len, 1, why);
}

const char *bank_json_text(apr_pool_t *p, json_object *o)
{
    return apr_pstrdup(p, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE));
}

json_object *bank_json_str(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

json_object *bank_json_time(apr_pool_t *p, const char *db_text)
{
    return bank_json_str(bank_time_api(p, db_text));
}

void bank_json_add_fields(apr_pool_t *p, json_object *o, const void *src,
                          const bank_json_field_t *fields, apr_size_t n)
{
    apr_size_t i;

    for (i = 0; i < n; i++) {
        const char *at = (const char *)src + fields[i].offset;
        json_object *v;
        switch (fields[i].kind) {
        case BANK_JSON_BOOL:
            v = json_object_new_boolean(*(const int *)at);
            break;
        case BANK_JSON_TIME:
            v = bank_json_time(p, *(const char *const *)at);
            break;
        default:
            v = bank_json_str(*(const char *const *)at);
            break;
        }
        json_object_object_add(o, fields[i].name, v);
    }
}
