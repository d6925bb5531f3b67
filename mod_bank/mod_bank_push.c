/* Push notifications, httpd side (docs/push.md): the server-wide BankPush* settings, and the
 * sender's host. The sender's rounds (bank_push_sender.c) run in a mod_watchdog callback of
 * an instance of its own in every child process, as mod_md and mod_proxy_hcheck run their
 * background work: httpd starts and stops the thread with the process. */
#include <httpd.h>
#include <http_config.h>

#include <string.h>
#include <apr_shm.h>
#include <apr_strings.h>
#include <apr_optional.h>
#include <http_log.h>
#include <mod_watchdog.h>
#include "mod_bank.h"
#include "mod_bank_push.h"
#include "mod_bank_db.h"
#include "mod_bank_log.h"
#include "bank_push_sender.h"

APLOG_USE_MODULE(bank);

#define PUSH_WATCHDOG "bank-push"
/* How long the sender waits for the write turn on SQLite before it writes without it. */
#define PUSH_TURN_WAIT apr_time_from_sec(1)

static struct {
    int on;
    const char *credentials; /* the file, for the start-up line */
    bank_push_account_t account;
    int have_account;
    bank_push_sender_host host; /* the sender's settings and callbacks */
} conf;

/* This configuration's sender (each process its own copy). */
static bank_push_sender_t *sender = NULL;
static mod_bank_where_t where; /* the sender's messages: the main server's log */

/* ---- the sender's host (bank_push_sender.h) ---- */

static bank_db_t *host_connect(void *baton, apr_pool_t *parent, apr_pool_t **lease)
{
    return bank_db_background(baton, parent, lease);
}

static int host_ready(void *baton)
{
    (void)baton;
    return bank_db_background_ready();
}

/* The notices' commit turn (bank_db_turn_take), for the sender's writes on SQLite. */
static int host_turn_take(void *baton)
{
    apr_interval_time_t waited = 0;
    apr_status_t rv = bank_db_turn_take(PUSH_TURN_WAIT, &waited);

    if (rv != APR_SUCCESS && rv != APR_ENOLOCK) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, baton,
                     BANKLOGNO(1817) "push: no write turn after %" APR_TIME_T_FMT
                                     " ms; writing without it",
                     apr_time_as_msec(waited));
    }
    return rv == APR_SUCCESS;
}

static void host_turn_give(void *baton)
{
    (void)baton;
    bank_db_turn_give();
}

void bank_push_pre_config(void)
{
    memset(&conf, 0, sizeof(conf));
    conf.host.fcm.timeout = BANK_PUSH_TIMEOUT_DEFAULT;
    conf.host.fcm.account = &conf.account;
    conf.host.attempts = BANK_PUSH_ATTEMPTS_DEFAULT;
    conf.host.spare_cpu = BANK_PUSH_SPARE_CPU_DEFAULT;
    conf.host.where = &where;
    conf.host.connect = host_connect;
    conf.host.ready = host_ready;
    conf.host.turn_take = host_turn_take;
    conf.host.turn_give = host_turn_give;
    sender = NULL; /* the previous configuration's, gone with its pool */
}

const char *bank_push_set_fcm(cmd_parms *cmd, const char *kind, const char *project,
                              const char *url)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY), *why;

    if (err) {
        return err;
    }
    if ((why = bank_push_fcm_check(cmd->pool, kind, project, url, &conf.host.fcm.base_url))) {
        return apr_psprintf(cmd->pool, "%s: %s", cmd->cmd->name, why);
    }
    conf.on = 1;
    conf.host.fcm.project = apr_pstrdup(cmd->pool, project);
    return NULL;
}

/* Read now, as the user httpd starts as; the key is never repeated in a message. */
const char *bank_push_set_credentials(cmd_parms *cmd, const char *path)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY), *full, *why;

    if (err) {
        return err;
    }
    full = ap_server_root_relative(cmd->pool, path);
    if (!full || (why = bank_push_account_file(cmd->pool, full, &conf.account)) != NULL) {
        return apr_psprintf(cmd->pool, "%s: the file %s: %s", cmd->cmd->name, path,
                            full ? why : "bad path");
    }
    conf.credentials = full;
    conf.have_account = 1;
    return NULL;
}

void bank_push_set_attempts(int n)
{
    conf.host.attempts = n;
}

void bank_push_set_timeout(int seconds)
{
    conf.host.fcm.timeout = seconds;
}

void bank_push_set_spare_cpu(int percent)
{
    conf.host.spare_cpu = percent;
}

int bank_push_check_config(apr_pool_t *pconf, server_rec *s)
{
    (void)pconf;
    if (conf.on && !conf.have_account) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, s,
                     BANKLOGNO(1801) "BankPush fcm %s needs BankPushCredentials (the Google "
                                     "service account's key file)",
                     conf.host.fcm.project);
        return !OK;
    }
    return OK;
}

void bank_push_wake(void)
{
    if (sender) {
        bank_push_sender_wake(sender);
    }
}

const char *bank_push_status(void)
{
    if (!conf.on) {
        return "none";
    }
    return bank_push_sender_behind(&conf.host, apr_time_now()) ? "backlog" : "ok";
}

/* A process that exits waits for its sender's round to end. */
static apr_status_t round_end(void *data)
{
    bank_push_sender_stop(data);
    return APR_SUCCESS;
}

void bank_push_child_init(apr_pool_t *pchild, server_rec *s)
{
    (void)s;
    if (conf.on && sender) {
        /* a pre-cleanup: before mod_dbd's connections (in a sub-pool) are closed */
        apr_pool_pre_cleanup_register(pchild, sender, round_end);
    }
}

/* mod_watchdog's callback: the thread's start and end, and each tick (AP_WD_TM_SLICE). */
static apr_status_t sender_tick(int state, void *data, apr_pool_t *pool)
{
    (void)data;
    (void)pool; /* cleared after each call: the sender has a pool of its own */
    if (state == AP_WATCHDOG_STATE_STARTING) {
        bank_push_sender_start(sender);
    } else if (state == AP_WATCHDOG_STATE_STOPPING) {
        bank_push_sender_end(sender);
    } else {
        bank_push_sender_tick(sender);
    }
    return APR_SUCCESS;
}

int bank_push_post_config(apr_pool_t *pconf, server_rec *s)
{
    APR_OPTIONAL_FN_TYPE(ap_watchdog_get_instance) * get_instance;
    APR_OPTIONAL_FN_TYPE(ap_watchdog_register_callback) * register_callback;
    ap_watchdog_t *wd = NULL;
    apr_shm_t *shm = NULL;
    apr_status_t rv;

    if (!conf.on) {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s,
                     BANKLOGNO(1811) "push notifications are off (no BankPush)");
        return OK;
    }
    get_instance = APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_get_instance);
    register_callback = APR_RETRIEVE_OPTIONAL_FN(ap_watchdog_register_callback);
    if (!get_instance || !register_callback) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
                     BANKLOGNO(1812) "BankPush needs mod_watchdog (LoadModule watchdog_module, "
                                     "unless it is compiled in)");
        return !OK;
    }
    /* One breaker and one "last empty" for all the processes: anonymous shared memory made
     * before the fork, gone with pconf. */
    if (apr_shm_create(&shm, bank_push_sender_shared_size(), NULL, pconf) == APR_SUCCESS) {
        bank_push_sender_share(&conf.host, apr_shm_baseaddr_get(shm), apr_time_now());
    }
    bank_idp_global_init();
    where.s = s;
    conf.host.baton = s;
    sender = bank_push_sender_create(pconf, &conf.host);
    /* parent 0: a thread in every child process; not a singleton: each process sends what its
     * webhook wrote at once, and the claims keep the senders apart. */
    if ((rv = get_instance(&wd, PUSH_WATCHDOG, 0, 0, pconf)) != APR_SUCCESS ||
        (rv = register_callback(wd, AP_WD_TM_SLICE, s, sender_tick)) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_EMERG, rv, s,
                     BANKLOGNO(1813) "push: cannot start the sender's watchdog");
        return !OK;
    }
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                 BANKLOGNO(1814) "push notifications on: FCM project %s at %s, service account "
                                 "%s (token_uri %s), %d attempts, %d s per call",
                 conf.host.fcm.project, conf.host.fcm.base_url, conf.account.client_email,
                 conf.account.token_uri, conf.host.attempts, conf.host.fcm.timeout);
    return OK;
}
