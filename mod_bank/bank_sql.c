/* The store's statements as one list, and the per-driver expansion of their markers
 * (bank_sql.h says which markers there are and why). */
#include <string.h>
#include <apr_strings.h>
#include "bank_sql.h"

static const bank_stmt_t *const sets[] = {bank_store_auth_sql,     bank_store_customer_sql,
                                          bank_store_notice_sql,   bank_store_push_sql,
                                          bank_store_identity_sql, NULL};

const bank_stmt_t *bank_stmt_at(int i)
{
    int s, n;

    for (s = 0; sets[s]; s++) {
        for (n = 0; sets[s][n].label; n++) {
            if (i-- == 0) {
                return &sets[s][n];
            }
        }
    }
    return NULL;
}

const bank_stmt_t *bank_stmt_find(const char *label)
{
    const bank_stmt_t *st;
    int i;

    for (i = 0; (st = bank_stmt_at(i)) != NULL; i++) {
        if (strcmp(st->label, label) == 0) {
            return st;
        }
    }
    return NULL;
}

/* Each marker's text per driver; '@' stands for the marker's argument ({ymd:COLUMN}). */
static const struct {
    const char *name;
    const char *sqlite;
    const char *pgsql;
} markers[] = {
    {"uuid", "%s", "CAST(%s AS uuid)"},
    {"bool", "%d", "%d <> 0"},
    {"ymd", "@", "to_char(@, 'YYYY-MM-DD')"},
    {"skip_locked", "", " FOR UPDATE SKIP LOCKED"},
    {"noindex", "+@", "@"},
    /* The token revocation feed (bank_store_auth.c): where a read stands (SQLite: the last
     * seq; PostgreSQL: the statement's snapshot), and the rows committed after the position
     * in the one parameter. */
    {"feed_position", "CAST((SELECT COALESCE(MAX(seq), 0) FROM auth_token_revocations) AS TEXT)",
     "CAST(pg_current_snapshot() AS text)"},
    {"feed_since", "auth_token_revocations WHERE seq > CAST(%s AS INTEGER)",
     "(SELECT CAST(%s AS pg_snapshot) AS s) AS f, auth_token_revocations"
     " WHERE xid >= pg_snapshot_xmin(f.s) AND NOT pg_visible_in_snapshot(xid, f.s)"},
};

static const char *expand_one(apr_pool_t *p, const char *marker, apr_size_t len, int pgsql)
{
    const char *colon = memchr(marker, ':', len), *arg = "";
    apr_size_t name_len = colon ? (apr_size_t)(colon - marker) : len, i;

    if (colon) {
        arg = apr_pstrndup(p, colon + 1, len - name_len - 1);
    }
    for (i = 0; i < sizeof(markers) / sizeof(markers[0]); i++) {
        if (strlen(markers[i].name) == name_len &&
            strncmp(markers[i].name, marker, name_len) == 0) {
            const char *text = pgsql ? markers[i].pgsql : markers[i].sqlite;
            const char *at = strchr(text, '@');
            return at ? apr_pstrcat(p, apr_pstrndup(p, text, (apr_size_t)(at - text)), arg, at + 1,
                                    (char *)NULL)
                      : text;
        }
    }
    /* Unknown: left as written, so the statement fails to prepare and says where. */
    return apr_pstrndup(p, marker - 1, len + 2);
}

const char *bank_stmt_expand(apr_pool_t *p, const char *sql, int pgsql)
{
    const char *out = "", *s = sql, *open;

    while ((open = strchr(s, '{')) != NULL) {
        const char *close = strchr(open, '}');
        if (!close) {
            break;
        }
        out = apr_pstrcat(p, out, apr_pstrndup(p, s, (apr_size_t)(open - s)),
                          expand_one(p, open + 1, (apr_size_t)(close - open - 1), pgsql),
                          (char *)NULL);
        s = close + 1;
    }
    return apr_pstrcat(p, out, s, (char *)NULL);
}
