/* Field validation of request bodies. Each failed rule adds one entry to an error list that
 * becomes the `errors` array of a 422 answer; messages follow AdonisJS (VineJS) wording,
 * which the existing clients already show. */
#ifndef BANK_VALIDATE_H
#define BANK_VALIDATE_H

#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_time.h>
#include <json-c/json.h>

typedef struct {
    const char *field;
    const char *rule;
    const char *message;
} bank_field_error_t;

apr_array_header_t *bank_errors_new(apr_pool_t *p);
void bank_errors_add(apr_array_header_t *errs, const char *field, const char *rule,
                     const char *message);

/* Characters (UTF-8 code points) in s, as every length rule here and in bankctl counts
 * them: bytes other than continuation bytes (s is taken to be valid UTF-8). */
apr_size_t bank_utf8_length(const char *s);

/* A required JSON string of min..max characters (UTF-8 code points). Returns it, or NULL
 * after adding the failed rule (required, string, minLength or maxLength). */
const char *bank_v_string(apr_array_header_t *errs, json_object *body, const char *field,
                          apr_size_t min, apr_size_t max);
/* The same for member key of a nested object obj, reported under the dotted path field
 * ("data.currency"). */
const char *bank_v_string_at(apr_array_header_t *errs, json_object *obj, const char *key,
                             const char *field, apr_size_t min, apr_size_t max);

/* 1 if s looks like an e-mail address (local@domain.tld, no spaces or control bytes). */
int bank_email_plausible(const char *s);
/* 1 if s is exactly 11 ASCII digits. */
int bank_bvn_valid(const char *s);

#define BANK_DATE_OK 0
#define BANK_DATE_FORMAT (-1) /* not YYYY-MM-DD */
#define BANK_DATE_UNREAL (-2) /* e.g. 2023-02-30 */
#define BANK_DATE_FUTURE (-3) /* after today (UTC) */
/* Checks a date of birth against the calendar and today's date at `now`. */
int bank_date_check(const char *s, apr_time_t now);

#endif
