/* What the runtime role must be granted, read from the store's own statements (and the
 * trigger functions the tables they write fire), and which of it the connected role lacks
 * (bank_store.h, bank_store_privileges_missing). PostgreSQL only: SQLite has no roles. */
#include <string.h>
#include <strings.h>
#include <apr_hash.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include "bank_sql.h"
#include "bank_store.h"

/* clang-format off */
const bank_stmt_t bank_store_privileges_sql[] = {
    /* "table:PRIVILEGE,..." -> those the current role lacks, "PRIVILEGE on table, ..."
     * (NULL: none); tables that do not exist (a CTE's name) are passed over. */
    {"bank_privileges_missing", "{privileges_missing}"},
    /* Tables "t1,t2" -> the sequences their serial columns take values from that the current
     * role may not use (an identity column needs none). */
    {"bank_sequences_missing", "{sequences_missing}"},
    /* Tables "t1,t2" -> the source of every trigger function on them, and of the schema's
     * other PL/pgSQL functions (those the triggers call). */
    {"bank_trigger_sources", "{trigger_sources}"},
    {NULL, NULL}};
/* clang-format on */

typedef struct {
    const char *text;
} text_row;
static const bank_col_t text_cols[] = {BANK_COL(TEXT, text_row, text), BANK_COL_LAST};

/* The next token of SQL at *s: a word (identifier or keyword, lower-cased, double quotes
 * removed), or one of "(", ")", ",", ";"; literals, comments and other punctuation passed
 * over. NULL at the end. */
static const char *next_word(apr_pool_t *p, const char **s)
{
    const char *c = *s, *w;
    char *word, *q;

    for (;;) {
        while (*c && !apr_isalnum(*c) && !strchr("_\"'(),;", *c) && !(c[0] == '-' && c[1] == '-') &&
               !(c[0] == '/' && c[1] == '*')) {
            c++;
        }
        if (*c == '\'') { /* a literal: '' inside it is a quote */
            for (c++; *c && !(*c == '\'' && c[1] != '\''); c += *c == '\'' ? 2 : 1) {
            }
            c += *c ? 1 : 0;
        } else if (c[0] == '-' && c[1] == '-') {
            c += strcspn(c, "\n");
        } else if (c[0] == '/' && c[1] == '*') {
            const char *e = strstr(c + 2, "*/");
            c = e ? e + 2 : c + strlen(c);
        } else {
            break;
        }
    }
    *s = c + (*c ? 1 : 0);
    if (!*c) {
        *s = c;
        return NULL;
    }
    if (strchr("(),;", *c)) {
        return apr_pstrndup(p, c, 1);
    }
    if (*c == '"') {
        w = c + 1;
        c = strchr(w, '"');
        c = c ? c : w + strlen(w);
        *s = *c ? c + 1 : c;
        return apr_pstrndup(p, w, (apr_size_t)(c - w));
    }
    for (w = c; apr_isalnum(*c) || *c == '_' || *c == '.'; c++) {
    }
    *s = c;
    word = apr_pstrndup(p, w, (apr_size_t)(c - w));
    for (q = word; *q; q++) {
        *q = (char)apr_tolower(*q);
    }
    return word;
}

static void need(apr_pool_t *p, apr_hash_t *needs, const char *table, int what)
{
    int *have;

    if (!table || !apr_isalpha(*table) || strncmp(table, "pg_", 3) == 0 ||
        strncmp(table, "information_schema", 18) == 0) {
        return; /* not a name, or the catalog's */
    }
    if (!(have = apr_hash_get(needs, table, APR_HASH_KEY_STRING))) {
        have = apr_pcalloc(p, sizeof(*have));
        apr_hash_set(needs, apr_pstrdup(p, table), APR_HASH_KEY_STRING, have);
    }
    *have |= what;
}

/* The word after *s without moving *s. */
static const char *peek(apr_pool_t *p, const char *s)
{
    return next_word(p, &s);
}

/* Words that end a FROM list. */
static int ends_from(const char *w)
{
    static const char *const words[] = {"where",  "group",  "order",  "limit", "on",    "set",
                                        "union",  "values", "select", "for",   "using", "returning",
                                        "having", "window", "offset", NULL};
    int i;

    for (i = 0; words[i]; i++) {
        if (!strcmp(w, words[i])) {
            return 1;
        }
    }
    return 0;
}

#define DEPTH_MAX 32

void bank_sql_needs(apr_pool_t *p, const char *sql, apr_hash_t *needs)
{
    const char *s = sql, *w, *prev = "", *target = NULL;
    int depth = 0, in_from[DEPTH_MAX] = {0};

    while ((w = next_word(p, &s)) != NULL) {
        const char *next = peek(p, s);
        int table_next = next && strcmp(next, "(") != 0 && strcmp(next, ",") != 0;

        if (!strcmp(w, "(") || !strcmp(w, ")")) {
            depth += *w == '(' ? (depth + 1 < DEPTH_MAX) : -(depth > 0);
            in_from[depth] = *w == '(' ? 0 : in_from[depth];
        } else if (!strcmp(w, ";")) {
            target = NULL;
            in_from[depth] = 0;
        } else if (!strcmp(w, "into") && table_next) {
            target = next_word(p, &s);
            need(p, needs, target, BANK_PRIV_INSERT);
        } else if (!strcmp(w, "update") && !strcmp(prev, "do")) {
            need(p, needs, target, BANK_PRIV_UPDATE | BANK_PRIV_SELECT);
        } else if (!strcmp(w, "update") && strcmp(prev, "for") != 0 && strcmp(prev, "key") != 0 &&
                   table_next) {
            target = next_word(p, &s);
            need(p, needs, target, BANK_PRIV_UPDATE);
        } else if (!strcmp(w, "from") && !strcmp(prev, "delete") && table_next) {
            target = next_word(p, &s);
            need(p, needs, target, BANK_PRIV_DELETE | BANK_PRIV_SELECT);
        } else if (!strcmp(w, "from") || !strcmp(w, "join")) {
            in_from[depth] = 1;
            if (table_next) {
                const char *after = s;
                const char *t = next_word(p, &after), *t2 = next_word(p, &after);
                if (!t2 || strcmp(t2, "(") != 0) { /* not a function: unnest(...) */
                    need(p, needs, t, BANK_PRIV_SELECT);
                }
            }
        } else if (!strcmp(w, ",") && in_from[depth] && table_next) {
            need(p, needs, next, BANK_PRIV_SELECT);
        } else if (ends_from(w)) {
            in_from[depth] = 0;
            if ((!strcmp(w, "where") || !strcmp(w, "returning")) && target) {
                need(p, needs, target, BANK_PRIV_SELECT); /* reads the target's rows */
            }
        }
        prev = w;
    }
}

/* The tables of needs: "a,b" of those needing any privilege of mask (privs 0), or
 * "a:SELECT,a:INSERT,b:SELECT" of every privilege each needs (privs 1). */
static const char *listed(apr_pool_t *p, apr_hash_t *needs, int mask, int privs)
{
    static const struct {
        int bit;
        const char *name;
    } names[] = {{BANK_PRIV_SELECT, "SELECT"},
                 {BANK_PRIV_INSERT, "INSERT"},
                 {BANK_PRIV_UPDATE, "UPDATE"},
                 {BANK_PRIV_DELETE, "DELETE"}};
    const char *out = "";
    apr_hash_index_t *hi;
    size_t i;

    for (hi = apr_hash_first(p, needs); hi; hi = apr_hash_next(hi)) {
        const void *key;
        void *val;
        int have;
        apr_hash_this(hi, &key, NULL, &val);
        have = *(int *)val;
        if (!privs && (have & mask)) {
            out = apr_pstrcat(p, out, *out ? "," : "", (const char *)key, (char *)NULL);
        }
        for (i = 0; privs && i < sizeof(names) / sizeof(names[0]); i++) {
            if (have & names[i].bit) {
                out = apr_pstrcat(p, out, *out ? "," : "", (const char *)key, ":", names[i].name,
                                  (char *)NULL);
            }
        }
    }
    return out;
}

/* One text answer of a statement taking one list; NULL for none (or no row: SQLite). */
static bank_db_rc ask(bank_db_t *db, const char *label, const char *list, const char **out)
{
    text_row row = {0};
    bank_db_rc rc = bank_db_row(db, label, 1, &list, text_cols, &row, sizeof(row));

    *out = rc == BANK_DB_OK && row.text && *row.text ? row.text : NULL;
    return rc == BANK_DB_NOT_FOUND ? BANK_DB_OK : rc;
}

bank_db_rc bank_store_privileges_missing(bank_db_t *db, const char **missing)
{
    apr_pool_t *p = bank_db_pool(db);
    apr_hash_t *needs = apr_hash_make(p);
    apr_array_header_t *sources = NULL;
    const bank_stmt_t *st;
    const char *tables, *seqs = NULL;
    bank_db_rc rc;
    int i;

    *missing = NULL;
    if (!bank_db_is_pgsql(db)) {
        return BANK_DB_OK;
    }
    for (i = 0; (st = bank_stmt_at(i)) != NULL; i++) {
        bank_sql_needs(p, bank_stmt_expand(p, st->sql, 1), needs);
    }
    /* what the triggers of the tables written do, as the role that writes */
    tables = listed(p, needs, BANK_PRIV_INSERT | BANK_PRIV_UPDATE | BANK_PRIV_DELETE, 0);
    rc =
        bank_db_rows(db, "bank_trigger_sources", 1, &tables, text_cols, sizeof(text_row), &sources);
    if (rc != BANK_DB_OK && rc != BANK_DB_NOT_FOUND) {
        return rc;
    }
    for (i = 0; sources && i < sources->nelts; i++) {
        const char *src = APR_ARRAY_IDX(sources, i, text_row).text;
        if (src) {
            bank_sql_needs(p, src, needs);
        }
    }
    tables = listed(p, needs, BANK_PRIV_INSERT, 0);
    if ((rc = ask(db, "bank_privileges_missing", listed(p, needs, 0, 1), missing)) != BANK_DB_OK ||
        (rc = ask(db, "bank_sequences_missing", tables, &seqs)) != BANK_DB_OK) {
        return rc;
    }
    if (seqs) {
        *missing = *missing ? apr_pstrcat(p, *missing, ", ", seqs, (char *)NULL) : seqs;
    }
    return BANK_DB_OK;
}
