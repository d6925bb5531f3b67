/* bankctl check, on a database it opened as httpd's User (check.c): the schema neither behind
 * nor ahead of this build, the identity keys of the configuration against the database, and
 * the privileges every statement needs (PostgreSQL). One line each through say. */
#include <apr_strings.h>
#include "bankctl.h"
#include "bank_store.h"
#include "bank_migrate.h"
#include "bank_version.h"

/* The configuration's identity keys against the ones the database was sealed with. */
static void keys_check(apr_pool_t *p, bank_db_t *db, const ctl_check_keys_t *keys, ctl_say_fn say,
                       void *baton)
{
    const char *wrong = NULL;

    if (!keys->seen) {
        say(baton, 0, "identity keys",
            "BankIdentityKey is not set: httpd refuses to start without it; make the keys and "
            "Include them (docs/operations.md, \"Identity keys\")");
    } else if (keys->error) {
        say(baton, 0, "identity keys", keys->error);
    } else if (bank_store_identity_keys_check(db, keys->ring, &wrong) != BANK_DB_OK) {
        say(baton, 0, "identity keys",
            apr_psprintf(p, "cannot compare with the database: %s", bank_db_error(db)));
    } else if (wrong) {
        say(baton, 0, "identity keys",
            apr_psprintf(
                p,
                "%s: httpd refuses to start with them and a reload is refused; use the keys "
                "the database was sealed with (docs/operations.md, \"Identity "
                "keys\")",
                wrong));
    } else {
        say(baton, 1, "identity keys", "the database's keys (every sealed row opens)");
    }
}

/* PostgreSQL: the privileges every statement needs, of the role the database was opened as. */
static void privileges_check(apr_pool_t *p, bank_db_t *db, ctl_say_fn say, void *baton)
{
    const char *missing = NULL, *role = NULL;

    if (bank_db_query_value(db, "SELECT current_user", &role) != 0 || !role) {
        role = "the runtime role";
    }
    if (bank_store_privileges_missing(db, &missing) != BANK_DB_OK) {
        say(baton, 0, "privileges", apr_psprintf(p, "cannot read them: %s", bank_db_error(db)));
    } else if (missing) {
        say(baton, 0, "privileges",
            apr_psprintf(p,
                         "%s lacks %s: grant them as docs/deployment.md section 1 does "
                         "(GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public "
                         "TO %s), then run bankctl migrate",
                         role, missing, role));
    } else {
        say(baton, 1, "privileges",
            apr_psprintf(p, "%s may run every statement (tables, triggers, sequences)", role));
    }
}

/* The ok line of a schema this build serves on (ctl_check_database). */
static const char *schema_servable(apr_pool_t *p, int version, int latest)
{
    if (version < latest) {
        return apr_psprintf(p,
                            "version %d, older than this build's %d; this module serves on it "
                            "(SQLite: the older form of what a later schema changed) until "
                            "bankctl migrate",
                            version, latest);
    }
    if (version > latest) {
        return apr_psprintf(p,
                            "version %d, newer than this build's %d; the migrations since only "
                            "added: this module serves on it",
                            version, latest);
    }
    return apr_psprintf(p, "version %d (this build's: %d)", version, latest);
}

void ctl_check_database(apr_pool_t *p, bank_db_t *db, int latest, const ctl_check_keys_t *keys,
                        ctl_say_fn say, void *baton)
{
    const char *err = NULL;
    int version = 0, requires = 0;

    /* the version before the statements: a newer schema may not let them prepare */
    bank_schema_state(db, &version, &requires);
    if (version > latest && requires > latest) {
        say(baton, 0, "schema",
            apr_psprintf(p,
                         "version %d needs a module that knows schema %d; "
                         "this build knows %d: a later release migrated the database; install "
                         "that release, or restore the backup taken before the upgrade "
                         "(docs/deployment.md, \"Upgrades\")",
                         version, requires, latest));
        return;
    }
    if ((err = bank_db_prepare_all(db)) != NULL ||
        (version < latest && (bank_db_is_pgsql(db) || version < BANK_SCHEMA_SQLITE_OLDEST))) {
        say(baton, 0, "schema",
            apr_psprintf(p,
                         "version %d, this build needs %d%s%s: run bankctl "
                         "migrate",
                         version, latest, err ? "; " : "", err ? err : ""));
        return;
    }
    say(baton, 1, "schema", schema_servable(p, version, latest));
    keys_check(p, db, keys, say, baton);
    if (!bank_db_is_pgsql(db)) {
        return; /* no roles: the file's modes decide (checked before) */
    }
    privileges_check(p, db, say, baton);
}
