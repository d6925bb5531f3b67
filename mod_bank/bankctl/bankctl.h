/* bankctl, the operator's front door to mod_bank's core (docs/operations.md): what its
 * files share. It opens its own database handle (bank_db_open), and uses the same store,
 * token codec, password hashing, validators and migration engine as the module, so every
 * rule has one implementation. No httpd.
 * Exit status: 0 done, 1 failed, 2 bad arguments. Secrets are never printed, except the
 * token that `token issue` exists to print. */
#ifndef BANKCTL_H
#define BANKCTL_H

#include <apr_pools.h>
#include <apr_tables.h>
#include "bank_db.h"
#include "bank_crypt.h"
#include "bank_store.h"

#define EXIT_USAGE 2

/* Where the SQL files are installed (make install); BANK_SQL_DIR at run time wins. */
#ifndef BANK_SQL_DIR
#define BANK_SQL_DIR "/usr/local/share/mod_bank/sql"
#endif

typedef struct {
    const char *name; /* without the leading -- */
    int has_value;    /* 0 a flag, 1 --name VALUE, 2 a positional argument (at most one) */
} opt_t;

typedef struct {
    apr_pool_t *pool;
    const char *checkout;  /* $BANK_CHECKOUT or the checkout of build/bankctl, else NULL */
    const char *db_spec;   /* --db as given */
    const char *keys_spec; /* --keys as given */
    const char *driver_name;
    const char *params;
    const char *sqlite_path; /* NULL for PostgreSQL */
    bank_db_t *db;
} ctl_t;

/* A command: the words that name it, its options, its usage lines and what runs it. */
typedef struct {
    const char *word, *sub, *name;
    const opt_t *opts;
    const char *usage;
    int (*run)(ctl_t *, apr_table_t *);
} ctl_command_t;

void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* args.c: options and values */
apr_table_t *ctl_parse_opts(ctl_t *c, int argc, const char *const *argv, const ctl_command_t *cmd);
const char *ctl_need(apr_table_t *o, const char *name, const char *cmd);
void ctl_check_text(const char *cmd, const char *opt, const char *v, apr_size_t max);
void ctl_check_phone(const char *cmd, const char *v);
/* The same checks, saying what is wrong (NULL: nothing). */
const char *ctl_text_problem(apr_pool_t *p, const char *v, apr_size_t max);
const char *ctl_phone_problem(apr_pool_t *p, const char *v);
long ctl_parse_range(const char *cmd, const char *opt, const char *v, long min, long max);
char *ctl_slurp(ctl_t *c, const char *path, apr_size_t max, const char *what);
const char *ctl_read_password(ctl_t *c, apr_table_t *o, const char *cmd);

/* database.c: which database, opened */
void ctl_open(ctl_t *c, int creating);
/* The database with the store's statements prepared. */
void ctl_open_db(ctl_t *c);
void ctl_db_fail(ctl_t *c, const char *what) __attribute__((noreturn));
const char *ctl_customer_id(ctl_t *c, const char *email, int must);
/* Runs batch after batch, each in a pool of its own cleared after it (what the database
 * hands back included), with a pause twice as long as the batch between them so that
 * httpd's writes go on; a batch the database turned away for a passing reason is tried twice more,
 * a second apart. fn does batch number i and says how many rows it did and whether more may be
 * left; it stops at the first failure with what, and what was done before it. Returns the sum. */
typedef bank_db_rc (*ctl_batch_fn)(ctl_t *c, void *baton, long i, int *done, int *more);
apr_int64_t ctl_batches(ctl_t *c, ctl_batch_fn fn, void *baton, const char *what);

/* identity.c: ctl_open_ready reads the identity keys (--keys; as root, before the database
 * is opened as its owner), then ctl_open_db, then checks the keys against the database */
void ctl_open_ready(ctl_t *c);

/* the commands */
int cmd_migrate(ctl_t *c, apr_table_t *o);
int cmd_customer_add(ctl_t *c, apr_table_t *o);
int cmd_bvn_add(ctl_t *c, apr_table_t *o);
int cmd_bvn_import(ctl_t *c, apr_table_t *o); /* bvn_import.c */
/* customers.c: what is wrong with an identity record, as bvn add and bvn import check it
 * (NULL: nothing); *field says which value, in the order of import's columns. */
enum { CTL_BVN_BVN, CTL_BVN_DOB, CTL_BVN_FIRST, CTL_BVN_LAST, CTL_BVN_PHONE };
const char *ctl_bvn_record_problem(apr_pool_t *p, const bank_bvn_record_t *rec, apr_time_t now,
                                   int *field);
int cmd_bvn_check(ctl_t *c, apr_table_t *o); /* bvn_check.c: needs no database */
int cmd_token_issue(ctl_t *c, apr_table_t *o);
int cmd_token_revoke(ctl_t *c, apr_table_t *o);
int cmd_token_prune(ctl_t *c, apr_table_t *o);
int cmd_notices(ctl_t *c, apr_table_t *o);
int cmd_notices_archive(ctl_t *c, apr_table_t *o);
int cmd_notices_restore(ctl_t *c, apr_table_t *o);
int cmd_check(ctl_t *c, apr_table_t *o); /* check.c: reads an httpd configuration */
/* check_db.c: the checks on a database bankctl check opened as httpd's User. */
typedef void (*ctl_say_fn)(void *baton, int ok, const char *check, const char *detail);
typedef struct {
    int seen;                   /* the configuration has BankIdentity* lines */
    const char *error;          /* they do not make a keyring: why */
    const bank_keyring_t *ring; /* else the keyring */
} ctl_check_keys_t;
void ctl_check_database(apr_pool_t *p, bank_db_t *db, int latest, const ctl_check_keys_t *keys,
                        ctl_say_fn say, void *baton);

/* migrate.c: the SQL directory (--sql-dir in o, which may be NULL; $BANK_SQL_DIR;
 * $BANK_CHECKOUT/sql; the built-in one) and where it came from, for messages. */
const char *ctl_sql_dir(apr_pool_t *p, apr_table_t *o, const char **from);
int cmd_push_list(ctl_t *c, apr_table_t *o); /* push.c */
int cmd_push_retry(ctl_t *c, apr_table_t *o);
int cmd_push_prune(ctl_t *c, apr_table_t *o);
int cmd_rekey(ctl_t *c, apr_table_t *o);
int cmd_bvn_show(ctl_t *c, apr_table_t *o);
int cmd_bvn_delete(ctl_t *c, apr_table_t *o);
int cmd_customer_show(ctl_t *c, apr_table_t *o);

#endif
