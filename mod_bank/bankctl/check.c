/* bankctl check: reads an httpd configuration the way an operator wrote it (check_conf.c: -f
 * FILE, default Debian's /etc/apache2/apache2.conf, with the Include files and Debian's envvars)
 * and checks, as the user httpd's children run as, what `apache2 -t` does not: each database
 * opens with the configured parameters and has this build's schema (check_db.c: neither behind
 * nor ahead, the identity keys the database was sealed with, on PostgreSQL the privileges every
 * statement needs), the file modes of the database and of every key file, the identity provider's
 * credentials and a TLS connection to it, and the mod_dbd pool numbers against each other and
 * PostgreSQL's max_connections. One line per check ("ok" or "FAIL"), exit 1 on any failure
 * (docs/operations.md). Never prints a secret: database parameters are shown without their
 * password. */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <glob.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include <apr_file_info.h>
#include <curl/curl.h>
#include "bankctl.h"
#include "check_servers.h"
#include "bank_idp.h"
#include "bank_store.h"

#define DEFAULT_CONF "/etc/apache2/apache2.conf"
/* mod_dbd's defaults (threaded MPM) and the event MPM's ServerLimit default. */
#define DBD_MIN_DEFAULT 1
#define DBD_KEEP_DEFAULT 2
#define DBD_MAX_DEFAULT 10
#define SERVER_LIMIT_DEFAULT 16

/* DBDParams without its password (password=... in a conninfo, :secret@ in a URI). */
static const char *shown(apr_pool_t *p, const char *params)
{
    char *s = apr_pstrdup(p, params), *pw, *at, *colon;

    if ((pw = strstr(s, "password=")) != NULL) {
        char *end = pw + 9;
        while (*end && !apr_isspace(*end)) {
            end++;
        }
        s = apr_pstrcat(p, apr_pstrndup(p, s, (apr_size_t)(pw - s)), "password=***", end,
                        (char *)NULL);
    }
    if (strstr(s, "://") && (at = strchr(s, '@')) != NULL &&
        (colon = memchr(strstr(s, "://") + 3, ':', (apr_size_t)(at - strstr(s, "://") - 3)))) {
        s = apr_pstrcat(p, apr_pstrndup(p, s, (apr_size_t)(colon - s)), ":***", at, (char *)NULL);
    }
    return s;
}

/* The value of key=VALUE in a libpq conninfo, or NULL. */
static const char *conninfo_value(apr_pool_t *p, const char *params, const char *key)
{
    const char *at = params;
    apr_size_t k = strlen(key);

    while ((at = strstr(at, key)) != NULL) {
        if ((at == params || apr_isspace(at[-1])) && at[k] == '=') {
            return apr_pstrndup(p, at + k + 1, strcspn(at + k + 1, " \t"));
        }
        at += k;
    }
    return NULL;
}

/* A file's mode and owner against what it must be: owner (NULL: any) and no access for
 * group and others. */
static void file_mode(conf_t *cf, const char *check, const char *path, const struct passwd *owner)
{
    apr_pool_t *p = cf->c->pool;
    /* copied first: getpwuid below may reuse the static entry owner points into */
    uid_t want = owner ? owner->pw_uid : 0;
    const char *want_name = owner ? apr_pstrdup(p, owner->pw_name) : NULL;
    struct stat st;
    struct passwd *pw;

    if (stat(path, &st) != 0) {
        say(cf, 0, check, apr_psprintf(p, "%s: cannot read it (%s)", path, strerror(errno)));
        return;
    }
    pw = getpwuid(st.st_uid);
    if ((st.st_mode & 077) || !(st.st_mode & 0400) || (want_name && st.st_uid != want)) {
        say(cf, 0, check,
            apr_psprintf(p, "%s is %04o, owner %s: must be readable by %s only (chmod go= %s)",
                         path, (unsigned)(st.st_mode & 07777), pw ? pw->pw_name : "?",
                         want_name ? want_name : "its owner", path));
        return;
    }
    say(cf, 1, check,
        apr_psprintf(p, "%s %04o, owner %s", path, (unsigned)(st.st_mode & 07777),
                     pw ? pw->pw_name : "?"));
}

/* say() for ctl_check_database. */
static void say_to(void *baton, int ok, const char *check, const char *detail)
{
    say(baton, ok, check, detail);
}

/* The highest NNN of the SQL files of driver under the SQL directory (0: none found). */
static int latest_migration(apr_pool_t *p, const char *driver)
{
    const char *from, *dir = ctl_sql_dir(p, NULL, &from);
    glob_t g;
    int best = 0;
    size_t i;

    if (glob(apr_pstrcat(p, dir, "/", strcmp(driver, "pgsql") ? "sqlite" : "postgresql",
                         "/[0-9][0-9][0-9]_*.sql", (char *)NULL),
             0, NULL, &g) == 0) {
        for (i = 0; i < g.gl_pathc; i++) {
            int v = atoi(strrchr(g.gl_pathv[i], '/') + 1);
            best = v > best ? v : best;
        }
    }
    globfree(&g);
    return best;
}

/* As httpd's User: the database opens, its schema is this build's, its files' modes; on
 * PostgreSQL max_connections against the pool. */
static void database_checks(conf_t *cf, const scope_t *s, const struct passwd *pw, int dbd_max)
{
    apr_pool_t *p = cf->c->pool;
    const char *err = NULL, *what = apr_psprintf(p, "database (%s)", s->name), *v;
    int pg = strcmp(s->driver, "pgsql") == 0, latest = latest_migration(p, s->driver);
    bank_db_t *db;

    if (!pg) {
        const char *dir = apr_pstrndup(
            p, s->params,
            (apr_size_t)(strrchr(s->params, '/') ? strrchr(s->params, '/') - s->params : 0));
        file_mode(cf, "file mode of the database", s->params, pw);
        file_mode(cf, "file mode of the database directory", *dir ? dir : ".", pw);
        if (access(s->params, R_OK | W_OK) != 0 || access(*dir ? dir : ".", W_OK | X_OK) != 0) {
            say(cf, 0, what,
                apr_psprintf(p, "%s or its directory is not writable by %s", s->params,
                             pw ? pw->pw_name : "this user"));
            return;
        }
    } else {
        if ((v = conninfo_value(p, s->params, "passfile")) != NULL) {
            file_mode(cf, "file mode of the PostgreSQL password file", v, pw);
        }
        if ((v = conninfo_value(p, s->params, "sslrootcert")) != NULL) {
            say(cf, access(v, R_OK) == 0, "PostgreSQL CA file",
                apr_psprintf(p, "%s %s by %s", v,
                             access(v, R_OK) == 0 ? "readable" : "NOT readable",
                             pw ? pw->pw_name : "this user"));
        }
    }
    if (!(db = bank_db_open(p, s->driver, s->params, &err))) {
        say(cf, 0, what,
            apr_psprintf(p, "cannot open %s %s as %s: %s", s->driver, shown(p, s->params),
                         pw ? pw->pw_name : "this user", bank_db_error_line(p, err)));
        return;
    }
    say(cf, 1, what,
        apr_psprintf(p, "opened %s %s as %s", s->driver, shown(p, s->params),
                     pw ? pw->pw_name : "this user"));
    ctl_check_database(p, db, latest, &cf->keys, say_to, cf);
    if (pg) {
        const char *max = NULL, *reserved = NULL;
        int limit = cf->server_limit > 0 ? cf->server_limit : SERVER_LIMIT_DEFAULT, room;
        bank_db_query_value(db, "SHOW max_connections", &max);
        bank_db_query_value(db, "SHOW superuser_reserved_connections", &reserved);
        room = (max ? atoi(max) : 0) - (reserved ? atoi(reserved) : 0);
        say(cf, max && dbd_max * limit <= room, "connections",
            apr_psprintf(p,
                         "DBDMax %d x ServerLimit %d = %d per httpd server; PostgreSQL allows "
                         "%d (max_connections %s - %s reserved)%s",
                         dbd_max, limit, dbd_max * limit, room, max ? max : "?",
                         reserved ? reserved : "?",
                         dbd_max * limit <= room ? "" : ": lower DBDMax or raise max_connections"));
    }
}

/* The provider's credentials as the module will read them, and a TLS connection to it. */
static void provider_checks(conf_t *cf, const scope_t *s, const scope_t *inherit)
{
    apr_pool_t *p = cf->c->pool;
    int i;

    for (i = 0; i < s->providers->nelts; i++) {
        char *spec = apr_pstrdup(p, APR_ARRAY_IDX(s->providers, i, const char *)), *last;
        const char *kind_name = apr_strtok(spec, " ", &last), *url = apr_strtok(NULL, " ", &last);
        const apr_array_header_t *cred =
            s->credentials->nelts ? s->credentials : inherit->credentials;
        bank_idp_kind kind;
        const char *norm = NULL, *why, *app = NULL, *secret = NULL;
        CURL *h;
        CURLcode rc;

        if (bank_idp_kind_parse(kind_name, &kind) != 0 || kind == BANK_IDP_TABLE) {
            continue;
        }
        if (!cred->nelts) {
            say(cf, 0, "provider credentials",
                apr_psprintf(p, "%s (%s): no BankBvnProviderCredentials", kind_name, s->name));
        } else {
            const char *c0 = APR_ARRAY_IDX(cred, 0, const char *);
            /* APP-ID SECRET, or one file (file:PATH or the bare path) holding them */
            why = strchr(c0, ' ') ? NULL
                                  : bank_idp_credentials_file(
                                        p, strncmp(c0, "file:", 5) ? c0 : c0 + 5, &app, &secret);
            say(cf, !why, "provider credentials",
                apr_psprintf(p, "%s (%s): %s", kind_name, s->name, why ? why : "present"));
        }
        if ((why = bank_idp_url_check(p, url ? url : bank_idp_default_url(kind), &norm))) {
            say(cf, 0, "provider TLS", apr_psprintf(p, "%s: %s", kind_name, why));
            continue;
        }
        if (strncasecmp(norm, "https://", 8) != 0) {
            say(cf, 0, "provider TLS", apr_psprintf(p, "%s at %s: not https", kind_name, norm));
            continue;
        }
        h = curl_easy_init();
        curl_easy_setopt(h, CURLOPT_URL, norm);
        curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        rc = curl_easy_perform(h);
        curl_easy_cleanup(h);
        say(cf, rc == CURLE_OK, "provider TLS",
            apr_psprintf(p, "%s at %s: %s", kind_name, norm,
                         rc == CURLE_OK ? "connected, certificate verified"
                                        : curl_easy_strerror(rc)));
    }
}

/* The pool numbers against each other (mod_dbd's defaults where not set). */
static int pool_checks(conf_t *cf, const scope_t *s, const scope_t *inherit)
{
    int min = s->dbd_min >= 0         ? s->dbd_min
              : inherit->dbd_min >= 0 ? inherit->dbd_min
                                      : DBD_MIN_DEFAULT;
    int keep = s->dbd_keep >= 0         ? s->dbd_keep
               : inherit->dbd_keep >= 0 ? inherit->dbd_keep
                                        : DBD_KEEP_DEFAULT;
    int max = s->dbd_max >= 0         ? s->dbd_max
              : inherit->dbd_max >= 0 ? inherit->dbd_max
                                      : DBD_MAX_DEFAULT;

    say(cf, min <= keep && keep <= max && max > 0, apr_psprintf(cf->c->pool, "pool (%s)", s->name),
        apr_psprintf(cf->c->pool, "DBDMin %d, DBDKeep %d, DBDMax %d%s", min, keep, max,
                     min > keep   ? ": DBDMin exceeds DBDKeep"
                     : keep > max ? ": DBDKeep exceeds DBDMax"
                     : max < 1    ? ": DBDMax must be at least 1"
                                  : ""));
    return max;
}

/* The key files, as httpd reads them (as the user it starts as, root, before it switches
 * user): present, readable by their owner only; the identity keys also that user's
 * (bank_key_file_read refuses an identity key of another account). */
static void key_checks(conf_t *cf, const scope_t *s)
{
    const struct passwd *starter = getpwuid(geteuid());
    int i;

    for (i = 0; i < s->key_files->nelts; i++) {
        file_mode(cf, "file mode of a key file", APR_ARRAY_IDX(s->key_files, i, const char *),
                  NULL);
    }
    for (i = 0; i < s->identity_keys->nelts; i++) {
        file_mode(cf, "file mode of an identity key",
                  APR_ARRAY_IDX(s->identity_keys, i, const char *), starter);
    }
}

/* The database checks in a child switched to httpd's User (and Group). */
static void as_user(conf_t *cf, const scope_t *s, int dbd_max)
{
    struct passwd *pw = cf->user ? getpwnam(cf->user) : NULL;
    struct group *gr = cf->group ? getgrnam(cf->group) : NULL;
    pid_t pid;
    int status = 0;

    if (cf->user && !pw) {
        say(cf, 0, "user", apr_psprintf(cf->c->pool, "no such user %s", cf->user));
        return;
    }
    if (pw && geteuid() != 0 && geteuid() != pw->pw_uid) {
        say(cf, 0, "user",
            apr_psprintf(cf->c->pool, "httpd runs as %s: run bankctl check as root", cf->user));
        return;
    }
    if (!pw) {
        pw = getpwuid(geteuid());
    }
    fflush(stdout);
    if ((pid = fork()) == 0) {
        conf_t child = *cf;
        if (geteuid() == 0 && pw->pw_uid != 0 &&
            (setgid(gr ? gr->gr_gid : pw->pw_gid) != 0 ||
             initgroups(pw->pw_name, gr ? gr->gr_gid : pw->pw_gid) != 0 ||
             setuid(pw->pw_uid) != 0)) {
            say(&child, 0, "user", apr_psprintf(cf->c->pool, "cannot switch to %s", cf->user));
            _exit(1);
        }
        child.failures = 0;
        /* As mod_bank's children do: a HOME the User cannot enter (a root shell's) is
         * dropped, so libpq looks in the User's own home for its files. */
        if (getenv("HOME") && access(getenv("HOME"), X_OK) != 0) {
            unsetenv("HOME");
        }
        database_checks(&child, s, pw, dbd_max);
        fflush(stdout);
        _exit(child.failures ? 1 : 0);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        cf->failures++;
    }
}

int cmd_check(ctl_t *c, apr_table_t *o)
{
    conf_t cf;
    const char *file = apr_table_get(o, "f");
    int i, servers = 0;

    memset(&cf, 0, sizeof(cf));
    cf.c = c;
    file = file ? file : DEFAULT_CONF;
    ctl_check_read_conf(&cf, file);
    /* The identity keys, read here (as root: their files are root's) for the children. */
    if ((cf.keys.seen = cf.key_lines != NULL)) {
        bank_keyring_t *ring = NULL;
        cf.keys.error = bank_keyring_parse(c->pool, apr_pstrdup(c->pool, cf.key_lines), cf.root,
                                           "the BankIdentity* lines", &ring);
        cf.keys.ring = ring;
    }
    say(&cf, 1, "configuration",
        apr_psprintf(c->pool, "%s read; httpd runs as %s", file, cf.user ? cf.user : "(no User)"));
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        say(&cf, 0, "provider TLS", "libcurl failed to initialise");
    }
    for (i = -1; i < cf.vhosts->nelts; i++) {
        const scope_t *s = i < 0 ? cf.main : APR_ARRAY_IDX(cf.vhosts, i, scope_t *);
        key_checks(&cf, s);
        provider_checks(&cf, s, cf.main);
        /* A virtual host without its own DBDriver uses the main server's pool. */
        if (s->driver || (i < 0 && s->params)) {
            scope_t eff = *s;
            int max;
            eff.params = s->params ? s->params : cf.main->params;
            max = pool_checks(&cf, &eff, i < 0 ? cf.main : cf.main);
            if (!eff.params) {
                say(&cf, 0, apr_psprintf(c->pool, "database (%s)", s->name), "no DBDParams");
                continue;
            }
            as_user(&cf, &eff, max);
            servers++;
        }
    }
    if (!servers) {
        say(&cf, 0, "database", "no DBDriver in this configuration: mod_bank has no database");
    }
    curl_global_cleanup();
    printf("%s\n", cf.failures ? "bankctl check: FAILED" : "bankctl check: all ok");
    return cf.failures ? 1 : 0;
}
