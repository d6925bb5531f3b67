/* JSON with json-c, owned by APR pools: a pool cleanup drops the reference, so no handler
 * frees a JSON object itself. */
#ifndef BANK_JSON_H
#define BANK_JSON_H

#include <apr_pools.h>
#include <json-c/json.h>

/* Objects nested deeper than this are refused (CONTRACT C3: 400 E_INVALID_JSON). */
#define BANK_JSON_MAX_DEPTH 16

/* Ties o's lifetime to p; returns o. */
json_object *bank_json_own(apr_pool_t *p, json_object *o);
/* Parses buf[0..len) as one JSON object (strict, UTF-8 validated, depth-limited, nothing
 * but white space after it). Returns the object, owned by p, or NULL and *why (a sentence
 * for the client). */
json_object *bank_json_parse_object(apr_pool_t *p, const char *buf, apr_size_t len,
                                    const char **why);
/* Compact JSON text, allocated in p. */
const char *bank_json_text(apr_pool_t *p, json_object *o);
/* A JSON string, or JSON null for NULL (json_object_new_string(NULL) would crash). */
json_object *bank_json_str(const char *s);
/* A timestamp as either database returns it, in the API's form (2026-11-22T07:40:22.123Z);
 * as stored if it cannot be read, null for NULL. */
json_object *bank_json_time(apr_pool_t *p, const char *db_text);

#endif
