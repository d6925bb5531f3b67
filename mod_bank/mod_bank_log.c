/* The core's log (bank_log.h) written to httpd's error log, under mod_bank's module record
 * (so LogLevel bank:... applies), the request's when there is one. */
#include <http_main.h>
#include "mod_bank.h"
#include "mod_bank_log.h"

APLOG_USE_MODULE(bank);

#define BANK_WHERE_KEY "mod_bank:where"

static void host_log(bank_log_where where, const char *file, int line, int level, const char *msg)
{
    const mod_bank_where_t *w = where;

    if (w && w->r) {
        ap_log_rerror_(file, line, APLOG_MODULE_INDEX, level, 0, w->r, "%s", msg);
    } else {
        ap_log_error_(file, line, APLOG_MODULE_INDEX, level, 0, w ? w->s : ap_server_conf, "%s",
                      msg);
    }
}

/* httpd's own test (LogLevel bank:..., per request where one is known); notices and worse are
 * always written, as ap_log_error writes them. */
static int host_wants(bank_log_where where, int level)
{
    const mod_bank_where_t *w = where;
    const server_rec *s = w ? w->s : ap_server_conf;

    if (w && w->r) {
        return APLOG_R_MODULE_IS_LEVEL(w->r, APLOG_MODULE_INDEX, level);
    }
    return APLOG_MODULE_IS_LEVEL(s, APLOG_MODULE_INDEX, level);
}

void mod_bank_log_install(void)
{
    bank_log_set(host_log);
    bank_log_set_wants(host_wants);
}

bank_log_where mod_bank_where(request_rec *r)
{
    mod_bank_where_t *w = NULL;

    apr_pool_userdata_get((void **)&w, BANK_WHERE_KEY, r->pool);
    if (!w) {
        w = apr_palloc(r->pool, sizeof(*w));
        w->r = r;
        w->s = r->server;
        apr_pool_userdata_setn(w, BANK_WHERE_KEY, NULL, r->pool);
    }
    return w;
}
