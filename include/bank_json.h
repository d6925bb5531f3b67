/* JSON with json-c, owned by APR pools: a pool cleanup drops the reference, so no handler
 * frees a JSON object itself. */
#ifndef BANK_JSON_H
#define BANK_JSON_H

#include <stddef.h>
#include <apr_pools.h>
#include <json-c/json.h>

/* Objects nested deeper than this are refused (docs/api.md: 400 E_INVALID_JSON). */
#define BANK_JSON_MAX_DEPTH 16

/* Ties o's lifetime to p; returns o. */
json_object *bank_json_own(apr_pool_t *p, json_object *o);
/* Parses buf[0..len) as one JSON value of any type: strict (no single quotes, control
 * bytes or trailing commas), RFC 3629 UTF-8, no \u0000, at most BANK_JSON_MAX_DEPTH levels,
 * finite numbers, nothing but white space after it. Returns the value, owned by p (take a
 * reference with json_object_get to add it to another object), or NULL: with *why (a
 * sentence for the client) if the text is refused, with *why NULL for JSON null. */
json_object *bank_json_parse(apr_pool_t *p, const char *buf, apr_size_t len, const char **why);
/* The same, for a request body: the value must be an object (NULL and *why otherwise). */
json_object *bank_json_parse_object(apr_pool_t *p, const char *buf, apr_size_t len,
                                    const char **why);
/* The same with the parser kept in keep, a pool that one thread uses at a time (a connection's):
 * its next parse reuses it rather than allocating another (allocating json-c's parser was a large
 * share of a payment notice's parse). A parser json-c stopped on (an error, a text that ended
 * mid-value) is dropped, not kept: its reset leaves state that would change how the next text
 * reads. A text longer than BANK_JSON_KEEP_MAX is parsed with a parser of its own, so that what
 * keep holds stays small. */
#define BANK_JSON_KEEP_MAX 4096
json_object *bank_json_parse_object_in(apr_pool_t *p, apr_pool_t *keep, const char *buf,
                                       apr_size_t len, const char **why);
/* 1 if o is, or holds, an integer at an end of json-c's range (-9223372036854775808 or
 * 18446744073709551615): json-c gives those for any integer literal beyond 64 bits. */
int bank_json_int_saturated(json_object *o);
/* 1 if o is a JSON number that round-trips: the double nearest to the text, written with the
 * fewest significant digits that read back as that double (as JavaScript's String(n) and
 * Python's repr write it), has the same decimal value as the text (notation aside: 10.750,
 * 1.075e1 and 10.75 are one value). 0 for anything else, and for negative zero (-0, -0.0,
 * and what underflows to it, such as -1e-400), a value that underflows to 0 (1e-400), one
 * with more digits than a double keeps (0.30000000000000001, 9007199254740993). The parser
 * keeps -0's sign (json-c alone reads it as the integer 0). */
int bank_json_number_exact(json_object *o);
/* Compact JSON text, allocated in p. */
const char *bank_json_text(apr_pool_t *p, json_object *o);
/* A JSON string, or JSON null for NULL (json_object_new_string(NULL) would crash). */
json_object *bank_json_str(const char *s);
/* bank_time_api as JSON: a timestamp in the API's form (2026-11-22T07:40:22.123Z), as
 * stored if it cannot be read, null for NULL. */
json_object *bank_json_time(apr_pool_t *p, const char *db_text);

/* Members copied from a struct into an object, one table per shape (the customer, the
 * account, a stored notice): each a text (null for NULL), a stored timestamp in the API's
 * form (bank_json_time) or an int as a boolean. */
typedef enum { BANK_JSON_TEXT, BANK_JSON_TIME, BANK_JSON_BOOL } bank_json_kind;
typedef struct {
    const char *name;
    bank_json_kind kind;
    apr_size_t offset;
} bank_json_field_t;
#define BANK_JSON_FIELD(name, kind, type, field)                                                   \
    {                                                                                              \
        name, BANK_JSON_##kind, offsetof(type, field)                                              \
    }
/* Adds the n fields of src to o, in the table's order. */
void bank_json_add_fields(apr_pool_t *p, json_object *o, const void *src,
                          const bank_json_field_t *fields, apr_size_t n);
#define BANK_JSON_NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

#endif
