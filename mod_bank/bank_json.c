/* JSON parsing and ownership over json-c, for request bodies and answers. */
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <apr_tables.h>
#include "bank_json.h"
#include "bank_encoding.h"
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
 * Counts, in *sc, the colons outside strings (in text json-c accepts, one per object member)
 * and the number literals, noting which are -0.
 * NULL if the text passes, else why not. */
typedef struct {
    apr_size_t members;            /* colons outside strings */
    apr_size_t numbers;            /* number literals */
    apr_array_header_t *neg_zeros; /* the ordinals (apr_size_t) of the literals -0 */
    apr_pool_t *pool;
} scan_t;

/* A number literal starts at c (outside strings) unless c continues one. */
static void scan_number(scan_t *sc, const unsigned char *s, apr_size_t i, apr_size_t len,
                        int *in_number)
{
    int c = s[i],
        part = (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';

    if (part && !*in_number && c != '+' && c != '.' && c != 'e' && c != 'E') {
        /* json-c reads the integer -0 as 0: its sign is noted here, put back after parsing */
        if (c == '-' && len - i > 1 && s[i + 1] == '0' &&
            (len - i == 2 || !strchr("0123456789.eE", s[i + 2]))) {
            if (!sc->neg_zeros) {
                sc->neg_zeros = apr_array_make(sc->pool, 1, sizeof(apr_size_t));
            }
            APR_ARRAY_PUSH(sc->neg_zeros, apr_size_t) = sc->numbers;
        }
        sc->numbers++;
    }
    *in_number = part;
}

/* The value of 4 hex digits at s, or -1. */
static long hex4(const unsigned char *s)
{
    long v = 0;
    int k, d;

    for (k = 0; k < 4 && (d = bank_hex_digit(s[k])) >= 0; k++) {
        v = v * 16 + d;
    }
    return k == 4 ? v : -1;
}

/* A \u escape at s[i] ('u'): why it is a lone UTF-16 surrogate (json-c would store U+FFFD for
 * it, and two texts differing only there would read alike), or NULL. A high surrogate must
 * be followed at once by a \u escape of a low one (*low_due: that low one comes next). */
static const char *surrogate_problem(const unsigned char *s, apr_size_t i, apr_size_t len,
                                     int *low_due)
{
    static const char lone[] = "The request body must not contain a lone UTF-16 surrogate escape.";
    long v = len - i > 4 ? hex4(s + i + 1) : -1, w;

    if (v >= 0xDC00 && v <= 0xDFFF) { /* a low half: only right after its high half */
        return *low_due ? (*low_due = 0, (const char *)NULL) : lone;
    }
    if (v < 0xD800 || v > 0xDBFF) {
        return NULL;
    }
    w = len - i > 10 && s[i + 5] == '\\' && s[i + 6] == 'u' ? hex4(s + i + 7) : -1;
    *low_due = w >= 0xDC00 && w <= 0xDFFF;
    return *low_due ? NULL : lone;
}

static const char *text_problem(const unsigned char *s, apr_size_t len, scan_t *sc)
{
    apr_size_t i = 0;
    int in_string = 0, escaped = 0, in_number = 0, low_due = 0;
    const char *why;

    while (i < len) {
        unsigned char c = s[i];
        apr_size_t n;

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
                    if (c == 'u' && (why = surrogate_problem(s, i, len, &low_due)) != NULL) {
                        return why;
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
            } else if (c == ':') {
                sc->members++; /* in JSON text, one name-value separator per member */
            }
            if (!in_string) {
                scan_number(sc, s, i, len, &in_number);
            }
            i++;
            continue;
        }
        if (!in_string) {
            return NOT_UTF8_JSON; /* non-ASCII bytes only inside strings */
        }
        if ((n = bank_utf8_sequence(s + i, len - i)) == 0) {
            return NOT_UTF8_JSON;
        }
        i += n;
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

/* Members of every object in o, at every depth. */
static apr_size_t count_members(json_object *o)
{
    apr_size_t n = 0;

    switch (json_object_get_type(o)) {
    case json_type_object: {
        json_object_object_foreach(o, key, val)
        {
            (void)key;
            n += 1 + (val ? count_members(val) : 0);
        }
        return n;
    }
    case json_type_array: {
        size_t i, len = json_object_array_length(o);
        for (i = 0; i < len; i++) {
            json_object *v = json_object_array_get_idx(o, i);
            n += v ? count_members(v) : 0;
        }
        return n;
    }
    default:
        return 0;
    }
}

typedef struct {
    const apr_array_header_t *at; /* ordinals, ascending */
    int next;                     /* the next of them to find */
    apr_size_t seen;              /* numbers walked so far */
} neg_zero_walk;

/* v, or the double -0.0 written "-0" in its place if v is the number literal next in document
 * order and one of the -0 that json-c read as the integer 0. */
static json_object *neg_zero_for(neg_zero_walk *w, json_object *v)
{
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
        return v;
    }
    if (w->next < w->at->nelts && APR_ARRAY_IDX(w->at, w->next, apr_size_t) == w->seen++) {
        w->next++;
        if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) == 0) {
            return json_object_new_double_s(-0.0, "-0");
        }
    }
    return v;
}

/* Walks o in document order (json-c keeps members in the order written: the names are unique
 * by now), putting each noted -0 back. */
static void put_neg_zeros(neg_zero_walk *w, json_object *o)
{
    json_object *n;

    if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, key, val)
        {
            if (val && (n = neg_zero_for(w, val)) != val) {
                json_object_object_add(o, key, n); /* replaces in place, frees val */
            } else if (val) {
                put_neg_zeros(w, val);
            }
        }
    } else if (json_object_is_type(o, json_type_array)) {
        size_t i, len = json_object_array_length(o);
        for (i = 0; i < len; i++) {
            json_object *v = json_object_array_get_idx(o, i);
            if (v && (n = neg_zero_for(w, v)) != v) {
                json_object_array_put_idx(o, i, n);
            } else if (v) {
                put_neg_zeros(w, v);
            }
        }
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

/* A decimal number's value as significant digits (no leading or trailing zeros; none for
 * zero) and the power of ten of the first: 12.50 and 1.25e1 are {"125", 1}. The exponent is
 * held within +-100000 (a double's own reach is under 400 either way). */
typedef struct {
    int neg;
    char digits[40];
    apr_size_t n;
    long exp;
} decimal_t;

static int decimal_read(const char *s, decimal_t *d)
{
    long point = -1, e = 0, lead = 0, count = 0;
    int esign = 1, any = 0;

    memset(d, 0, sizeof(*d));
    if (*s == '-') {
        d->neg = 1, s++;
    }
    for (; (*s >= '0' && *s <= '9') || *s == '.'; s++) {
        if (*s == '.') {
            point = lead + count;
            continue;
        }
        any = 1;
        if (count == 0 && *s == '0') {
            lead++; /* a leading zero: only moves the point */
            continue;
        }
        if (d->n < sizeof(d->digits) - 1) {
            d->digits[d->n++] = *s;
        } else if (*s != '0') {
            return -1; /* more digits than a double's shortest form ever has */
        }
        count++;
    }
    if (point < 0) {
        point = lead + count;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') {
            esign = *s++ == '-' ? -1 : 1;
        }
        for (; *s >= '0' && *s <= '9'; s++) {
            e = e < 100000 ? e * 10 + (*s - '0') : e;
        }
    }
    if (!any || *s) {
        return -1;
    }
    while (d->n && d->digits[d->n - 1] == '0') {
        d->n--;
    }
    d->digits[d->n] = '\0';
    d->exp = d->n ? point - lead + esign * e : 0;
    return 0;
}

/* The fewest significant digits (1 to 17) that read back as x, as JavaScript and Python print
 * a double; C's printf converts exactly (APR's does not), so it writes them. */
static void shortest(double x, char *buf, apr_size_t size)
{
    int prec;

    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*e", prec - 1, x);
        if (strtod(buf, NULL) == x) {
            return;
        }
    }
}

int bank_json_number_exact(json_object *v)
{
    const char *text;
    char back[40];
    decimal_t a, b;
    double x;

    if (json_object_is_type(v, json_type_int)) {
        text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    } else if (json_object_is_type(v, json_type_double)) {
        text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN); /* as sent */
    } else {
        return 0;
    }
    x = strtod(text, NULL);
    if (!isfinite(x) || (x == 0 && signbit(x))) {
        return 0;
    }
    shortest(x, back, sizeof(back));
    return decimal_read(text, &a) == 0 && decimal_read(back, &b) == 0 && a.neg == b.neg &&
           a.exp == b.exp && a.n == b.n && !memcmp(a.digits, b.digits, a.n);
}

json_object *bank_json_own(apr_pool_t *p, json_object *o)
{
    if (o) {
        apr_pool_cleanup_register(p, o, put_json, apr_pool_cleanup_null);
    }
    return o;
}

static apr_status_t free_tokener(void *tok)
{
    json_tokener_free(tok);
    return APR_SUCCESS;
}

#define KEPT_TOKENER "bank_json_tokener"

/* keep's parser, reset, or a new one kept there; NULL keep (or a long text): a new one, freed
 * by the caller (*own set). */
static json_tokener *tokener(apr_pool_t *keep, apr_size_t len, int *own)
{
    void *kept = NULL;
    json_tokener *tok;

    *own = !keep || len > BANK_JSON_KEEP_MAX;
    if (!*own && apr_pool_userdata_get(&kept, KEPT_TOKENER, keep) == APR_SUCCESS && kept) {
        json_tokener_reset(kept);
        return kept;
    }
    /* json-c counts the top level as depth 1; one more lets 16 nested levels through. */
    if (!(tok = json_tokener_new_ex(BANK_JSON_MAX_DEPTH + 1))) {
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    if (!*own && apr_pool_userdata_set(tok, KEPT_TOKENER, free_tokener, keep) != APR_SUCCESS) {
        *own = 1;
    }
    return tok;
}

/* json-c reads numbers in the C locale: each parse copies the thread's locale (duplocale),
 * derives a C LC_NUMERIC from the copy (newlocale) and uses it until the parse ends. When the
 * thread follows the process's global locale, as httpd's threads do, both calls take glibc's
 * process-wide locale lock for writing: every thread of the process that parses at that
 * moment waits on it, and under load waits on a holder that is not running (a process's
 * requests all held meanwhile: docs/deployment.md, "The server's share of the CPUs").
 * From the C locale object itself, glibc hands that object back, with no copy and no lock;
 * so the parse runs with the thread in it, and the thread's locale is put back after. */
static locale_t c_locale = (locale_t)0; /* 0: none could be made (json-c's own way then) */
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static json_object *parse_in_c(json_tokener *tok, const char *buf, int len)
{
    locale_t was = (locale_t)0;
    json_object *o;

    pthread_once(&c_locale_once, make_c_locale);
    if (c_locale) {
        was = uselocale(c_locale);
    }
    o = json_tokener_parse_ex(tok, buf, len);
    if (was) {
        uselocale(was);
    }
    return o;
}

/* buf read by tok in the C locale: the value (owned by p), json-c's verdict in *err and in *off
 * where the value ends. tok is freed if own, else kept in keep only if it succeeded. */
static inline json_object *tokenize(apr_pool_t *p, apr_pool_t *keep, json_tokener *tok, int own,
                                    const char *buf, apr_size_t len, int want_object,
                                    enum json_tokener_error *err, apr_size_t *off)
{
    json_object *o = parse_in_c(tok, buf, (int)len);

    *err = json_tokener_get_error(tok);
    *off = json_tokener_get_parse_end(tok);
    if (*err == json_tokener_continue && !want_object) {
        /* All of buf was read and the value may be complete: a top-level number or literal
         * ends only where json-c sees the end of the text, which it knows by a NUL. (An
         * object ends at its brace; a request body that does not is "not valid JSON".) */
        o = parse_in_c(tok, "", 1);
        *err = json_tokener_get_error(tok);
        *off = len;
    }
    if (own) { /* freed now rather than with p: bankctl parses thousands of values into one pool */
        json_tokener_free(tok);
    } else if (*err != json_tokener_success) {
        /* json_tokener_reset leaves some state (a \u escape's pending high surrogate) that
         * would change how the connection's next text reads: only a parser that succeeded is
         * kept */
        apr_pool_cleanup_run(keep, tok, free_tokener);
        apr_pool_userdata_set(NULL, KEPT_TOKENER, NULL, keep);
    }
    return bank_json_own(p, o);
}

/* What json-c let through that the text did not say (sc: what the scan counted): a name twice
 * in one object, a -0 (put back into *o), a number out of range. NULL, or why it is refused. */
static inline const char *tree_problem(apr_pool_t *p, json_object **o, const scan_t *sc)
{
    /* json-c keeps the last of two members with the same name (compared after unescaping,
     * so "a" and "\u0061" are one name) and drops the other silently: the tree then holds
     * fewer members than the text wrote. A dropped value's own members are missing too, so
     * the counts differ exactly when some object repeats a name. O(n), no table of names. */
    if (count_members(*o) != sc->members) {
        return "The request body has the same member name twice in one object.";
    }
    if (sc->neg_zeros) {
        neg_zero_walk w = {sc->neg_zeros, 0, 0};
        json_object *n = neg_zero_for(&w, *o);
        if (n != *o) {
            *o = bank_json_own(p, n); /* the whole text was -0 */
        } else {
            put_neg_zeros(&w, *o);
        }
    }
    if (any_value(*o, not_finite)) {
        return "The request body holds a number JSON cannot represent.";
    }
    return NULL;
}

/* The text is refused if *why is set; JSON null is NULL with *why left NULL. The object test
 * comes before the number test so bank_json_parse_object keeps its messages' order. */
static json_object *parse(apr_pool_t *p, apr_pool_t *keep, const char *buf, apr_size_t len,
                          int want_object, const char **why)
{
    json_tokener *tok;
    int own;
    json_object *o;
    enum json_tokener_error err;
    apr_size_t off;
    scan_t sc = {0, 0, NULL, p};

    *why = NULL;
    if ((*why = text_problem((const unsigned char *)buf, len, &sc)) != NULL) {
        return NULL;
    }

    if (!(tok = tokener(keep, len, &own))) {
        *why = "The request body could not be parsed.";
        return NULL;
    }
    o = tokenize(p, keep, tok, own, buf, len, want_object, &err, &off);
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
    if (o && (*why = tree_problem(p, &o, &sc)) != NULL) {
        return NULL;
    }
    return o;
}

json_object *bank_json_parse(apr_pool_t *p, const char *buf, apr_size_t len, const char **why)
{
    return parse(p, NULL, buf, len, 0, why);
}

json_object *bank_json_parse_object(apr_pool_t *p, const char *buf, apr_size_t len,
                                    const char **why)
{
    return parse(p, NULL, buf, len, 1, why);
}

json_object *bank_json_parse_object_in(apr_pool_t *p, apr_pool_t *keep, const char *buf,
                                       apr_size_t len, const char **why)
{
    return parse(p, keep, buf, len, 1, why);
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
