/* mod_bank: module registration, hooks and the handler names the operator maps to URLs
 * with SetHandler (docs/configuration.md). Routing is httpd's: r->uri is only compared with the
 * Location that already matched, to refuse paths below it (404, docs/api.md). */
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__ /* defined by the headers above */
#include <malloc.h>
#endif
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <apr_env.h>
#include <httpd.h>
#include <http_config.h>
#include <http_protocol.h>
#include <http_request.h>
#include <ap_mpm.h>
#include <http_core.h>
#include <openssl/crypto.h>
#include "mod_bank.h"
#include "bank_digest.h"
#include "mod_bank_config.h"
#include "mod_bank_http.h"
#include "mod_bank_log.h"
#include "mod_bank_db.h"
#include "mod_bank_dbd.h"
#include "mod_bank_banks.h"
#include "mod_bank_bvn.h"
#include "mod_bank_identity.h"
#include "mod_bank_sign_in.h"
#include "mod_bank_webhook.h"
#include "mod_bank_health.h"
#include "mod_bank_idp.h"
#include "mod_bank_verify.h"
#include "mod_bank_auth.h"
#include "mod_bank_metrics.h"
#include "mod_bank_sign_out.h"
#include "mod_bank_push.h"
#include "mod_bank_token_uses.h"

static const struct {
    const char *name;
    int (*fn)(request_rec *r);
    bank_endpoint_t endpoint; /* for the metrics; BANK_EP_NONE: not counted */
} handlers[] = {
    {"bank-sign-in", bank_sign_in_handler, BANK_EP_SIGN_IN},
    {"bank-sign-out", bank_sign_out_handler, BANK_EP_SIGN_OUT},
    {"bank-bvn", bank_bvn_handler, BANK_EP_BVN},
    {"bank-banks", bank_banks_handler, BANK_EP_BANKS},
    {"bank-webhook", bank_webhook_handler, BANK_EP_WEBHOOK},
    {"bank-error", bank_error_document_handler, BANK_EP_NONE},
    {"bank-metrics", bank_metrics_handler, BANK_EP_NONE},
    {"bank-health", bank_health_handler, BANK_EP_NONE},
};

/* A <Location /x> also catches /x/anything: each endpoint serves its own path (and a
 * trailing slash) only. Routing stays httpd's; this only refuses what no endpoint serves.
 * Regex and wildcard sections are left to the operator's pattern. */
static int serves_path(request_rec *r)
{
    const char *loc = bank_location(r);
    apr_size_t n;

    if (!loc) {
        return 1;
    }
    n = strlen(loc);
    while (n > 1 && loc[n - 1] == '/') {
        n--;
    }
    if (strncmp(r->uri, loc, n) != 0) {
        return 1; /* reached some other way (an alias, a sub-request): not ours to judge */
    }
    return r->uri[n] == '\0' || (r->uri[n] == '/' && r->uri[n + 1] == '\0');
}

/* Seconds a client waits while this module refuses the database's schema. */
#define SCHEMA_RETRY_AFTER 60

static int bank_handler(request_rec *r)
{
    apr_size_t i;
    if (!r->handler) {
        return DECLINED;
    }
    for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
        if (!strcmp(r->handler, handlers[i].name)) {
            /* a schema this module cannot serve on (BANK1708, BANK1710 at a restart): the
             * endpoints that read or write it answer 503; health, metrics and errors do not */
            int rc = !serves_path(r) ? bank_error(r, BANK_E_ROUTE_NOT_FOUND, NULL, NULL)
                     : handlers[i].endpoint != BANK_EP_NONE && bank_identity_schema_refused()
                         ? bank_error_unavailable(r, NULL, SCHEMA_RETRY_AFTER)
                         : handlers[i].fn(r);
            bank_metrics_request(r, handlers[i].endpoint, rc);
            return rc;
        }
    }
    return DECLINED;
}

/* mod_bank's endpoints have no file behind them: skip httpd's directory and file walk (a
 * stat() and .htaccess lookups per path segment, seen with strace) for requests SetHandler
 * maps to one of ours, as mod_proxy does. <Location> configuration still applies;
 * <Directory> sections and .htaccess files do not (docs/configuration.md). The handler is
 * read in translate_name, after the <Location> walk: httpd gives map_to_storage the
 * server's defaults only, where a SetHandler inside <Location> is not seen. Last among
 * translate_name hooks, so a URL that mod_alias or mod_rewrite maps keeps its walk. */
#define NOTE_NO_FILE "bank-no-file"
static int bank_translate_name(request_rec *r)
{
    core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    const char *err = NULL, *h;

    if (d->expr_handler) {
        h = ap_expr_str_exec(r, d->expr_handler, &err);
        if (!err && h && !strncmp(h, "bank-", 5)) {
            apr_table_setn(r->notes, NOTE_NO_FILE, "1");
        }
    }
    return DECLINED;
}

static int bank_map_to_storage(request_rec *r)
{
    return apr_table_get(r->notes, NOTE_NO_FILE) ? OK : DECLINED;
}

static void bank_optional_fn_retrieve(void)
{
    bank_db_retrieve_optional();
}

/* 1 if BankClientKey is set for server s itself or in any of its <Location> sections. */
static int server_has_client_key(server_rec *s)
{
    const bank_dir_conf *c = ap_get_module_config(s->lookup_defaults, &bank_module);
    core_server_config *sconf = ap_get_core_module_config(s->module_config);
    ap_conf_vector_t **sec = (ap_conf_vector_t **)sconf->sec_url->elts;
    int i;

    if (c && c->client_keys) {
        return 1;
    }
    for (i = 0; i < sconf->sec_url->nelts; i++) {
        c = ap_get_module_config(sec[i], &bank_module);
        if (c && c->client_keys) {
            return 1;
        }
    }
    return 0;
}

/* docs/configuration.md: without BankClientKey sign-in takes no client key, and start-up says so,
 * for each server (virtual host) on its own: a key in one must not hide another's lack of one.
 * Only servers with a database mod_bank serves from (bank_dbd_server_bank: their own or
 * inherited): sign-in cannot work without one, and a server with none (Debian's main server and
 * default site beside the package's) maps no mod_bank endpoint. Which handler SetHandler maps
 * cannot be read at start-up (httpd keeps it as a compiled expression). */
static void warn_unkeyed_servers(server_rec *s)
{
    server_rec *sp;
    const char *driver, *params;

    for (sp = s; sp; sp = sp->next) {
        if (!server_has_client_key(sp) && bank_dbd_server_bank(sp, &driver, &params)) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, sp,
                         BANKLOGNO(0001) "BankClientKey is not set for server %s:%u: sign-in "
                                         "there accepts requests without a client key",
                         sp->server_hostname ? sp->server_hostname : "(unnamed)",
                         (unsigned)sp->port);
        }
    }
}

static int bank_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s)
{
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;
    }
    warn_unkeyed_servers(s);
    bank_digest_init(pconf);
    bank_idp_post_config(pconf, s);
    bank_metrics_post_config(pconf, s);
    bank_verify_post_config(pconf, s);
    if (bank_db_turn_post_config(pconf, s) != OK || bank_push_post_config(pconf, s) != OK ||
        bank_identity_post_config(pconf, ptemp, s) != OK) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if (bank_db_post_config(pconf, plog, ptemp, s) != OK) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    bank_health_post_config(s);
    return OK;
}

static int bank_check_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s)
{
    int rc = bank_push_check_config(pconf, s);

    (void)plog;
    return rc != OK ? rc : bank_identity_check_config(ptemp, s);
}

static int bank_pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp)
{
    (void)plog;
    (void)ptemp;
    bank_push_pre_config();
    return bank_db_turn_pre_config(pconf);
}

/* A child of an httpd started from a root shell keeps HOME=/root, which httpd's User cannot
 * enter; libpq then fails every TLS connection looking for a client certificate under it
 * (docs/deployment.md). Such a HOME is dropped before mod_dbd opens a connection, and libpq
 * uses the User's own home directory instead. */
static void bank_child_home(apr_pool_t *p, server_rec *s)
{
    const char *home = NULL;

    if (apr_env_get((char **)&home, "HOME", p) == APR_SUCCESS && home && *home &&
        access(home, X_OK) != 0) {
        apr_env_delete("HOME", p);
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s,
                     BANKLOGNO(1502) "HOME %s cannot be entered by this process: unset, so "
                                     "libpq looks in the User's home directory",
                     home);
    }
}

/* glibc's fast bins off in each child, before any module starts a thread (docs/deployment.md,
 * "glibc's fast bins"): libpq makes each result in blocks of 2 KiB from malloc, and glibc
 * merges every small chunk freed into its fast bins (json-c's, libpq's) before it serves a
 * request that large. Small requests are still served from each thread's cache. An
 * operator's own GLIBC_TUNABLES setting of it wins. */
static void bank_child_malloc(apr_pool_t *p, server_rec *s)
{
#if defined(__GLIBC__) && defined(M_MXFAST)
    const char *t = getenv("GLIBC_TUNABLES");

    if (t && strstr(t, "malloc.mxfast")) {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s,
                     BANKLOGNO(2303) "glibc's fast bins left as GLIBC_TUNABLES sets them "
                                     "(glibc.malloc.mxfast) in process %" APR_PID_T_FMT,
                     getpid());
    } else {
        (void)mallopt(M_MXFAST, 0); /* 0 is always within glibc's range: it cannot refuse */
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s,
                     BANKLOGNO(2301) "glibc's fast bins off in process %" APR_PID_T_FMT, getpid());
    }
#else
    (void)s;
#endif
    (void)p;
}

/* Linux 6.16 and later give each process a private futex hash of its own, sized by the CPUs
 * (16 slots on 2), not by the threads: the MPM's idle threads all wait on one futex, so with
 * thousands of them every wake-up whose futex shares that slot walks past each (perf:
 * futex_wake, high in the webhook's commits). Set before the MPM starts its threads: a slot for
 * every 4 threads (docs/deployment.md, "Holding connections", has the figures). Older
 * kernels (one hash for the whole machine) refuse the call; nothing changes there. */
#ifndef PR_FUTEX_HASH
#define PR_FUTEX_HASH 78
#define PR_FUTEX_HASH_SET_SLOTS 1
#define PR_FUTEX_HASH_GET_SLOTS 2
#endif
static void bank_child_futex(apr_pool_t *p, server_rec *s)
{
#ifdef __linux__
    int threads = 0;
    unsigned long slots = 16;

    (void)p;
    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS || threads < 64) {
        return;
    }
    while (slots < (unsigned long)threads / 4 && slots < 65536) {
        slots <<= 1;
    }
    if (prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, slots, 0, 0) == 0) {
        ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s,
                     BANKLOGNO(2304) "futex hash of process %" APR_PID_T_FMT ": %d slots for "
                                     "%d threads",
                     getpid(), prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0), threads);
    }
#else
    (void)p;
    (void)s;
#endif
}

static void bank_child_init(apr_pool_t *p, server_rec *s)
{
    bank_banks_child_init(p, s);
    bank_health_child_init(p);
    bank_verify_child_init(p, s);
    bank_db_turn_child_init(p, s);
    bank_webhook_child_init(p, s);
    bank_auth_child_init(p, s);
    bank_db_child_init(p, s);
    bank_token_uses_child_init(p, s); /* its cleanup writes through the guard and the pool */
    bank_push_child_init(p, s);       /* last: its cleanup runs first */
}

static void bank_register_hooks(apr_pool_t *p)
{
    /* before mod_dbd's post_config, which hands the prepared statements to its pools */
    static const char *const before_dbd[] = {"mod_dbd.c", NULL};
    (void)p;
    mod_bank_log_install();
    ap_hook_optional_fn_retrieve(bank_optional_fn_retrieve, NULL, NULL, APR_HOOK_MIDDLE);
    bank_db_register_hooks();
    bank_metrics_register_hooks();
    ap_hook_pre_config(bank_pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(bank_post_config, NULL, before_dbd, APR_HOOK_MIDDLE);
    ap_hook_child_init(bank_child_malloc, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_child_init(bank_child_home, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_child_init(bank_child_futex, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_check_config(bank_check_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(bank_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_translate_name(bank_translate_name, NULL, NULL, APR_HOOK_LAST);
    ap_hook_map_to_storage(bank_map_to_storage, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_handler(bank_handler, NULL, NULL, APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(bank) = {
    STANDARD20_MODULE_STUFF, bank_create_dir_conf, bank_merge_dir_conf, NULL, NULL, bank_cmds,
    bank_register_hooks,
};
