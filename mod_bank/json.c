/* JSON parsing and ownership over json-c, for request bodies and answers. */
#include <apr_strings.h>
#include "bank_json.h"

static apr_status_t put_json(void *o)
{
    json_object_put(o);
    return APR_SUCCESS;
}

static apr_status_t free_tokener(void *tok)
{
    json_tokener_free(tok);
    return APR_SUCCESS;
}

json_object *bank_json_own(apr_pool_t *p, json_object *o)
{
    if (o) {
        apr_pool_cleanup_register(p, o, put_json, apr_pool_cleanup_null);
    }
    return o;
}

json_object *bank_json_parse_object(apr_pool_t *p, const char *buf, apr_size_t len,
                                    const char **why)
{
    json_tokener *tok;
    json_object *o;
    enum json_tokener_error err;
    apr_size_t off;

    /* json-c counts the top level as depth 1; one more lets 16 nested levels through. */
    tok = json_tokener_new_ex(BANK_JSON_MAX_DEPTH + 1);
    if (!tok) {
        *why = "The request body could not be parsed.";
        return NULL;
    }
    apr_pool_cleanup_register(p, tok, free_tokener, apr_pool_cleanup_null);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    o = bank_json_own(p, json_tokener_parse_ex(tok, buf, (int)len));
    err = json_tokener_get_error(tok);
    if (err == json_tokener_error_depth) {
        *why = "The request body is nested too deeply.";
        return NULL;
    }
    if (!o || err != json_tokener_success) {
        *why = "The request body is not valid JSON.";
        return NULL;
    }
    for (off = json_tokener_get_parse_end(tok); off < len; off++) {
        if (buf[off] != ' ' && buf[off] != '\t' && buf[off] != '\r' && buf[off] != '\n') {
            *why = "The request body is not valid JSON.";
            return NULL;
        }
    }
    if (!json_object_is_type(o, json_type_object)) {
        *why = "The request body must be a JSON object.";
        return NULL;
    }
    return o;
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
