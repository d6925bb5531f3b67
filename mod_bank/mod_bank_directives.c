/* The configuration directives (docs/configuration.md): their table and handlers, parsed by one
 * family of validators, so every bad value stops httpd with a message naming the directive. The
 * per-directory configuration they fill, its merge and its getters are mod_bank_config.c's. */
#include <errno.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <http_core.h>
#include <apr_file_io.h>
#include <openssl/crypto.h>
#include "mod_bank.h"
#include "mod_bank_config.h"
#include "mod_bank_db.h"
#include "bank_limits.h"
#include "bank_nuban.h"
#include "bank_validate.h"
#include "bank_idp.h"
#include "bank_notice.h"
#include "bank_sign_in.h"
#include "mod_bank_push.h"
#include "bank_push.h"
#include "mod_bank_identity.h"

/* ---------- the shared validators ---------------------------------------------------------- */

static const char *parse_int(cmd_parms *cmd, const char *arg, apr_int64_t min, apr_int64_t max,
                             apr_int64_t *out)
{
    char *end = NULL;
    apr_int64_t v;

    errno = 0;
    v = apr_strtoi64(arg, &end, 10);
    if (!*arg || errno || *end || v < min || v > max || !apr_isdigit(arg[0])) {
        return apr_psprintf(cmd->pool,
                            "%s: expected a whole number from %" APR_INT64_T_FMT
                            " to %" APR_INT64_T_FMT ", got '%s'",
                            cmd->cmd->name, min, max, arg);
    }
    *out = v;
    return NULL;
}

/* Bearer values must be RFC 6750 token68 characters, so a client can send them as written. */
static const char *check_secret(cmd_parms *cmd, const char *arg)
{
    const char *c;
    if (strlen(arg) < 8) {
        return apr_psprintf(cmd->pool, "%s: a key must have at least 8 characters", cmd->cmd->name);
    }
    for (c = arg; *c; c++) {
        if (!apr_isalnum(*c) && !strchr("-._~+/=", *c)) {
            return apr_psprintf(cmd->pool,
                                "%s: a key may hold only letters, digits and -._~+/= "
                                "(RFC 6750 token68)",
                                cmd->cmd->name);
        }
    }
    return NULL;
}

/* Which characters a name may hold, besides letters and digits (NULL: any but control
 * characters). */
#define NAME_ANY NULL
#define NAME_PARTNER "-_"
#define NAME_HEADER "!#$%&'*+-.^_`|~" /* an HTTP field name: RFC 9110 token characters */

/* 1 to max characters (UTF-8 code points), no control character, and with extra set only
 * letters, digits and the characters in extra. */
static const char *check_name(cmd_parms *cmd, const char *arg, apr_size_t max, const char *extra)
{
    const char *c;
    if (!*arg || bank_utf8_length(arg) > max) {
        return apr_psprintf(cmd->pool, "%s: expected 1 to %" APR_SIZE_T_FMT " characters",
                            cmd->cmd->name, max);
    }
    for (c = arg; *c; c++) {
        if (apr_iscntrl(*c) || (extra && !apr_isalnum(*c) && !strchr(extra, *c))) {
            return apr_psprintf(cmd->pool, "%s: '%s' holds a character not allowed here%s%s%s",
                                cmd->cmd->name, arg, extra ? " (letters, digits and " : "",
                                extra ? extra : "", extra ? " only)" : "");
        }
    }
    return NULL;
}

/* An HMAC key is given to us by the partner, so any printable characters are taken, at
 * least 8 of them; "file:PATH" reads it from a file when httpd reads its configuration (as
 * root, before it drops privileges), so the key need not sit in httpd.conf. */
#define HMAC_KEY_MIN 8
#define HMAC_KEY_MAX 4096
#define HMAC_KEY_FILE "file:"

static const char *check_hmac_key(cmd_parms *cmd, const char *key)
{
    const char *c;
    apr_size_t n = strlen(key);
    if (n < HMAC_KEY_MIN || n > HMAC_KEY_MAX) {
        return apr_psprintf(cmd->pool, "%s: the key must have %d to %d bytes", cmd->cmd->name,
                            HMAC_KEY_MIN, HMAC_KEY_MAX);
    }
    for (c = key; *c; c++) {
        if (!apr_isgraph(*c)) {
            return apr_psprintf(cmd->pool,
                                "%s: the key may hold only printable ASCII characters, no "
                                "space or control character",
                                cmd->cmd->name);
        }
    }
    return NULL;
}

/* The key in file path: owner-only permissions, one line (a final newline is dropped). */
static const char *read_hmac_key(cmd_parms *cmd, const char *path, const char **key)
{
    const char *file = ap_server_root_relative(cmd->pool, path);
    apr_finfo_t fi;
    apr_file_t *f = NULL;
    char buf[HMAC_KEY_MAX + 2];
    apr_size_t n = sizeof(buf) - 1;
    apr_status_t rv;

    if (!file || (rv = apr_stat(&fi, file, APR_FINFO_PROT | APR_FINFO_TYPE, cmd->temp_pool)) !=
                     APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "%s: cannot read the key file %s", cmd->cmd->name, path);
    }
    if (fi.filetype != APR_REG ||
        (fi.protection & (APR_GREAD | APR_GWRITE | APR_WREAD | APR_WWRITE))) {
        return apr_psprintf(cmd->pool,
                            "%s: the key file %s must be a regular file that only its owner "
                            "can read (chmod 600)",
                            cmd->cmd->name, path);
    }
    if ((rv = apr_file_open(&f, file, APR_FOPEN_READ, 0, cmd->temp_pool)) != APR_SUCCESS ||
        ((rv = apr_file_read_full(f, buf, n, &n)) != APR_SUCCESS && rv != APR_EOF)) {
        return apr_psprintf(cmd->pool, "%s: cannot read the key file %s", cmd->cmd->name, path);
    }
    apr_file_close(f);
    buf[n] = '\0';
    if (n && buf[n - 1] == '\n') {
        buf[--n] = '\0';
    }
    if (n && buf[n - 1] == '\r') {
        buf[--n] = '\0';
    }
    *key = apr_pstrmemdup(cmd->temp_pool, buf, n); /* wiped by the caller */
    OPENSSL_cleanse(buf, sizeof(buf));
    return NULL;
}

/* ---------- directive handlers -------------------------------------------------------------- */

/* Appends one checked secret of a rotation list (BankClientKey, BankWebhookSecret). */
static const char *add_secret(cmd_parms *cmd, apr_array_header_t **list, const char *arg)
{
    const char *err = check_secret(cmd, arg);
    if (err) {
        return err;
    }
    if (!*list) {
        *list = apr_array_make(cmd->pool, 2, sizeof(const char *));
    }
    *(const char **)apr_array_push(*list) = apr_pstrdup(cmd->pool, arg);
    return NULL;
}

static const char *set_client_key(cmd_parms *cmd, void *cfg, const char *arg)
{
    return add_secret(cmd, &((bank_dir_conf *)cfg)->client_keys, arg);
}

static const char *set_webhook_secret(cmd_parms *cmd, void *cfg, const char *arg)
{
    return add_secret(cmd, &((bank_dir_conf *)cfg)->webhook_secrets, arg);
}

static const char *set_token_lifetime(cmd_parms *cmd, void *cfg, const char *arg)
{
    return parse_int(cmd, arg, BANK_TOKEN_TTL_MIN, BANK_TOKEN_TTL_MAX,
                     &((bank_dir_conf *)cfg)->token_lifetime);
}

static const char *set_max_devices(cmd_parms *cmd, void *cfg, const char *arg)
{
    apr_int64_t n = 0;
    const char *err = parse_int(cmd, arg, 1, BANK_MAX_DEVICES_MAX, &n);

    if (!err) {
        ((bank_dir_conf *)cfg)->max_devices = (int)n;
    }
    return err;
}

static const char *set_max_body(cmd_parms *cmd, void *cfg, const char *arg)
{
    return parse_int(cmd, arg, 2, 16777216, &((bank_dir_conf *)cfg)->max_body);
}

static const char *set_banks_max_age(cmd_parms *cmd, void *cfg, const char *arg)
{
    return parse_int(cmd, arg, 0, 31536000, &((bank_dir_conf *)cfg)->banks_max_age);
}

static const char *set_token_cache(cmd_parms *cmd, void *cfg, const char *arg)
{
    return parse_int(cmd, arg, 0, BANK_TOKEN_CACHE_MAX, &((bank_dir_conf *)cfg)->token_cache);
}

static const char *set_bvn_cache(cmd_parms *cmd, void *cfg, const char *arg)
{
    return parse_int(cmd, arg, 0, BANK_TOKEN_CACHE_MAX, &((bank_dir_conf *)cfg)->bvn_cache);
}

/* ATTEMPTS SECONDS of a throttle: 1..1000000 failures per 1 s..30 days. */
static const char *parse_throttle(cmd_parms *cmd, const char *attempts, const char *seconds,
                                  int *n_out, apr_int64_t *window_out)
{
    apr_int64_t n;
    const char *err = parse_int(cmd, attempts, 1, 1000000, &n);
    if (err) {
        return err;
    }
    *n_out = (int)n;
    return parse_int(cmd, seconds, 1, 2592000, window_out);
}

static const char *set_throttle(cmd_parms *cmd, void *cfg, const char *attempts,
                                const char *seconds)
{
    bank_dir_conf *c = cfg;
    return parse_throttle(cmd, attempts, seconds, &c->throttle_attempts, &c->throttle_window);
}

static const char *set_addr_throttle(cmd_parms *cmd, void *cfg, const char *attempts,
                                     const char *seconds)
{
    bank_dir_conf *c = cfg;
    return parse_throttle(cmd, attempts, seconds, &c->addr_attempts, &c->addr_window);
}

static const char *set_account_throttle(cmd_parms *cmd, void *cfg, const char *attempts,
                                        const char *seconds)
{
    bank_dir_conf *c = cfg;
    return parse_throttle(cmd, attempts, seconds, &c->account_attempts, &c->account_window);
}

static const char *set_bvn_throttle(cmd_parms *cmd, void *cfg, const char *attempts,
                                    const char *seconds)
{
    bank_dir_conf *c = cfg;
    return parse_throttle(cmd, attempts, seconds, &c->bvn_attempts, &c->bvn_window);
}

static const char *set_account_bank(cmd_parms *cmd, void *cfg, const char *arg)
{
    const char *err = check_name(cmd, arg, 100, NAME_ANY);
    if (!err) {
        ((bank_dir_conf *)cfg)->account_bank = apr_pstrdup(cmd->pool, arg);
    }
    return err;
}

static const char *set_account_bank_code(cmd_parms *cmd, void *cfg, const char *arg)
{
    if (!bank_nuban_institution(cmd->pool, arg)) {
        return apr_psprintf(cmd->pool, "%s: expected a CBN bank code of 3, 5 or 6 digits, got '%s'",
                            cmd->cmd->name, arg);
    }
    ((bank_dir_conf *)cfg)->account_bank_code = apr_pstrdup(cmd->pool, arg);
    return NULL;
}

static const char *set_partner(cmd_parms *cmd, void *cfg, const char *arg)
{
    const char *err = check_name(cmd, arg, 64, NAME_PARTNER);
    if (!err) {
        ((bank_dir_conf *)cfg)->partner = apr_pstrdup(cmd->pool, arg);
    }
    return err;
}

/* HEADER sha256|sha512 KEY|file:PATH. The key is made ready for OpenSSL here, once (no
 * request looks the algorithm up); a key read from a file is wiped once it is. */
static const char *set_signature(cmd_parms *cmd, void *cfg, const char *header, const char *alg,
                                 const char *key)
{
    bank_dir_conf *c = cfg;
    const char *err = check_name(cmd, header, 64, NAME_HEADER);
    int bits = !strcasecmp(alg, "sha256") ? 256 : !strcasecmp(alg, "sha512") ? 512 : 0;
    int from_file = !strncmp(key, HMAC_KEY_FILE, strlen(HMAC_KEY_FILE));

    if (err) {
        return err;
    }
    if (!bits) {
        return apr_psprintf(cmd->pool, "%s: the algorithm must be sha256 or sha512, got '%s'",
                            cmd->cmd->name, alg);
    }
    if (from_file && (err = read_hmac_key(cmd, key + strlen(HMAC_KEY_FILE), &key)) != NULL) {
        return err;
    }
    if ((err = check_hmac_key(cmd, key)) == NULL &&
        (c->sig_key = bank_notice_key_make(cmd->pool, bits, key)) == NULL) {
        err = apr_psprintf(cmd->pool, "%s: OpenSSL cannot make an HMAC-SHA-%d key", cmd->cmd->name,
                           bits);
    }
    if (from_file) {
        OPENSSL_cleanse((char *)key, strlen(key));
    }
    if (err) {
        return err;
    }
    c->sig_header = apr_pstrdup(cmd->pool, header);
    c->sig_set = 1;
    return NULL;
}

/* table|dojah|prembly [BASE-URL] */
static const char *set_idp(cmd_parms *cmd, void *cfg, const char *kind, const char *url)
{
    bank_dir_conf *c = cfg;
    bank_idp_kind k;
    const char *why;

    if (bank_idp_kind_parse(kind, &k) != 0) {
        return apr_psprintf(cmd->pool, "%s: expected table, dojah or prembly, got '%s'",
                            cmd->cmd->name, kind);
    }
    if (url && k == BANK_IDP_TABLE) {
        return apr_psprintf(cmd->pool, "%s: table takes no URL", cmd->cmd->name);
    }
    if (url && (why = bank_idp_url_check(cmd->pool, url, &c->idp_url)) != NULL) {
        return apr_psprintf(cmd->pool, "%s: %s, got '%s'", cmd->cmd->name, why, url);
    }
    c->idp_kind = (int)k;
    if (!url) {
        c->idp_url = NULL;
    }
    return NULL;
}

/* APP-ID SECRET, or the path of a file holding them (read now, as root). The values are
 * never repeated in a message. */
static const char *set_idp_credentials(cmd_parms *cmd, void *cfg, const char *a, const char *b)
{
    bank_dir_conf *c = cfg;
    const char *why;

    if (!b) {
        /* "file:PATH" as BankWebhookSignature takes it, or the bare path */
        const char *path = ap_server_root_relative(
            cmd->pool,
            strncmp(a, HMAC_KEY_FILE, strlen(HMAC_KEY_FILE)) ? a : a + strlen(HMAC_KEY_FILE));
        if (!path || (why = bank_idp_credentials_file(cmd->pool, path, &c->idp_app_id,
                                                      &c->idp_secret)) != NULL) {
            return apr_psprintf(cmd->pool, "%s: the file %s: %s", cmd->cmd->name, a,
                                path ? why : "bad path");
        }
        return NULL;
    }
    if ((why = bank_idp_credential_check(a)) != NULL || (why = bank_idp_credential_check(b))) {
        return apr_psprintf(cmd->pool, "%s: %s", cmd->cmd->name, why);
    }
    c->idp_app_id = apr_pstrdup(cmd->pool, a);
    c->idp_secret = apr_pstrdup(cmd->pool, b);
    return NULL;
}

static const char *set_idp_timeout(cmd_parms *cmd, void *cfg, const char *arg)
{
    apr_int64_t v;
    const char *err = parse_int(cmd, arg, 1, BANK_IDP_TIMEOUT_MAX, &v);
    if (!err) {
        ((bank_dir_conf *)cfg)->idp_timeout = (int)v;
    }
    return err;
}

static const char *set_verify_concurrency(cmd_parms *cmd, void *cfg, const char *n,
                                          const char *waiting)
{
    apr_int64_t threads, wait;
    const char *err = parse_int(cmd, n, 1, 256, &threads);

    if (err) {
        return err;
    }
    wait = -1; /* the default, from the MPM's threads (child_init) */
    if (waiting && (err = parse_int(cmd, waiting, 0, 100000, &wait)) != NULL) {
        return err;
    }
    ((bank_dir_conf *)cfg)->verifier = bank_verifier_new(cmd->pool, (int)threads, (int)wait);
    return NULL;
}

/* The server-wide whole-number directives (main server only): a range, "off" where it is
 * allowed (0), and the setter of the module part that keeps the value. */
typedef struct {
    apr_int64_t min, max;
    int off; /* "off" accepted, as 0 */
    void (*set)(apr_pool_t *pconf, int v);
} server_int_t;

static void set_db_timeout_seconds(apr_pool_t *pconf, int seconds)
{
    bank_db_set_timeout(pconf, apr_time_from_sec(seconds));
}

static server_int_t verify_server = {1, BANK_VERIFY_SLOTS_MAX, 1, bank_verify_set_server_slots};
static server_int_t db_timeout = {1, 3600, 1, set_db_timeout_seconds};
static server_int_t verify_max_wait = {1, BANK_VERIFY_MAX_WAIT_MAX, 0, bank_verify_set_max_wait};
static server_int_t dummy_refresh = {1, 86400, 0, bank_sign_in_set_dummy_refresh};

static const char *set_server_int(cmd_parms *cmd, void *cfg, const char *arg)
{
    const server_int_t *n = cmd->info;
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    apr_int64_t v = 0;

    (void)cfg;
    if (!err && !(n->off && strcasecmp(arg, "off") == 0)) {
        err = parse_int(cmd, arg, n->min, n->max, &v);
    }
    if (!err) {
        n->set(cmd->pool, (int)v);
    }
    return err;
}

/* URL|none: the only proxy provider calls go through (the environment's are ignored). */
static const char *set_idp_proxy(cmd_parms *cmd, void *cfg, const char *arg)
{
    const char *why;

    if (!strcasecmp(arg, "none")) {
        ((bank_dir_conf *)cfg)->idp_proxy = "";
        return NULL;
    }
    if ((why = bank_idp_proxy_check(cmd->pool, arg)) != NULL) {
        return apr_psprintf(cmd->pool, "%s: %s, or none; got '%s'", cmd->cmd->name, why, arg);
    }
    ((bank_dir_conf *)cfg)->idp_proxy = apr_pstrdup(cmd->pool, arg);
    return NULL;
}

/* ---- push notifications (server-wide: mod_bank_push.c keeps them) ---- */

static const char *set_push(cmd_parms *cmd, void *cfg, const char *kind, const char *project,
                            const char *url)
{
    (void)cfg;
    return bank_push_set_fcm(cmd, kind, project, url);
}

static const char *set_push_credentials(cmd_parms *cmd, void *cfg, const char *path)
{
    (void)cfg;
    return bank_push_set_credentials(cmd, path);
}

/* BankPushAttempts, BankPushTimeout and BankPushSpareCPU: a whole number within the limits
 * cmd->info gives. */
typedef struct {
    apr_int64_t min, max;
    void (*set)(int);
} push_number_t;
static push_number_t push_attempts = {1, BANK_PUSH_ATTEMPTS_MAX, bank_push_set_attempts};
static push_number_t push_timeout = {1, BANK_PUSH_TIMEOUT_MAX, bank_push_set_timeout};
static push_number_t push_spare_cpu = {0, 100, bank_push_set_spare_cpu};

static const char *set_push_number(cmd_parms *cmd, void *cfg, const char *arg)
{
    const push_number_t *n = cmd->info;
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    apr_int64_t v = 0;

    (void)cfg;
    if (!err && !(err = parse_int(cmd, arg, n->min, n->max, &v))) {
        n->set((int)v);
    }
    return err;
}

#define BANK_CTX (RSRC_CONF | ACCESS_CONF)
const command_rec bank_cmds[] = {
    AP_INIT_ITERATE("BankClientKey", set_client_key, NULL, BANK_CTX,
                    "Keys a client app must send as bearer on sign-in (several for rotation)"),
    AP_INIT_TAKE1("BankTokenLifetime", set_token_lifetime, NULL, BANK_CTX,
                  "Customer token lifetime in seconds (default 86400, min 60)"),
    AP_INIT_TAKE1("BankMaxDevices", set_max_devices, NULL, BANK_CTX,
                  "Devices kept per customer, the least recently signed in on dropped "
                  "(default 10)"),
    AP_INIT_TAKE2("BankSignInThrottle", set_throttle, NULL, BANK_CTX,
                  "Failed sign-ins allowed per e-mail and IP, and the window in seconds "
                  "(default 5 60)"),
    AP_INIT_TAKE2("BankSignInAddressThrottle", set_addr_throttle, NULL, BANK_CTX,
                  "Failed sign-ins allowed per client IP whatever the e-mail, and the window in "
                  "seconds (default 50 300)"),
    AP_INIT_TAKE2("BankSignInAccountThrottle", set_account_throttle, NULL, BANK_CTX,
                  "Failed sign-ins allowed per e-mail from every address together, and the "
                  "window in seconds (default 50 3600)"),
    AP_INIT_TAKE2("BankBvnThrottle", set_bvn_throttle, NULL, BANK_CTX,
                  "Failed BVN checks allowed per customer, and the window in seconds "
                  "(default 5 86400)"),
    AP_INIT_TAKE1("BankMaxBody", set_max_body, NULL, BANK_CTX,
                  "Request body cap in bytes (default 65536)"),
    AP_INIT_TAKE1("BankBanksMaxAge", set_banks_max_age, NULL, BANK_CTX,
                  "Bank list cache lifetime in seconds (default 300)"),
    AP_INIT_TAKE1("BankAccountBank", set_account_bank, NULL, BANK_CTX,
                  "Name of the institution holding customer accounts (default mod_bank Demo Bank)"),
    AP_INIT_TAKE1("BankAccountBankCode", set_account_bank_code, NULL, BANK_CTX,
                  "CBN code of that institution, for NUBAN check digits (default 999)"),
    AP_INIT_ITERATE("BankWebhookSecret", set_webhook_secret, NULL, BANK_CTX,
                    "Bearer values the payment partner may send (several for rotation)"),
    AP_INIT_TAKE3("BankWebhookSignature", set_signature, NULL, BANK_CTX,
                  "HEADER sha256|sha512 KEY|file:PATH: also require an HMAC of the raw body"),
    AP_INIT_TAKE1("BankWebhookPartner", set_partner, NULL, BANK_CTX,
                  "Partner name recorded on each notice (default: last Location segment)"),
    AP_INIT_TAKE12("BankBvnProvider", set_idp, NULL, BANK_CTX,
                   "table|dojah|prembly [BASE-URL]: who verifies a BVN (default table)"),
    AP_INIT_TAKE12("BankBvnProviderCredentials", set_idp_credentials, NULL, BANK_CTX,
                   "APP-ID SECRET, or a file holding them readable by its owner only"),
    AP_INIT_TAKE1("BankBvnProviderTimeout", set_idp_timeout, NULL, BANK_CTX,
                  "Seconds an identity provider call may take (default 10)"),
    AP_INIT_TAKE1("BankTokenCacheSeconds", set_token_cache, NULL, BANK_CTX,
                  "How long a verified token is kept per process, the longest a revoked token "
                  "still works there (default 5, 0 off, at most 60)"),
    AP_INIT_TAKE1("BankBvnCacheSeconds", set_bvn_cache, NULL, BANK_CTX,
                  "How long a verified customer's BVN answer is kept per process, refreshed "
                  "within a second of any change (default 5, 0 off, at most 60)"),
    AP_INIT_TAKE12("BankPasswordVerifyConcurrency", set_verify_concurrency, NULL, BANK_CTX,
                   "Password verifications at once per process (default: the CPU count), and "
                   "how many more may wait (default: 16 per verification, within half of "
                   "ThreadsPerChild)"),
    AP_INIT_TAKE1("BankPasswordVerifyServerConcurrency", set_server_int, &verify_server, RSRC_CONF,
                  "Password verifications at once in all processes together "
                  "(default: the CPU count; off: no such bound)"),
    AP_INIT_TAKE1("BankDatabaseTimeout", set_server_int, &db_timeout, RSRC_CONF,
                  "Seconds one statement may wait for PostgreSQL before the request answers 503 "
                  "(default 5, off: no bound)"),
    AP_INIT_TAKE1("BankBvnProviderProxy", set_idp_proxy, NULL, BANK_CTX,
                  "URL of the proxy identity provider calls go through, or none (the default: "
                  "http_proxy and the like in the environment are ignored)"),
    AP_INIT_TAKE1("BankPasswordVerifyMaxWait", set_server_int, &verify_max_wait, RSRC_CONF,
                  "Milliseconds a sign-in may wait for its password verification to start "
                  "before it is refused with 503 (default 1000)"),
    AP_INIT_TAKE1("BankPasswordDummyRefresh", set_server_int, &dummy_refresh, RSRC_CONF,
                  "Seconds between two samples of the stored password hashes, which the hash "
                  "an unknown e-mail is verified against follows (default 300)"),
    AP_INIT_TAKE23("BankPush", set_push, NULL, RSRC_CONF,
                   "fcm PROJECT-ID [BASE-URL]: push payment results to customers' devices "
                   "through Firebase Cloud Messaging (default off)"),
    AP_INIT_TAKE1("BankPushCredentials", set_push_credentials, NULL, RSRC_CONF,
                  "The Google service account's JSON key file, readable by its owner only"),
    AP_INIT_TAKE1("BankPushAttempts", set_push_number, &push_attempts, RSRC_CONF,
                  "Calls per push message before it is marked failed (default 8, at most 100)"),
    AP_INIT_TAKE1("BankPushTimeout", set_push_number, &push_timeout, RSRC_CONF,
                  "Seconds an FCM or token call may take (default 10, at most 300)"),
    AP_INIT_TAKE1("BankPushSpareCPU", set_push_number, &push_spare_cpu, RSRC_CONF,
                  "Percent of CPU time that must be idle for the push sender to send at full "
                  "speed; below it, or while many notices wait for their commit, a few "
                  "messages at a time (default 10, 0: always full)"),
    AP_INIT_TAKE2("BankIdentityKey", bank_identity_set_key, NULL, RSRC_CONF,
                  "ID FILE: the key new identity data is encrypted with (owner-only file, "
                  "64 hex digits)"),
    AP_INIT_TAKE2("BankIdentityOldKey", bank_identity_set_old_key, NULL, RSRC_CONF,
                  "ID FILE: an older key identity data may still be encrypted with (several "
                  "allowed; bankctl rekey moves rows to the current key)"),
    AP_INIT_TAKE1("BankIdentityHashKey", bank_identity_set_hash_key, NULL, RSRC_CONF,
                  "FILE: the key of the keyed hash BVNs are found by (owner-only file)"),
    {NULL}};
