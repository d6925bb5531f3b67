/* bankctl bvn check: one identity-provider call with the module's own client and rules
 * (bank_idp.c), for an operator checking a configuration or a customer's case
 * (docs/identity.md). Prints only match or mismatch; never repeats a value it was given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include "bankctl_bvn_check.h"
#include "bank_idp.h"
#include "bank_validate.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_MISMATCH 3

static const char *const names[] = {"bvn",    "dob", "first",       "last",    "provider", "url",
                                    "app-id", "key", "credentials", "timeout", NULL};

static int usage(const char *fmt, const char *what)
{
    fputs("bankctl: bvn check: ", stderr);
    fprintf(stderr, fmt, what);
    fputs(" (see bankctl --help)\n", stderr);
    return EXIT_USAGE;
}

/* --name VALUE or --name=VALUE of the names above into o. -1 after the message. */
static int parse(apr_pool_t *p, int argc, const char *const *argv, apr_table_t *o)
{
    int i, k;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        const char *name = strncmp(a, "--", 2) == 0
                               ? apr_pstrndup(p, a + 2, eq ? (apr_size_t)(eq - a - 2) : strlen(a))
                               : NULL;
        for (k = 0; name && names[k] && strcmp(names[k], name) != 0; k++) {
        }
        if (!name || !names[k]) {
            /* the name only: a mistyped option may carry a BVN or a key */
            return usage("unknown option %s",
                         name ? apr_pstrndup(p, a, strcspn(a, "=")) : "(not an option)"),
                   -1;
        }
        if (eq) {
            apr_table_set(o, name, eq + 1);
        } else if (i + 1 < argc) {
            apr_table_set(o, name, argv[++i]);
        } else {
            return usage("--%s needs a value", name), -1;
        }
    }
    return 0;
}

/* The option, else the environment variable (may be NULL). */
static const char *opt(apr_table_t *o, const char *name, const char *env)
{
    const char *v = apr_table_get(o, name);
    return v ? v : env ? getenv(env) : NULL;
}

/* Fills c from the options and the environment; 0, or the exit status after a message. */
static int configure(apr_pool_t *p, apr_table_t *o, bank_idp_conf_t *c)
{
    const char *kind = opt(o, "provider", "BANK_BVN_PROVIDER");
    const char *url, *file = apr_table_get(o, "credentials"), *timeout, *why;
    bank_idp_kind k;

    if (!kind || bank_idp_kind_parse(kind, &k) != 0 || k == BANK_IDP_TABLE) {
        return usage("%s", "--provider (or BANK_BVN_PROVIDER) must be dojah or prembly");
    }
    c->kind = k;
    url = opt(o, "url", "BANK_BVN_PROVIDER_URL");
    url = url && *url ? url : bank_idp_default_url(k);
    if ((why = bank_idp_url_check(p, url, &c->base_url)) != NULL) {
        return usage("--url: %s", why);
    }
    if (file) {
        if ((why = bank_idp_credentials_file(p, file, &c->app_id, &c->secret)) != NULL) {
            return usage("--credentials: %s", why);
        }
    } else {
        c->app_id = opt(o, "app-id", "BANK_BVN_PROVIDER_APP_ID");
        c->secret = opt(o, "key", "BANK_BVN_PROVIDER_KEY");
        if (!c->app_id || !c->secret) {
            return usage("%s", "no credentials: --app-id and --key (or BANK_BVN_PROVIDER_APP_ID "
                               "and BANK_BVN_PROVIDER_KEY), or --credentials FILE");
        }
        if ((why = bank_idp_credential_check(c->app_id)) ||
            (why = bank_idp_credential_check(c->secret))) {
            return usage("credentials: %s", why);
        }
    }
    timeout = opt(o, "timeout", NULL);
    c->timeout = timeout ? atoi(timeout) : BANK_IDP_TIMEOUT_DEFAULT;
    if (c->timeout < 1 || c->timeout > BANK_IDP_TIMEOUT_MAX ||
        (timeout && strspn(timeout, "0123456789") != strlen(timeout))) {
        return usage("%s", "--timeout: expected 1 to 300 seconds");
    }
    return 0;
}

int bankctl_bvn_check(apr_pool_t *p, int argc, const char *const *argv)
{
    apr_table_t *o = apr_table_make(p, 10);
    bank_idp_conf_t c;
    bank_idp_query_t q;
    bank_idp_result_t res;
    int rc;

    if (parse(p, argc, argv, o) != 0) {
        return EXIT_USAGE;
    }
    q.bvn = apr_table_get(o, "bvn");
    q.dob = apr_table_get(o, "dob");
    q.first = apr_table_get(o, "first");
    q.last = apr_table_get(o, "last");
    if (!q.bvn || !q.dob || !q.first || !q.last) {
        return usage("%s", "--bvn, --dob, --first and --last are required");
    }
    if (!bank_bvn_valid(q.bvn)) {
        return usage("%s", "--bvn must be exactly 11 digits");
    }
    if (bank_date_check(q.dob, apr_time_now()) != BANK_DATE_OK) {
        return usage("%s", "--dob must be a real YYYY-MM-DD date, not in the future");
    }
    if (!*q.first || !*q.last || bank_utf8_length(q.first) > 100 ||
        bank_utf8_length(q.last) > 100) {
        return usage("%s", "--first and --last must have 1 to 100 characters");
    }
    if ((rc = configure(p, o, &c)) != 0) {
        return rc;
    }
    if (bank_idp_global_init() != 0) {
        fputs("bankctl: bvn check: libcurl failed to initialise\n", stderr);
        return EXIT_FAILED;
    }
    bank_idp_check(p, p, &c, &q, &res);
    switch (res.verdict) {
    case BANK_IDP_MATCH:
        puts("match");
        return 0;
    case BANK_IDP_MISMATCH:
        puts("mismatch");
        return EXIT_MISMATCH;
    default:
        fprintf(stderr, "bankctl: bvn check: %s at %s: %s%s\n", bank_idp_kind_name(c.kind),
                c.base_url,
                res.verdict == BANK_IDP_REFUSED ? "refused: " : "unavailable: ", res.why);
        return EXIT_FAILED;
    }
}
