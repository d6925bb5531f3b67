/* The store's statements as one list, and the per-driver expansion of their markers
 * (bank_sql.h says which markers there are and why). */
#include <string.h>
#include <apr_strings.h>
#include "bank_sql.h"

static const bank_stmt_t *const sets[] = {bank_store_auth_sql,
                                          bank_store_customer_sql,
                                          bank_store_notice_sql,
                                          bank_store_push_sql,
                                          bank_store_identity_sql,
                                          bank_store_privileges_sql,
                                          NULL};

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

static const bank_stmt_older_t *const older_sets[] = {bank_store_auth_older,
                                                      bank_store_notice_older, NULL};

const char *bank_stmt_older(apr_pool_t *p, const char *label)
{
    int s, n;

    for (s = 0; older_sets[s]; s++) {
        for (n = 0; older_sets[s][n].label; n++) {
            if (strcmp(older_sets[s][n].label, label) == 0) {
                return bank_stmt_expand(p, older_sets[s][n].sql, 0);
            }
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
     * in the one parameter, in the order of an index: without it PostgreSQL's generic plan
     * read the whole table (an hour of changes) on every read, as it cannot tell how few
     * rows the condition keeps. */
    {"feed_position", "CAST((SELECT COALESCE(MAX(seq), 0) FROM auth_token_revocations) AS TEXT)",
     "CAST(pg_current_snapshot() AS text)"},
    {"feed_since", "auth_token_revocations WHERE seq > CAST(%s AS INTEGER) ORDER BY seq",
     "(SELECT CAST(%s AS pg_snapshot) AS s) AS f, auth_token_revocations"
     " WHERE xid >= pg_snapshot_xmin(f.s) AND NOT pg_visible_in_snapshot(xid, f.s)"
     " ORDER BY xid"},
    /* The runtime role's privileges (bank_store_privileges.c), one list parameter each. */
    {"privileges_missing", "SELECT NULL WHERE %s IS NULL",
     "SELECT string_agg(split_part(e, ':', 2) || ' on ' || split_part(e, ':', 1), ', '"
     " ORDER BY e) FROM unnest(string_to_array(%s, ',')) AS e"
     " WHERE CASE WHEN to_regclass(split_part(e, ':', 1)) IS NULL THEN false"
     " ELSE NOT has_table_privilege(split_part(e, ':', 1), split_part(e, ':', 2)) END"},
    {"sequences_missing", "SELECT NULL WHERE %s IS NULL",
     "SELECT string_agg('USAGE on sequence ' || s.relname, ', ' ORDER BY s.relname)"
     " FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'"
     " JOIN pg_class c ON c.oid = d.refobjid"
     " WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass"
     " AND d.deptype = 'a' AND c.relname = ANY (string_to_array(%s, ','))"
     " AND CASE WHEN s.relkind = 'S' THEN NOT has_sequence_privilege(s.oid, 'USAGE')"
     " ELSE false END"},
    {"trigger_sources", "SELECT NULL WHERE %s IS NULL",
     "SELECT p.prosrc FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
     " WHERE l.lanname = 'plpgsql' AND p.pronamespace = current_schema()::regnamespace"
     " AND (p.prorettype <> 'trigger'::regtype OR p.oid IN (SELECT t.tgfoid FROM pg_trigger t"
     " JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal"
     " AND c.relname = ANY (string_to_array(%s, ','))))"},
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
