/* bankctl's entry point: global options, the command table with each command's usage, and
 * --help at every level (bankctl --help, bankctl token --help, bankctl token issue --help). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_file_info.h>
#include "bankctl.h"
#include "bank_limits.h"
#include "bank_log.h"
#include "bank_version.h"

#define STR(x) #x
#define XSTR(x) STR(x)

static const char usage_head[] =
    "usage: bankctl [--db sqlite:PATH | --db postgresql://...] [--keys FILE] COMMAND [OPTIONS]\n"
    "       bankctl [COMMAND [SUBCOMMAND]] --help\n"
    "       bankctl --version\n"
    "\n";

static const char usage_tail[] =
    "\n"
    "Database: --db; without it, the dev server's: with BANK_DB=pgsql, the libpq conninfo\n"
    "or URI in BANK_PG_PARAMS, else the one the dev server wrote to $BANK_RUN_DIR/pg.conninfo;\n"
    "with BANK_DB=sqlite3, sqlite:$BANK_RUN_DIR/bank.db; with BANK_DB unset, pg.conninfo if\n"
    "the dev server last started on PostgreSQL, else bank.db (BANK_RUN_DIR defaults to\n"
    "$BANK_CHECKOUT/run).\n"
    "SQL files (migrate): --sql-dir, else $BANK_SQL_DIR, else $BANK_CHECKOUT/sql, else\n"
    "  " BANK_SQL_DIR " (where make install puts them).\n"
    "Identity keys (every command but migrate, notices and bvn check): --keys FILE, else\n"
    "$BANK_IDENTITY_KEYS, else $BANK_RUN_DIR/identity-keys.conf (the dev server's), else\n"
    "/etc/mod_bank/identity-keys.conf; the file holds BankIdentityKey, BankIdentityOldKey\n"
    "and BankIdentityHashKey lines as httpd.conf does (docs/operations.md).\n"
    "Exit status: 0 done, 1 failed, 2 bad arguments (bvn check: 3 mismatch).\n";

static const opt_t o_migrate[] = {{"demo", 0}, {"sql-dir", 1}, {NULL, 0}};
static const opt_t o_customer_add[] = {{"email", 1},    {"password", 1}, {"password-file", 1},
                                       {"first", 1},    {"last", 1},     {"phone", 1},
                                       {"verified", 0}, {NULL, 0}};
static const opt_t o_bvn_add[] = {{"bvn", 1},  {"dob", 1},   {"first", 1},
                                  {"last", 1}, {"phone", 1}, {NULL, 0}};
static const opt_t o_bvn_import[] = {{"file", 2}, {"batch", 1}, {NULL, 0}};
static const opt_t o_bvn_check[] = {{"bvn", 1},         {"dob", 1},     {"first", 1},  {"last", 1},
                                    {"provider", 1},    {"url", 1},     {"app-id", 1}, {"key", 1},
                                    {"credentials", 1}, {"timeout", 1}, {NULL, 0}};
static const opt_t o_token_issue[] = {{"email", 1}, {"ttl", 1}, {"abilities", 1}, {NULL, 0}};
static const opt_t o_email[] = {{"email", 1}, {NULL, 0}};
static const opt_t o_token_prune[] = {{"expired-for", 1}, {"batch", 1}, {NULL, 0}};
static const opt_t o_notices[] = {{"limit", 1}, {"json", 0}, {NULL, 0}};
static const opt_t o_notices_archive[] = {{"before", 1}, {"to", 1}, {"batch", 1}, {NULL, 0}};
static const opt_t o_notices_restore[] = {{"file", 2}, {"batch", 1}, {NULL, 0}};
static const opt_t o_check[] = {{"f", 1}, {NULL, 0}};
static const opt_t o_push_list[] = {{"pending", 0}, {"failed", 0}, {"limit", 1}, {NULL, 0}};
static const opt_t o_push_retry[] = {{"id", 2}, {NULL, 0}};
static const opt_t o_push_prune[] = {{"older-than", 1}, {"batch", 1}, {NULL, 0}};
static const opt_t o_rekey[] = {{"batch", 1}, {"batches", 1}, {NULL, 0}};
static const opt_t o_bvn_show[] = {{"bvn", 1}, {NULL, 0}};
static const opt_t o_customer_show[] = {{"email", 1}, {"id", 1}, {NULL, 0}};

static const ctl_command_t commands[] = {
    {"migrate", NULL, "migrate", o_migrate,
     "migrate [--demo] [--sql-dir DIR]\n"
     "      apply sql/<driver>/NNN_*.sql not yet applied, then the seeds (--demo: also demo*)\n",
     cmd_migrate},
    {"customer", "add", "customer add", o_customer_add,
     "customer add --email E (--password P | --password - | --password-file F)\n"
     "               --first F --last L --phone PH [--verified]\n"
     "      add a customer and print its customerId (--password -: read it from stdin)\n",
     cmd_customer_add},
    {"customer", "show", "customer show", o_customer_show,
     "customer show (--email E | --id ID)\n"
     "      print a customer as one JSON object, the BVN decrypted\n",
     cmd_customer_show},
    {"bvn", "add", "bvn add", o_bvn_add,
     "bvn add --bvn B --dob YYYY-MM-DD --first F --last L [--phone PH]\n"
     "      add or replace an identity-provider BVN record\n",
     cmd_bvn_add},
    {"bvn", "import", "bvn import", o_bvn_import,
     "bvn import FILE [--batch N]\n"
     "      add or replace the identity records of a CSV file (- for standard input), one a\n"
     "      line: bvn,date_of_birth,first_name,last_name[,phone]; N a transaction (default\n"
     "      1000); a bad line is reported by number and skipped; exit 1 if any was\n",
     cmd_bvn_import},
    {"bvn", "show", "bvn show", o_bvn_show,
     "bvn show --bvn B\n"
     "      print the identity record kept for a BVN as one JSON object, decrypted\n",
     cmd_bvn_show},
    {"bvn", "delete", "bvn delete", o_bvn_show,
     "bvn delete --bvn B\n"
     "      delete the identity record of a BVN; print how many (0 or 1)\n",
     cmd_bvn_delete},
    {"bvn", "check", "bvn check", o_bvn_check,
     "bvn check --bvn B --dob YYYY-MM-DD --first F --last L [--provider dojah|prembly]\n"
     "            [--url BASE-URL] [--app-id ID] [--key SECRET | --credentials FILE]\n"
     "            [--timeout SECONDS]\n"
     "      ask the identity provider; print match (exit 0) or mismatch (exit 3); options\n"
     "      default to BANK_BVN_PROVIDER, BANK_BVN_PROVIDER_URL, BANK_BVN_PROVIDER_APP_ID and\n"
     "      BANK_BVN_PROVIDER_KEY (prefer those or --credentials: arguments show in ps)\n",
     cmd_bvn_check},
    {"token", "issue", "token issue", o_token_issue,
     "token issue --email E [--ttl SECONDS] [--abilities a,b]\n"
     "      print a new access token (ttl " XSTR(BANK_TOKEN_TTL_MIN) " to " XSTR(
         BANK_TOKEN_TTL_MAX) " seconds, default " XSTR(BANK_TOKEN_TTL_DEFAULT) ";\n"
                                                                               "      abilities "
                                                                               "among"
                                                                               " " BANK_ABILITIES_TEXT
                                                                               ", default *)\n",
     cmd_token_issue},
    {"token", "revoke", "token revoke", o_email,
     "token revoke --email E\n"
     "      delete every token of a customer and print how many\n",
     cmd_token_revoke},
    {"token", "prune", "token prune", o_token_prune,
     "token prune [--expired-for DAYS] [--batch N]\n"
     "      delete the tokens that expired more than DAYS ago (default 30), N a statement\n"
     "      (default 500); safe while httpd serves\n",
     cmd_token_prune},
    /* before "notices" alone, which takes any word after it as an option */
    {"notices", "archive", "notices archive", o_notices_archive,
     "notices archive --before YYYY-MM-DD --to FILE [--batch N]\n"
     "      move the notices received before that day (UTC) to FILE (gzip, a JSON object a\n"
     "      line), checked before any is removed; their keys stay, so that a repeat is still\n"
     "      a duplicate; N rows a transaction (default 1000); safe while httpd serves\n",
     cmd_notices_archive},
    {"notices", "restore", "notices restore", o_notices_restore,
     "notices restore FILE [--batch N]\n"
     "      put the notices of an archive back (those there already are passed over), no\n"
     "      push message sent for them; the whole file is checked first\n",
     cmd_notices_restore},
    {"notices", NULL, "notices", o_notices,
     "notices [--limit N] [--json]\n"
     "      list payment notices, newest first (default 20); --json: one object a line\n",
     cmd_notices},
    {"check", NULL, "check", o_check,
     "check [-f HTTPD-CONF]\n"
     "      check an httpd configuration (default /etc/apache2/apache2.conf) as its User: each\n"
     "      database opens and has this build's schema, file modes of the database and key\n"
     "      files, provider credentials and TLS, DBDMin/DBDKeep/DBDMax and max_connections;\n"
     "      one line per check, exit 1 on any failure (run it as root)\n",
     cmd_check},
    {"push", "list", "push list", o_push_list,
     "push list [--pending | --failed] [--limit N]\n"
     "      list push messages (the outbox), newest first (default 50); never a device token\n",
     cmd_push_list},
    {"push", "retry", "push retry", o_push_retry,
     "push retry ID\n"
     "      send failed push message ID again (its attempts counted afresh)\n",
     cmd_push_retry},
    {"push", "prune", "push prune", o_push_prune,
     "push prune [--older-than DAYS] [--batch N]\n"
     "      delete the push messages sent, unregistered or failed more than DAYS ago (default\n"
     "      30), N rows looked at a statement (default 500); safe while httpd serves\n",
     cmd_push_prune},
    {"rekey", NULL, "rekey", o_rekey,
     "rekey [--batch N] [--batches N]\n"
     "      encrypt identity data still in plain text, and move data encrypted with an older\n"
     "      key to the current one, N rows a transaction (default " XSTR(
         500) "); --batches:\n"
              "      stop after that many; safe to interrupt and run again, while httpd serves\n",
     cmd_rekey},
    {NULL, NULL, NULL, NULL, NULL, NULL}};

/* The core's log (bank_log.h) on stderr: warnings and worse, with their tag. */
static void ctl_log(bank_log_where where, const char *file, int line, int level, const char *msg)
{
    (void)where;
    (void)file;
    (void)line;
    if (level <= BANK_LOG_WARNING) {
        fprintf(stderr, "bankctl: %s\n", msg);
    }
}

/* The usage of every command whose first word is word (all of them for NULL). */
static void usage(FILE *out, const char *word)
{
    int k;

    fputs(usage_head, out);
    for (k = 0; commands[k].word; k++) {
        if (!word || strcmp(word, commands[k].word) == 0) {
            fprintf(out, "  %s", commands[k].usage);
        }
    }
    fputs(usage_tail, out);
}

static int is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

/* The dev server's run directory lives in the checkout: $BANK_CHECKOUT (the wrapper sets
 * it), else build/bankctl's parent if it is one; NULL for an installed bankctl, which then
 * needs --db or BANK_RUN_DIR. */
static const char *find_checkout(apr_pool_t *p, const char *argv0)
{
    const char *env = getenv("BANK_CHECKOUT"), *slash = strrchr(argv0, '/'), *top;
    apr_finfo_t fi;

    if (env && *env) {
        return env;
    }
    top = slash ? apr_pstrcat(p, apr_pstrndup(p, argv0, (apr_size_t)(slash - argv0)), "/..",
                              (char *)NULL)
                : "..";
    return apr_stat(&fi, apr_pstrcat(p, top, "/mod_bank/bankctl", (char *)NULL), APR_FINFO_TYPE,
                    p) == APR_SUCCESS
               ? top
               : NULL;
}

/* --db and --help before the command; returns the index of the command word. */
static int global_options(ctl_t *c, int argc, const char *const *argv)
{
    int i;

    for (i = 1; i < argc && strncmp(argv[i], "-", 1) == 0; i++) {
        if (c->db_spec && strncmp(argv[i], "--db", 4) == 0) {
            die(EXIT_USAGE, "--db given twice");
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("bankctl (mod_bank) %s\n", BANK_VERSION);
            exit(0);
        }
        if (is_help(argv[i])) {
            usage(stdout, NULL);
            exit(0);
        } else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
            c->db_spec = argv[++i];
        } else if (strncmp(argv[i], "--db=", 5) == 0) {
            c->db_spec = argv[i] + 5;
        } else if (strcmp(argv[i], "--db") == 0) {
            die(EXIT_USAGE, "--db needs a value");
        } else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc && !c->keys_spec) {
            c->keys_spec = argv[++i];
        } else if (strncmp(argv[i], "--keys=", 7) == 0 && !c->keys_spec) {
            c->keys_spec = argv[i] + 7;
        } else if (strncmp(argv[i], "--keys", 6) == 0) {
            die(EXIT_USAGE, "--keys needs a value, once");
        } else {
            /* The name only: "--password=..." before the command must not echo a secret. */
            die(EXIT_USAGE, "unknown option %s (see bankctl --help)",
                apr_pstrndup(c->pool, argv[i], strcspn(argv[i], "=")));
        }
    }
    return i;
}

int main(int argc, const char *const *argv)
{
    apr_pool_t *pool;
    ctl_t *c;
    int i, k, known = 0;

    if (apr_app_initialize(&argc, &argv, NULL) != APR_SUCCESS) {
        fputs("bankctl: cannot initialise APR\n", stderr);
        return 1;
    }
    atexit(apr_terminate);
    bank_log_set(ctl_log);
    /* A database it creates holds password hashes, BVNs and dates of birth: owner only
     * (SQLite gives -wal and -shm the database file's mode). docs/operations.md */
    umask(077);
    apr_pool_create(&pool, NULL);
    /* In the pool, not on main's stack: the pool's cleanups (closing the database) run from
     * apr_terminate after main has returned. */
    c = apr_pcalloc(pool, sizeof(*c));
    c->pool = pool;
    c->checkout = find_checkout(pool, argv[0]);
    i = global_options(c, argc, argv);
    if (i >= argc) {
        usage(stderr, NULL);
        return EXIT_USAGE;
    }
    if (strcmp(argv[i], "help") == 0) {
        usage(stdout, NULL);
        return 0;
    }
    for (k = 0; commands[k].word; k++) {
        const ctl_command_t *cmd = &commands[k];
        if (strcmp(argv[i], cmd->word) != 0) {
            continue;
        }
        known = 1;
        if (!cmd->sub || (i + 1 < argc && strcmp(argv[i + 1], cmd->sub) == 0)) {
            int skip = cmd->sub ? 2 : 1;
            return cmd->run(c, ctl_parse_opts(c, argc - i - skip, argv + i + skip, cmd));
        }
    }
    if (known && i + 1 < argc && is_help(argv[i + 1])) {
        usage(stdout, argv[i]);
        return 0;
    }
    /* Only known words are echoed: a mistyped line may carry a password or a BVN. */
    if (known) {
        die(EXIT_USAGE, "%s: unknown or missing subcommand (see bankctl %s --help)", argv[i],
            argv[i]);
    }
    die(EXIT_USAGE, "unknown command (see bankctl --help)");
}
