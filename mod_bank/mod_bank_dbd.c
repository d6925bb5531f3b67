/* mod_dbd as mod_bank meets it (mod_bank_dbd.h lists its quirks, M1 to M7, with the httpd
 * version they were seen in and their tests): its optional functions, its per-server records,
 * the statements handed to it at config time, and the order of its hooks. */
#include <string.h>
#include <apr_atomic.h>
#include <apr_optional.h>
#include <apr_strings.h>
#include "mod_bank.h"
#include "mod_bank_dbd.h"
#include <http_config.h>
#include "bank_sql.h"

APLOG_USE_MODULE(bank);

static APR_OPTIONAL_FN_TYPE(ap_dbd_prepare) *dbd_prepare = NULL;
static APR_OPTIONAL_FN_TYPE(ap_dbd_acquire) *dbd_acquire = NULL;
static APR_OPTIONAL_FN_TYPE(ap_dbd_open) *dbd_open = NULL;
static APR_OPTIONAL_FN_TYPE(ap_dbd_close) *dbd_close = NULL;

int bank_dbd_retrieve(void)
{
    dbd_prepare = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_prepare);
    dbd_acquire = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_acquire);
    dbd_open = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_open);
    dbd_close = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_close);
    return dbd_prepare != NULL;
}

ap_dbd_t *bank_dbd_acquire(request_rec *r)
{
    return dbd_acquire ? dbd_acquire(r) : NULL;
}

ap_dbd_t *bank_dbd_open(apr_pool_t *p, server_rec *s)
{
    return dbd_open && dbd_close ? dbd_open(p, s) : NULL;
}

void bank_dbd_close(server_rec *s, ap_dbd_t *dbd)
{
    dbd_close(s, dbd);
}

/* ---- mod_dbd's records (M1, M2) ---- */

/* mod_dbd's record of server s: mod_dbd.c's svr_cfg begins with a pointer to the dbd_cfg_t. */
static const dbd_cfg_t *record(server_rec *s)
{
    module *dbd = ap_find_linked_module("mod_dbd.c");
    dbd_cfg_t *const *rec = dbd ? ap_get_module_config(s->module_config, dbd) : NULL;

    return rec ? *rec : NULL;
}

int bank_dbd_server(server_rec *s, const char **driver, const char **params)
{
    const dbd_cfg_t *cfg = record(s);

    *driver = *params = NULL;
    if (!cfg || !cfg->name || !strcmp(cfg->name, "[DBDriver unset]")) {
        return 0;
    }
    *driver = cfg->name;
    *params = cfg->params;
    return 1;
}

int bank_dbd_server_bank(server_rec *s, const char **driver, const char **params)
{
    return bank_dbd_server(s, driver, params) && *params && **params &&
           (strcmp(*driver, "sqlite3") == 0 || strcmp(*driver, "pgsql") == 0);
}

/* 1 if server sp shares its mod_dbd record with a server before it in the list (M2). */
static int shared(server_rec *sp, server_rec *first)
{
    module *dbd = ap_find_linked_module("mod_dbd.c");
    const void *mine;
    server_rec *prev;

    if (!dbd || !(mine = ap_get_module_config(sp->module_config, dbd))) {
        return 0;
    }
    for (prev = first; prev != sp; prev = prev->next) {
        if (ap_get_module_config(prev->module_config, dbd) == mine) {
            return 1;
        }
    }
    return 0;
}

/* ---- statements (M3) ---- */

/* mod_bank's statements in their SQLite form, label -> SQL, for bank_dbd_statements. */
static apr_hash_t *sqlite_statements = NULL;

const char *bank_dbd_prepare_all(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s, int *pgsql)
{
    const char *drivers = "", *driver, *params;
    const bank_stmt_t *st;
    server_rec *sp;
    int i;

    *pgsql = 0;
    sqlite_statements = apr_hash_make(pconf);
    for (i = 0; (st = bank_stmt_at(i)) != NULL; i++) {
        apr_hash_set(sqlite_statements, st->label, APR_HASH_KEY_STRING,
                     bank_stmt_expand(pconf, st->sql, 0));
    }
    for (sp = s; sp; sp = sp->next) {
        if (shared(sp, s) || !bank_dbd_server(sp, &driver, &params)) {
            continue; /* no database here: the handlers answer 503 */
        }
        if (!ap_find_token(ptemp, drivers, driver)) {
            drivers = *drivers ? apr_pstrcat(pconf, drivers, ", ", driver, (char *)NULL)
                               : apr_pstrdup(pconf, driver);
        }
        if (strcmp(driver, "pgsql") != 0 || !dbd_prepare) {
            continue; /* SQLite: prepared with each connection's session */
        }
        *pgsql = 1;
        for (i = 0; (st = bank_stmt_at(i)) != NULL; i++) {
            dbd_prepare(sp, bank_stmt_expand(pconf, st->sql, 1), st->label);
        }
    }
    return drivers;
}

apr_hash_t *bank_dbd_statements(dbd_cfg_t *cfg, ap_dbd_t *rec)
{
    if (strcmp(cfg->name, "pgsql") == 0 || !sqlite_statements) {
        return cfg->queries;
    }
    return apr_hash_overlay(rec->pool, sqlite_statements, cfg->queries);
}

/* ---- the order of mod_dbd's hooks (M4, M5) ---- */

static apr_uint32_t ready;

static void ready_child_init(apr_pool_t *pchild, server_rec *s)
{
    (void)pchild;
    (void)s;
    apr_atomic_set32(&ready, 1);
}

int bank_dbd_ready(void)
{
    return apr_atomic_read32(&ready) != 0;
}

void bank_dbd_register_hooks(bank_dbd_connect_fn *first, bank_dbd_connect_fn *last)
{
    static const char *const after_dbd[] = {"mod_dbd.c", NULL};

    ap_hook_child_init(ready_child_init, after_dbd, NULL, APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(dbd, post_connect, first, NULL, NULL, APR_HOOK_FIRST);
    APR_OPTIONAL_HOOK(dbd, post_connect, last, NULL, NULL, APR_HOOK_LAST);
}
