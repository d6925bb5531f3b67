/* The per-directory configuration (docs/configuration.md): created, merged the httpd way, and
 * read through getters that supply the defaults, which live in one struct. The directives that
 * fill it are mod_bank_directives.c's. */
#include <string.h>
#include <apr_strings.h>
#include <http_core.h>
#include "mod_bank.h"
#include "mod_bank_config.h"
#include "bank_limits.h"
#include "bank_idp.h"

APLOG_USE_MODULE(bank);

/* The defaults, in one place. A field's comment names the directive it is the default of
 * (several fields: its arguments in order); scripts/check-defaults (make lint) fails when that
 * directive's help text (mod_bank_directives.c) or docs/configuration.md states another
 * default. The last two are not values the check can read. */
static const struct {
    apr_int64_t token_lifetime;
    int max_devices;
    int throttle_attempts;
    apr_int64_t throttle_window;
    int addr_attempts;
    apr_int64_t addr_window;
    int account_attempts;
    apr_int64_t account_window;
    int bvn_attempts;
    apr_int64_t bvn_window;
    apr_int64_t max_body;
    apr_int64_t banks_max_age;
    const char *account_bank;
    const char *account_bank_code;
    const char *partner;
    apr_int64_t token_cache;
    apr_int64_t bvn_cache;
    bank_idp_kind idp_kind;
    int idp_timeout;
} defaults = {
    .token_lifetime = BANK_TOKEN_TTL_DEFAULT, /* BankTokenLifetime */
    .max_devices = BANK_MAX_DEVICES_DEFAULT,  /* BankMaxDevices */
    .throttle_attempts = 5,                   /* BankSignInThrottle */
    .throttle_window = 60,                    /* BankSignInThrottle */
    .addr_attempts = 50,                      /* BankSignInAddressThrottle */
    .addr_window = 300,                       /* BankSignInAddressThrottle */
    .account_attempts = 50,                   /* BankSignInAccountThrottle */
    .account_window = 3600,                   /* BankSignInAccountThrottle */
    .bvn_attempts = 5,                        /* BankBvnThrottle */
    .bvn_window = 86400,                      /* BankBvnThrottle */
    .max_body = 65536,                        /* BankMaxBody */
    .banks_max_age = 300,                     /* BankBanksMaxAge */
    .account_bank = "mod_bank Demo Bank",     /* BankAccountBank */
    .account_bank_code = "999",               /* BankAccountBankCode */
    .token_cache = BANK_TOKEN_CACHE_DEFAULT,  /* BankTokenCacheSeconds */
    .bvn_cache = BANK_BVN_CACHE_DEFAULT,      /* BankBvnCacheSeconds */
    .idp_timeout = BANK_IDP_TIMEOUT_DEFAULT,  /* BankBvnProviderTimeout */
    .idp_kind = BANK_IDP_TABLE,               /* table, BankBvnProvider's: an enum, unchecked */
    .partner = "partner",                     /* outside a Location (bank_conf_partner) */
};

void *bank_create_dir_conf(apr_pool_t *p, char *dir)
{
    bank_dir_conf *c = apr_pcalloc(p, sizeof(*c));
    c->token_lifetime = BANK_UNSET;
    c->max_devices = BANK_UNSET;
    c->throttle_attempts = BANK_UNSET;
    c->throttle_window = BANK_UNSET;
    c->addr_attempts = BANK_UNSET;
    c->addr_window = BANK_UNSET;
    c->account_attempts = BANK_UNSET;
    c->account_window = BANK_UNSET;
    c->bvn_attempts = BANK_UNSET;
    c->bvn_window = BANK_UNSET;
    c->max_body = BANK_UNSET;
    c->banks_max_age = BANK_UNSET;
    c->idp_kind = BANK_UNSET;
    c->idp_timeout = BANK_UNSET;
    c->token_cache = BANK_UNSET;
    c->bvn_cache = BANK_UNSET;
    (void)dir;
    return c;
}

#define MERGE_PTR(f) m->f = add->f ? add->f : base->f
#define MERGE_NUM(f) m->f = add->f != BANK_UNSET ? add->f : base->f

void *bank_merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    bank_dir_conf *base = basev, *add = addv, *m = apr_pcalloc(p, sizeof(*m));
    MERGE_PTR(client_keys);
    MERGE_NUM(token_lifetime);
    MERGE_NUM(max_devices);
    MERGE_NUM(throttle_attempts);
    MERGE_NUM(throttle_window);
    MERGE_NUM(addr_attempts);
    MERGE_NUM(addr_window);
    MERGE_NUM(account_attempts);
    MERGE_NUM(account_window);
    MERGE_NUM(bvn_attempts);
    MERGE_NUM(bvn_window);
    MERGE_NUM(max_body);
    MERGE_NUM(banks_max_age);
    MERGE_PTR(account_bank);
    MERGE_PTR(account_bank_code);
    MERGE_PTR(webhook_secrets);
    MERGE_PTR(partner);
    MERGE_NUM(idp_timeout);
    /* A provider and its URL are one setting, and so are the two credentials. */
    if (add->idp_kind != BANK_UNSET) {
        m->idp_kind = add->idp_kind;
        m->idp_url = add->idp_url;
    } else {
        m->idp_kind = base->idp_kind;
        m->idp_url = base->idp_url;
    }
    m->idp_app_id = add->idp_app_id ? add->idp_app_id : base->idp_app_id;
    m->idp_secret = add->idp_app_id ? add->idp_secret : base->idp_secret;
    MERGE_PTR(verifier);
    MERGE_NUM(token_cache);
    MERGE_NUM(bvn_cache);
    MERGE_PTR(idp_proxy);
    /* The signature triple is one setting: take it whole from where it was given. */
    if (add->sig_set) {
        m->sig_set = 1;
        m->sig_header = add->sig_header;
        m->sig_key = add->sig_key;
    } else {
        m->sig_set = base->sig_set;
        m->sig_header = base->sig_header;
        m->sig_key = base->sig_key;
    }
    return m;
}

/* ---------- getters: the configured value or the default -------------------------------- */

bank_dir_conf *bank_conf(request_rec *r)
{
    return ap_get_module_config(r->per_dir_config, &bank_module);
}

#define GETTER(type, name, field)                                                                  \
    type bank_conf_##name(const bank_dir_conf *c)                                                  \
    {                                                                                              \
        return c->field != BANK_UNSET ? c->field : defaults.field;                                 \
    }
GETTER(apr_int64_t, token_lifetime, token_lifetime)
GETTER(int, max_devices, max_devices)
GETTER(int, throttle_attempts, throttle_attempts)
GETTER(apr_int64_t, throttle_window, throttle_window)
GETTER(int, addr_attempts, addr_attempts)
GETTER(apr_int64_t, addr_window, addr_window)
GETTER(int, account_attempts, account_attempts)
GETTER(apr_int64_t, account_window, account_window)
GETTER(int, bvn_attempts, bvn_attempts)
GETTER(apr_int64_t, bvn_window, bvn_window)
GETTER(apr_int64_t, max_body, max_body)
GETTER(apr_int64_t, banks_max_age, banks_max_age)
GETTER(apr_int64_t, token_cache, token_cache)
GETTER(apr_int64_t, bvn_cache, bvn_cache)

const char *bank_conf_account_bank(const bank_dir_conf *c)
{
    return c->account_bank ? c->account_bank : defaults.account_bank;
}

const char *bank_conf_account_bank_code(const bank_dir_conf *c)
{
    return c->account_bank_code ? c->account_bank_code : defaults.account_bank_code;
}

void bank_conf_idp(const bank_dir_conf *c, bank_idp_conf_t *out)
{
    out->kind = c->idp_kind != BANK_UNSET ? (bank_idp_kind)c->idp_kind : defaults.idp_kind;
    out->base_url = c->idp_url ? c->idp_url : bank_idp_default_url(out->kind);
    out->app_id = c->idp_app_id;
    out->secret = c->idp_secret;
    out->timeout = c->idp_timeout != BANK_UNSET ? c->idp_timeout : defaults.idp_timeout;
    out->proxy = c->idp_proxy && *c->idp_proxy ? c->idp_proxy : NULL;
}

const char *bank_location(request_rec *r)
{
    /* core's own record of the section that applied last: ours is only created for sections
     * that hold one of our directives, and SetHandler alone is core's */
    const core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    if (!d || !d->d || d->r || d->d_is_fnmatch || d->d[0] != '/') {
        return NULL;
    }
    return d->d;
}

const char *bank_conf_partner(request_rec *r, const bank_dir_conf *c)
{
    const char *loc, *end, *start;
    if (c->partner) {
        return c->partner;
    }
    /* Default: the last non-empty segment of the <Location> path: /webhook/paystack and
     * /webhook/paystack/ both name "paystack" (two partners must never share a name, or
     * their notices would count as each other's duplicates). */
    loc = bank_location(r);
    if (loc) {
        for (end = loc + strlen(loc); end > loc && end[-1] == '/'; end--) {
        }
        for (start = end; start > loc && start[-1] != '/'; start--) {
        }
        if (end > start) {
            return apr_pstrmemdup(r->pool, start, (apr_size_t)(end - start));
        }
    }
    return defaults.partner;
}
