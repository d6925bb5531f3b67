/* bankctl bvn check: one identity-provider call with the module's own client and rules
 * (bank_idp.c), for an operator checking a configuration or a customer's case
 * (docs/identity.md). Prints only match or mismatch; never repeats a value it was given.
 * Needs no database. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include "bankctl.h"
#include "bank_idp.h"
#include "bank_validate.h"

#define EXIT_MISMATCH 3

static const char cmd[] = "bvn check";

/* The option, else the environment variable (may be NULL). */
static const char *opt(apr_table_t *o, const char *name, const char *env)
{
    const char *v = apr_table_get(o, name);
    return v ? v : env ? getenv(env) : NULL;
}

/* The provider, its URL, credentials and timeout, from the options and the environment. */
static void configure(ctl_t *c, apr_table_t *o, bank_idp_conf_t *conf)
{
    const char *kind = opt(o, "provider", "BANK_BVN_PROVIDER");
    const char *url = opt(o, "url", "BANK_BVN_PROVIDER_URL"),
               *file = apr_table_get(o, "credentials");
    const char *why;
    bank_idp_kind k;

    if (!kind || bank_idp_kind_parse(kind, &k) != 0 || k == BANK_IDP_TABLE) {
        die(EXIT_USAGE, "%s: --provider (or BANK_BVN_PROVIDER) must be dojah or prembly", cmd);
    }
    conf->kind = k;
    conf->proxy = NULL; /* as the module without BankBvnProviderProxy: no proxy */
    if ((why = bank_idp_url_check(c->pool, url && *url ? url : bank_idp_default_url(k),
                                  &conf->base_url)) != NULL) {
        die(EXIT_USAGE, "%s: --url: %s", cmd, why);
    }
    if (file) {
        if ((why = bank_idp_credentials_file(c->pool, file, &conf->app_id, &conf->secret))) {
            die(EXIT_USAGE, "%s: --credentials: %s", cmd, why);
        }
    } else {
        conf->app_id = opt(o, "app-id", "BANK_BVN_PROVIDER_APP_ID");
        conf->secret = opt(o, "key", "BANK_BVN_PROVIDER_KEY");
        if (!conf->app_id || !conf->secret) {
            die(EXIT_USAGE,
                "%s: no credentials: --app-id and --key (or BANK_BVN_PROVIDER_APP_ID and "
                "BANK_BVN_PROVIDER_KEY), or --credentials FILE",
                cmd);
        }
        if ((why = bank_idp_credential_check(conf->app_id)) ||
            (why = bank_idp_credential_check(conf->secret))) {
            die(EXIT_USAGE, "%s: credentials: %s", cmd, why);
        }
    }
    conf->timeout = apr_table_get(o, "timeout")
                        ? (int)ctl_parse_range(cmd, "timeout", apr_table_get(o, "timeout"), 1,
                                               BANK_IDP_TIMEOUT_MAX)
                        : BANK_IDP_TIMEOUT_DEFAULT;
}

int cmd_bvn_check(ctl_t *c, apr_table_t *o)
{
    bank_idp_query_t q = {ctl_need(o, "bvn", cmd), ctl_need(o, "dob", cmd),
                          ctl_need(o, "first", cmd), ctl_need(o, "last", cmd)};
    bank_idp_conf_t conf;
    bank_idp_result_t res;

    if (!bank_bvn_valid(q.bvn)) {
        die(EXIT_USAGE, "%s: --bvn must be exactly 11 digits", cmd);
    }
    if (bank_date_check(q.dob, apr_time_now()) != BANK_DATE_OK) {
        die(EXIT_USAGE, "%s: --dob must be a real YYYY-MM-DD date, not in the future", cmd);
    }
    ctl_check_text(cmd, "first", q.first, 100);
    ctl_check_text(cmd, "last", q.last, 100);
    configure(c, o, &conf);
    if (bank_idp_global_init() != 0) {
        die(1, "%s: libcurl failed to initialise", cmd);
    }
    bank_idp_check(c->pool, c->pool, &conf, &q, &res);
    switch (res.verdict) {
    case BANK_IDP_MATCH:
        puts("match");
        return 0;
    case BANK_IDP_MISMATCH:
        puts("mismatch");
        return EXIT_MISMATCH;
    default:
        die(1, "%s: %s at %s: %s%s", cmd, bank_idp_kind_name(conf.kind), conf.base_url,
            res.verdict == BANK_IDP_REFUSED ? "refused: " : "unavailable: ", res.why);
    }
}
