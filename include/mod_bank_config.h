/* The per-directory configuration, the getters that supply the defaults (mod_bank_config.c) and
 * the directives that fill it (mod_bank_directives.c). */
#ifndef MOD_BANK_CONFIG_H
#define MOD_BANK_CONFIG_H

#include <httpd.h>
#include <http_config.h>
#include <apr_tables.h>
#include "mod_bank_verify.h"
#include "bank_idp.h"
#include "bank_notice.h"

/* Per-directory configuration. Unset fields hold BANK_UNSET / NULL and are merged the httpd
 * way (the more specific <Location> wins); handlers read them through the getters below,
 * which supply the defaults. */
#define BANK_UNSET (-1)
typedef struct {
    apr_array_header_t *client_keys;     /* BankClientKey: const char * */
    apr_int64_t token_lifetime;          /* BankTokenLifetime, seconds */
    int max_devices;                     /* BankMaxDevices */
    int throttle_attempts;               /* BankSignInThrottle */
    apr_int64_t throttle_window;         /* seconds */
    int addr_attempts;                   /* BankSignInAddressThrottle */
    apr_int64_t addr_window;             /* seconds */
    int account_attempts;                /* BankSignInAccountThrottle */
    apr_int64_t account_window;          /* seconds */
    int bvn_attempts;                    /* BankBvnThrottle */
    apr_int64_t bvn_window;              /* seconds */
    apr_int64_t max_body;                /* BankMaxBody, bytes */
    apr_int64_t banks_max_age;           /* BankBanksMaxAge, seconds */
    const char *account_bank;            /* BankAccountBank */
    const char *account_bank_code;       /* BankAccountBankCode */
    apr_array_header_t *webhook_secrets; /* BankWebhookSecret: const char * */
    const char *sig_header;              /* BankWebhookSignature */
    const bank_notice_key_t *sig_key;    /* its algorithm and key, made ready once */
    const char *partner;                 /* BankWebhookPartner */
    int sig_set;                         /* BankWebhookSignature given here */
    int idp_kind;                        /* BankBvnProvider: a bank_idp_kind, or BANK_UNSET */
    const char *idp_url;                 /* its BASE-URL (NULL: the provider's own) */
    const char *idp_app_id;              /* BankBvnProviderCredentials */
    const char *idp_secret;
    int idp_timeout;           /* BankBvnProviderTimeout, seconds */
    bank_verifier_t *verifier; /* BankPasswordVerifyConcurrency; NULL: the default */
    apr_int64_t token_cache;   /* BankTokenCacheSeconds */
    apr_int64_t bvn_cache;     /* BankBvnCacheSeconds */
    const char *idp_proxy;     /* BankBvnProviderProxy; "" none, NULL unset */
} bank_dir_conf;

/* mod_bank_directives.c */
extern const command_rec bank_cmds[];

void *bank_create_dir_conf(apr_pool_t *p, char *dir);
void *bank_merge_dir_conf(apr_pool_t *p, void *base, void *add);

bank_dir_conf *bank_conf(request_rec *r);
apr_int64_t bank_conf_token_lifetime(const bank_dir_conf *c);
int bank_conf_max_devices(const bank_dir_conf *c);
int bank_conf_throttle_attempts(const bank_dir_conf *c);
apr_int64_t bank_conf_throttle_window(const bank_dir_conf *c);
int bank_conf_addr_attempts(const bank_dir_conf *c);
int bank_conf_account_attempts(const bank_dir_conf *c);
apr_int64_t bank_conf_account_window(const bank_dir_conf *c);
apr_int64_t bank_conf_addr_window(const bank_dir_conf *c);
int bank_conf_bvn_attempts(const bank_dir_conf *c);
apr_int64_t bank_conf_bvn_window(const bank_dir_conf *c);
apr_int64_t bank_conf_max_body(const bank_dir_conf *c);
apr_int64_t bank_conf_banks_max_age(const bank_dir_conf *c);
apr_int64_t bank_conf_token_cache(const bank_dir_conf *c);
apr_int64_t bank_conf_bvn_cache(const bank_dir_conf *c);
const char *bank_conf_account_bank(const bank_dir_conf *c);
const char *bank_conf_account_bank_code(const bank_dir_conf *c);
const char *bank_conf_partner(request_rec *r, const bank_dir_conf *c);
/* The path of the <Location> that maps this request (NULL for regex sections). */
const char *bank_location(request_rec *r);

/* The Location's BankBvnProvider* settings with their defaults. */
void bank_conf_idp(const bank_dir_conf *c, bank_idp_conf_t *out);

#endif
