/* bankctl and the identity keys (docs/operations.md): the keys file (the module's own
 * directives BankIdentityKey, BankIdentityOldKey and BankIdentityHashKey, one a line, a file
 * httpd can Include), checked against the database like the module does at start-up; and the
 * commands that need them beyond bvn add: rekey, bvn show, bvn delete, customer show. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_file_info.h>
#include <apr_lib.h>
#include "bankctl.h"
#include "bank_crypt.h"
#include "bank_json.h"
#include "bank_store.h"
#include "bank_uuid.h"
#include "bank_validate.h"

#define KEYS_FILE "identity-keys.conf"
/* Where an installed bankctl looks without --keys, BANK_IDENTITY_KEYS or BANK_RUN_DIR. */
#define KEYS_FILE_ETC "/etc/mod_bank/" KEYS_FILE
#define BATCH_DEFAULT 500
#define BATCH_MAX 10000

/* --keys, else $BANK_IDENTITY_KEYS, else the dev server's ($BANK_RUN_DIR, or the checkout's
 * run/), else /etc/mod_bank. */
static const char *keys_path(ctl_t *c)
{
    const char *env = getenv("BANK_IDENTITY_KEYS"), *run = getenv("BANK_RUN_DIR");

    if (c->keys_spec) {
        return c->keys_spec;
    }
    if (env && *env) {
        return env;
    }
    if (run && *run) {
        return apr_pstrcat(c->pool, run, "/" KEYS_FILE, (char *)NULL);
    }
    if (c->checkout) {
        return apr_pstrcat(c->pool, c->checkout, "/run/" KEYS_FILE, (char *)NULL);
    }
    return KEYS_FILE_ETC;
}

/* The keys file and the keys it names, read (as root, before ctl_open gives root up). */
static bank_keyring_t *read_keys(ctl_t *c, const char *file)
{
    bank_keyring_t *kr = NULL;
    const char *err;
    apr_finfo_t fi;

    if (apr_stat(&fi, file, APR_FINFO_TYPE, c->pool) != APR_SUCCESS) {
        die(1,
            "no identity keys at %s: name the keys file with --keys FILE or BANK_IDENTITY_KEYS "
            "(docs/operations.md)",
            file);
    }
    if ((err = bank_keyring_read_conf(c->pool, file, &kr)) != NULL) {
        die(1, "%s", err);
    }
    return kr;
}

/* The keys checked against the database as httpd checks them, then used. */
static void use_keys(ctl_t *c, const char *file, bank_keyring_t *kr)
{
    const char *wrong = NULL;

    if (bank_store_identity_keys_check(c->db, kr, &wrong) != BANK_DB_OK) {
        ctl_db_fail(c, "cannot check the identity keys");
    }
    if (wrong) {
        die(1, "%s: %s", file, wrong);
    }
    bank_crypt_use(kr);
}

/* The keys are read first: root's key files, then the database, opened as its owner. */
void ctl_open_ready(ctl_t *c)
{
    const char *file = keys_path(c);
    bank_keyring_t *kr = read_keys(c, file);

    ctl_open_db(c);
    use_keys(c, file, kr);
}

/* ---- rekey ---- */

int cmd_rekey(ctl_t *c, apr_table_t *o)
{
    const char *cmd = "rekey", *v;
    long batch = BATCH_DEFAULT, batches = 0, k;
    apr_int64_t total = 0, plain = 0;
    int done = 0;

    if ((v = apr_table_get(o, "batch")) != NULL) {
        batch = ctl_parse_range(cmd, "batch", v, 1, BATCH_MAX);
    }
    if ((v = apr_table_get(o, "batches")) != NULL) {
        batches = ctl_parse_range(cmd, "batches", v, 1, 1000000000);
    }
    ctl_open_ready(c);
    /* SQLite: the space the old values leave is zeroed, not left readable in the file. */
    if (c->sqlite_path) {
        bank_db_query(c->db, "PRAGMA secure_delete = ON");
    }
    for (k = 0; batches == 0 || k < batches; k++) {
        if (bank_store_identity_reseal(c->db, bank_crypt_keyring(), (int)batch, &done) !=
            BANK_DB_OK) {
            fprintf(stderr, "bankctl: rekey: %" APR_INT64_T_FMT " rows sealed before the failure\n",
                    total);
            ctl_db_fail(c, "rekey: a batch failed and was rolled back");
        }
        if (done == 0) {
            break;
        }
        total += done;
    }
    if (c->sqlite_path) {
        bank_db_query(c->db, "PRAGMA wal_checkpoint(TRUNCATE)");
    }
    bank_store_identity_plain(c->db, &plain);
    printf("%" APR_INT64_T_FMT " rows sealed with key %s; %s; %" APR_INT64_T_FMT
           " rows still plain\n",
           total, bank_keyring_current(bank_crypt_keyring()),
           done == 0 ? "none left to move" : "stopped after --batches, run again to go on", plain);
    return 0;
}

/* ---- show ---- */

static void print_json(ctl_t *c, json_object *o)
{
    (void)c;
    printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
}

int cmd_bvn_show(ctl_t *c, apr_table_t *o)
{
    const char *bvn = ctl_need(o, "bvn", "bvn show");
    json_object *j = bank_json_own(c->pool, json_object_new_object());
    bank_bvn_kept_t k;
    bank_db_rc rc;

    if (!bank_bvn_valid(bvn)) {
        die(EXIT_USAGE, "bvn show: --bvn must be exactly 11 digits");
    }
    ctl_open_ready(c);
    if ((rc = bank_store_bvn_record_get(c->db, bvn, &k)) == BANK_DB_NOT_FOUND) {
        die(1, "no record of that BVN");
    }
    if (rc != BANK_DB_OK) {
        ctl_db_fail(c, "cannot read the BVN record");
    }
    json_object_object_add(j, "bvn", bank_json_str(k.rec.bvn));
    json_object_object_add(j, "firstName", bank_json_str(k.rec.first_name));
    json_object_object_add(j, "lastName", bank_json_str(k.rec.last_name));
    json_object_object_add(j, "dateOfBirth", bank_json_str(k.rec.date_of_birth));
    json_object_object_add(j, "phone", bank_json_str(k.rec.phone));
    json_object_object_add(j, "source", bank_json_str(k.source));
    json_object_object_add(j, "checked", json_object_new_boolean(k.checked_at != NULL));
    print_json(c, j);
    return 0;
}

int cmd_bvn_delete(ctl_t *c, apr_table_t *o)
{
    const char *bvn = ctl_need(o, "bvn", "bvn delete");
    int count = 0;

    if (!bank_bvn_valid(bvn)) {
        die(EXIT_USAGE, "bvn delete: --bvn must be exactly 11 digits");
    }
    ctl_open_ready(c);
    if (bank_store_bvn_record_delete(c->db, bvn, &count) != BANK_DB_OK) {
        ctl_db_fail(c, "cannot delete the BVN record");
    }
    printf("%d\n", count);
    return 0;
}

int cmd_customer_show(ctl_t *c, apr_table_t *o)
{
    const char *cmd = "customer show", *email = apr_table_get(o, "email");
    const char *id = apr_table_get(o, "id");
    json_object *j = bank_json_own(c->pool, json_object_new_object());
    bank_customer_t cu;
    bank_db_rc rc;

    if (!email == !id) {
        die(EXIT_USAGE, "%s: give --email E or --id ID", cmd);
    }
    if (id && !bank_is_uuid(id)) {
        die(EXIT_USAGE, "%s: --id must be a customer id (a UUID)", cmd);
    }
    ctl_open_ready(c);
    rc = email ? bank_store_customer_by_email(c->db, email, &cu)
               : bank_store_customer_by_id(c->db, id, &cu);
    if (rc == BANK_DB_NOT_FOUND) {
        die(1, "no such customer");
    }
    if (rc != BANK_DB_OK) {
        ctl_db_fail(c, "cannot read the customer");
    }
    json_object_object_add(j, "id", bank_json_str(cu.id));
    json_object_object_add(j, "email", bank_json_str(cu.email));
    json_object_object_add(j, "firstName", bank_json_str(cu.first_name));
    json_object_object_add(j, "lastName", bank_json_str(cu.last_name));
    json_object_object_add(j, "phone", bank_json_str(cu.phone));
    json_object_object_add(j, "emailVerified", json_object_new_boolean(cu.email_verified));
    json_object_object_add(j, "bvn", bank_json_str(cu.bvn));
    json_object_object_add(j, "referralCode", bank_json_str(cu.referral_code));
    print_json(c, j);
    return 0;
}
