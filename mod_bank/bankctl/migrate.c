/* bankctl migrate: the core's migration engine (bank_migrate.c) on the chosen database, with
 * the SQL files from --sql-dir, $BANK_SQL_DIR, $BANK_CHECKOUT/sql (a checkout's test and dev
 * scripts) or where make install put them (BANK_SQL_DIR at build time). */
#include <stdio.h>
#include <stdlib.h>
#include <apr_strings.h>
#include "bankctl.h"
#include "bank_migrate.h"

static void say(void *baton, const char *line)
{
    (void)baton;
    printf("%s\n", line);
}

const char *ctl_sql_dir(apr_pool_t *p, apr_table_t *o, const char **from)
{
    const char *v;

    if (o && (v = apr_table_get(o, "sql-dir")) != NULL) {
        *from = "--sql-dir";
        return v;
    }
    if ((v = getenv("BANK_SQL_DIR")) != NULL && *v) {
        *from = "BANK_SQL_DIR";
        return v;
    }
    if ((v = getenv("BANK_CHECKOUT")) != NULL && *v) {
        *from = "BANK_CHECKOUT";
        return apr_pstrcat(p, v, "/sql", (char *)NULL);
    }
    *from = "the built-in default";
    return BANK_SQL_DIR;
}

int cmd_migrate(ctl_t *c, apr_table_t *o)
{
    const char *from, *root = ctl_sql_dir(c->pool, o, &from);
    bank_migrate_result_t res = {NULL, 0};

    ctl_open(c, 1);
    if (bank_migrate(c->db, root, apr_table_get(o, "demo") != NULL, say, NULL, &res) != 0) {
        if (res.sql_dir) {
            die(1,
                "%s (SQL directory from %s): set BANK_SQL_DIR or give --sql-dir to the "
                "directory holding sqlite/, postgresql/ and seed/",
                res.error, from);
        }
        die(1, "%s", res.error);
    }
    return 0;
}
