/* The identity keys (mod_bank_identity.h). Key files are read with the configuration (as
 * root, before httpd drops privileges), so that they can be readable by root only and
 * `apachectl -t` names a missing or open file. At start-up the database is asked whether it
 * knows the keys: a key whose check value differs from the one recorded at its first use is
 * refused, as is a database whose rows are sealed with a key id not configured. */
#include <string.h>
#include <apr_strings.h>
#include <apr_file_info.h>
#include <http_core.h>
#include <openssl/crypto.h>
#include "mod_bank.h"
#include "mod_bank_dbd.h"
#include "mod_bank_identity.h"
#include "bank_crypt.h"
#include "bank_migrate.h"
#include "bank_version.h"
#include "bank_db.h"
#include "bank_store.h"

APLOG_USE_MODULE(bank);

/* The keys of the configuration being read; a new configuration (a restart) starts anew. */
static bank_keyring_t *ring = NULL;
static int has_hash = 0;

static apr_status_t forget_ring(void *data)
{
    (void)data;
    ring = NULL;
    has_hash = 0;
    return APR_SUCCESS;
}

static bank_keyring_t *the_ring(apr_pool_t *pconf)
{
    if (!ring) {
        ring = bank_keyring_make(pconf);
        apr_pool_cleanup_register(pconf, NULL, forget_ring, apr_pool_cleanup_null);
    }
    return ring;
}

/* Reads the key file named by the directive: a relative path is from the directory of the
 * file the directive is written in, as bankctl reads the same lines. */
static const char *read_key(cmd_parms *cmd, const char *path, unsigned char *key)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY), *file = path, *in, *slash;

    if (err) {
        return err;
    }
    in = cmd->directive ? cmd->directive->filename : NULL;
    if (path[0] != '/' && in && (slash = strrchr(in, '/')) != NULL) {
        file =
            apr_pstrcat(cmd->temp_pool, apr_pstrndup(cmd->temp_pool, in, (apr_size_t)(slash - in)),
                        "/", path, (char *)NULL);
    }
    if (!(file = ap_server_root_relative(cmd->temp_pool, file))) {
        return apr_psprintf(cmd->pool, "%s: bad path %s", cmd->cmd->name, path);
    }
    err = bank_key_file_read(cmd->temp_pool, file, key);
    return err ? apr_psprintf(cmd->pool, "%s: %s", cmd->cmd->name, err) : NULL;
}

static const char *add_key(cmd_parms *cmd, const char *id, const char *path, int current)
{
    unsigned char key[BANK_KEY_LEN];
    const char *err;

    if (!bank_key_id_valid(id)) {
        return apr_psprintf(cmd->pool, "%s: a key id is 1 to %d of A-Z a-z 0-9 _ - .",
                            cmd->cmd->name, BANK_KEY_ID_MAX);
    }
    if (!(err = read_key(cmd, path, key)) &&
        (err = bank_keyring_add(the_ring(cmd->pool), id, key, current)) != NULL) {
        err = apr_psprintf(cmd->pool, "%s: %s", cmd->cmd->name,
                           current && bank_keyring_current(ring)
                               ? "given twice: one current key; the older ones are "
                                 "BankIdentityOldKey"
                               : err);
    }
    OPENSSL_cleanse(key, sizeof(key));
    return err;
}

const char *bank_identity_set_key(cmd_parms *cmd, void *cfg, const char *id, const char *path)
{
    (void)cfg;
    return add_key(cmd, id, path, 1);
}

const char *bank_identity_set_old_key(cmd_parms *cmd, void *cfg, const char *id, const char *path)
{
    (void)cfg;
    return add_key(cmd, id, path, 0);
}

const char *bank_identity_set_hash_key(cmd_parms *cmd, void *cfg, const char *path)
{
    unsigned char key[BANK_KEY_LEN];
    const char *err;

    (void)cfg;
    if (has_hash) {
        return apr_psprintf(cmd->pool, "%s: given twice", cmd->cmd->name);
    }
    if (!(err = read_key(cmd, path, key))) {
        bank_keyring_set_hash_key(the_ring(cmd->pool), key);
        has_hash = 1;
    }
    OPENSSL_cleanse(key, sizeof(key));
    return err;
}

/* 1 if a server (the main one or a virtual host) has a database, so identity data. */
static int any_database(server_rec *s)
{
    const char *driver, *params;

    for (; s; s = s->next) {
        if (bank_dbd_server_bank(s, &driver, &params)) {
            return 1;
        }
    }
    return 0;
}

/* Opens the first database configured (the main server's, else a virtual host's) for the
 * check, or says why it cannot (then the server starts: a database that is down at start-up
 * answers 503 until it is back, and the keys are checked again at the next start). SQLite:
 * an absent file is not created here. */
/* The last check found a schema this build cannot serve on (schema_ok). */
static int schema_bad;

/* The database's schema against the one this build was written for (BANK_SCHEMA_VERSION):
 * OK for that one, for none yet (a new database: bankctl migrate, the statements'
 * preparation says so), for a newer one whose migrations only added (logged), and on SQLite
 * for an older one from BANK_SCHEMA_SQLITE_OLDEST on (a warning: the statements' older forms
 * until bankctl migrate, which this module then serves through); else logged and not OK.
 * An older PostgreSQL schema is refused, so the configuration test fails and a reload after
 * a package upgrade leaves the running module serving until bankctl migrate has run
 * (docs/deployment.md, "Upgrades"). Read before any statement is prepared: a schema that
 * changed what this build uses may not let them prepare. */
static int schema_ok(bank_db_t *db, server_rec *s, const char *then)
{
    int version, requires;

    bank_schema_state(db, &version, &requires);
    if (version == 0 || version == BANK_SCHEMA_VERSION) {
        return OK;
    }
    if (version < BANK_SCHEMA_VERSION && !bank_db_is_pgsql(db) &&
        version >= BANK_SCHEMA_SQLITE_OLDEST) {
        ap_log_error(APLOG_MARK,
                     ap_state_query(AP_SQ_RUN_MODE) == AP_SQ_RM_CONFIG_TEST ? APLOG_DEBUG
                                                                            : APLOG_WARNING,
                     0, s,
                     BANKLOGNO(1711) "the database's schema is version %d, older than this "
                                     "mod_bank's %d (%s): serving with the older form of the "
                                     "statements written for a later one until 'bankctl "
                                     "migrate' (docs/deployment.md, \"Upgrades\")",
                     version, BANK_SCHEMA_VERSION, BANK_VERSION);
        return OK;
    }
    if (version < BANK_SCHEMA_VERSION) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     BANKLOGNO(1710) "the database's schema is version %d, older than this "
                                     "mod_bank's %d (%s): run 'bankctl migrate' first "
                                     "(docs/deployment.md, \"Upgrades\"); %s",
                     version, BANK_SCHEMA_VERSION, BANK_VERSION, then);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if (requires > BANK_SCHEMA_VERSION) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     BANKLOGNO(1708) "the database's schema is version %d and needs a mod_bank "
                                     "that knows schema %d or later; this one (%s) knows %d: "
                                     "install the release that migrated it, or restore the "
                                     "backup taken before the upgrade (docs/deployment.md, "
                                     "\"Upgrades\"); %s",
                     version, requires, BANK_VERSION, BANK_SCHEMA_VERSION, then);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    ap_log_error(
        APLOG_MARK,
        ap_state_query(AP_SQ_RUN_MODE) == AP_SQ_RM_CONFIG_TEST ? APLOG_DEBUG : APLOG_NOTICE, 0, s,
        BANKLOGNO(1709) "the database's schema is version %d, newer than this "
                        "mod_bank's %d; the migrations since only added: serving",
        version, BANK_SCHEMA_VERSION);
    return OK;
}

static bank_db_t *open_db(apr_pool_t *p, server_rec *s, const char *then, int *schema,
                          const char **why)
{
    const char *driver = NULL, *params = NULL;
    server_rec *sp;
    apr_finfo_t fi;
    bank_db_t *db;

    *why = NULL;
    sp = s;
    while (sp && !bank_dbd_server_bank(sp, &driver, &params)) {
        sp = sp->next; /* the first server with a database */
    }
    if (!sp) {
        *why = "no DBDriver sqlite3 or pgsql";
        return NULL;
    }
    if (strcmp(driver, "sqlite3") == 0 && apr_stat(&fi, params, APR_FINFO_TYPE, p) != APR_SUCCESS) {
        *why = "the SQLite file is not there";
        return NULL;
    }
    if (!(db = bank_db_open(p, driver, params, why))) {
        return NULL;
    }
    /* A graceful restart runs this while the children write: wait for their locks as they
     * wait for each other (docs/configuration.md, busy_timeout). */
    if (!bank_db_is_pgsql(db)) {
        bank_db_query(db, "PRAGMA busy_timeout = 5000");
    }
    if ((*schema = schema_ok(db, s, then)) != OK) {
        *why = "a schema this build does not know";
        return NULL;
    }
    if ((*why = bank_db_prepare_all(db)) != NULL) {
        *why = apr_pstrcat(p, "the schema is missing or out of date (", *why, ")", (char *)NULL);
        return NULL;
    }
    return db;
}

/* The keys against the database: not OK for a wrong key. The configuration test says only
 * what fails it (apache2 -t prints nothing else when it passes). */
static int check_db(apr_pool_t *ptemp, server_rec *s, const char *then)
{
    int quiet = ap_state_query(AP_SQ_RUN_MODE) == AP_SQ_RM_CONFIG_TEST;
    apr_pool_t *p;
    const char *why = NULL, *wrong = NULL;
    apr_int64_t plain = 0;
    bank_db_t *db;
    int rc = OK, schema = OK;

    /* A pool of its own, destroyed here: the connection is closed before the fork. */
    apr_pool_create(&p, ptemp);
    if (!(db = open_db(p, s, then, &schema, &why)) && schema != OK) {
        rc = schema;
        schema_bad = 1;
    } else if (!db) {
        ap_log_error(APLOG_MARK, quiet ? APLOG_DEBUG : APLOG_WARNING, 0, s,
                     BANKLOGNO(1703) "identity keys not checked against the database: %s", why);
    } else if (bank_store_identity_keys_check(db, ring, &wrong) != BANK_DB_OK) {
        ap_log_error(APLOG_MARK, quiet ? APLOG_DEBUG : APLOG_WARNING, 0, s,
                     BANKLOGNO(1704) "identity keys not checked against the database: %s",
                     bank_db_error(db));
    } else if (wrong) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     BANKLOGNO(1705) "BankIdentityKey: %s; %s (docs/security.md, key rotation)",
                     wrong, then);
        rc = HTTP_INTERNAL_SERVER_ERROR;
    } else if (!quiet && bank_store_identity_plain(db, &plain) == BANK_DB_OK && plain > 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     BANKLOGNO(1706) "%" APR_INT64_T_FMT " rows of identity data are still "
                                     "plain text: seal them with 'bankctl rekey' "
                                     "(docs/operations.md)",
                     plain);
    }
    apr_pool_destroy(p);
    return rc;
}

/* Keys set, and the database's: OK, else logged (then: what follows) and not OK. */
static int keys_ok(apr_pool_t *ptemp, server_rec *s, const char *then)
{
    if (!ring || !bank_keyring_current(ring)) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     BANKLOGNO(1701) "BankIdentityKey is not set: mod_bank stores BVNs and "
                                     "identity records encrypted and needs a key file "
                                     "(docs/configuration.md); %s",
                     then);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if (!has_hash) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     BANKLOGNO(1702) "BankIdentityHashKey is not set: mod_bank finds BVNs by "
                                     "a keyed hash and needs its key file "
                                     "(docs/configuration.md); %s",
                     then);
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    return check_db(ptemp, s, then);
}

/* Set by a restart whose keys were refused: BVN onboarding answers 503 meanwhile; whose
 * database's schema needs a newer module: every endpoint with a database does. */
static int refused, schema_refused;

int bank_identity_refused(void)
{
    return refused;
}

int bank_identity_schema_refused(void)
{
    return schema_refused;
}

int bank_identity_check_config(apr_pool_t *ptemp, server_rec *s)
{
    /* apache2 -t (apachectl configtest, and the test apachectl graceful and restart run
     * first): keys that would make the server refuse fail the test, so a reload is refused
     * before the running server is signalled. */
    if (ap_state_query(AP_SQ_RUN_MODE) != AP_SQ_RM_CONFIG_TEST || !any_database(s)) {
        return OK;
    }
    return keys_ok(ptemp, s, "the configuration test fails");
}

/* 1 if this process (httpd's parent) served before: a restart, not the start. Marked in the
 * process's pool, which lives across restarts; apr_pool_userdata_set copies the key there
 * (the module, and so any string of its own, is unloaded and loaded again on a restart). */
static int restarting(server_rec *s)
{
    void *served = NULL;

    apr_pool_userdata_get(&served, "bank_identity_served", s->process->pool);
    if (!served) {
        apr_pool_userdata_set((void *)1, "bank_identity_served", apr_pool_cleanup_null,
                              s->process->pool);
    }
    return served != NULL;
}

int bank_identity_post_config(apr_pool_t *pconf, apr_pool_t *ptemp, server_rec *s)
{
    int restart = restarting(s);

    (void)pconf;
    refused = schema_refused = schema_bad = 0;
    /* No database, no identity data: the module may serve without keys (nothing to map). */
    if (!any_database(s)) {
        bank_crypt_use(ring);
        return OK;
    }
    if (keys_ok(ptemp, s,
                restart ? "a restart signalled without the configuration test: the server "
                          "keeps running and answers 503 where this matters (BVN onboarding "
                          "for the keys, every endpoint for the schema) until it is put right "
                          "and httpd restarts again"
                        : "refusing to start") == OK) {
        bank_crypt_use(ring);
        return OK;
    }
    if (!restart) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    /* httpd would exit on an error here, taking the running server down with it. */
    refused = 1;
    schema_refused = schema_bad;
    bank_crypt_use(ring && bank_keyring_current(ring) && has_hash ? ring : NULL);
    return OK;
}
