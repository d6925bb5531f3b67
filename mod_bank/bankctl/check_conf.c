/* bankctl check's reading of an httpd configuration (check.c), the way httpd reads it: Debian's
 * envvars and ${NAME}, quoted words, continued lines, Include and IncludeOptional (globs,
 * directories, nested at most INCLUDE_DEPTH deep), and per server (the main one and each
 * <VirtualHost>) the directives bankctl check looks at. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <glob.h>
#include <sys/stat.h>
#include <apr_strings.h>
#include <apr_lib.h>
#include "bankctl.h"
#include "check_servers.h"

#define CONF_MAX (1024 * 1024)
#define INCLUDE_DEPTH 16

static scope_t *new_scope(apr_pool_t *p, const char *name)
{
    scope_t *s = apr_pcalloc(p, sizeof(*s));

    s->name = name;
    s->dbd_min = s->dbd_keep = s->dbd_max = -1;
    s->providers = apr_array_make(p, 2, sizeof(const char *));
    s->credentials = apr_array_make(p, 2, sizeof(const char *));
    s->key_files = apr_array_make(p, 2, sizeof(const char *));
    s->identity_keys = apr_array_make(p, 2, sizeof(const char *));
    return s;
}

/* Debian's envvars: the "export NAME=VALUE" lines ($SUFFIX empty, as for /etc/apache2). */
static void read_envvars(conf_t *cf, const char *dir)
{
    const char *path = apr_pstrcat(cf->c->pool, dir, "/envvars", (char *)NULL);
    char *text, *line, *last;

    cf->env = apr_table_make(cf->c->pool, 8);
    if (access(path, R_OK) != 0) {
        return;
    }
    text = ctl_slurp(cf->c, path, CONF_MAX, path);
    for (line = apr_strtok(text, "\n", &last); line; line = apr_strtok(NULL, "\n", &last)) {
        char *eq, *v, *suffix;
        while (apr_isspace(*line)) {
            line++;
        }
        if (strncmp(line, "export ", 7) != 0 || !(eq = strchr(line + 7, '='))) {
            continue;
        }
        *eq = '\0';
        v = apr_pstrdup(cf->c->pool, eq + 1);
        while ((suffix = strstr(v, "$SUFFIX")) != NULL) {
            memmove(suffix, suffix + 7, strlen(suffix + 7) + 1);
        }
        apr_table_set(cf->env, line + 7, v);
    }
}

/* ${NAME} from the environment, else from envvars. */
static const char *expand(conf_t *cf, const char *s)
{
    const char *out = "", *open;

    while ((open = strstr(s, "${")) != NULL) {
        const char *close = strchr(open, '}'), *name, *v;
        if (!close) {
            break;
        }
        name = apr_pstrndup(cf->c->pool, open + 2, (apr_size_t)(close - open - 2));
        v = getenv(name);
        if (!v) {
            v = apr_table_get(cf->env, name);
        }
        out = apr_pstrcat(cf->c->pool, out, apr_pstrndup(cf->c->pool, s, (apr_size_t)(open - s)),
                          v ? v : "", (char *)NULL);
        s = close + 1;
    }
    return apr_pstrcat(cf->c->pool, out, s, (char *)NULL);
}

/* The next word of *s (a "quoted" one without its quotes, \" inside kept as "), or "" at
 * the end; *s moves past it. */
static char *next_word(apr_pool_t *p, const char **s)
{
    const char *at = *s;
    char *w, *o;
    char quote = 0;

    while (apr_isspace(*at)) {
        at++;
    }
    if (*at == '"' || *at == '\'') {
        quote = *at++;
    }
    w = o = apr_palloc(p, strlen(at) + 1);
    while (*at && (quote ? *at != quote : !apr_isspace(*at))) {
        if (quote && at[0] == '\\' && at[1] == quote) {
            at++;
        }
        *o++ = *at++;
    }
    *o = '\0';
    if (quote && *at == quote) {
        at++;
    }
    *s = at;
    return w;
}

/* The arguments of a directive line, quotes removed. */
static apr_array_header_t *args_of(apr_pool_t *p, const char *rest)
{
    apr_array_header_t *a = apr_array_make(p, 4, sizeof(const char *));

    for (;;) {
        while (apr_isspace(*rest)) {
            rest++;
        }
        if (!*rest) {
            return a;
        }
        APR_ARRAY_PUSH(a, const char *) = next_word(p, &rest);
    }
}

static int int_arg(const apr_array_header_t *a)
{
    return a->nelts ? atoi(APR_ARRAY_IDX(a, 0, const char *)) : -1;
}

static void read_conf(conf_t *cf, const char *path, int depth);

static void include(conf_t *cf, const char *pattern, int optional, int depth)
{
    glob_t g;
    size_t i;
    int rc;

    if (pattern[0] != '/') {
        pattern = apr_pstrcat(cf->c->pool, cf->root, "/", pattern, (char *)NULL);
    }
    rc = glob(pattern, 0, NULL, &g);
    if (rc != 0) {
        if (!optional && !strpbrk(pattern, "*?[")) {
            say(cf, 0, "configuration", apr_psprintf(cf->c->pool, "cannot include %s", pattern));
        }
        globfree(&g);
        return;
    }
    for (i = 0; i < g.gl_pathc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            include(cf, apr_pstrcat(cf->c->pool, g.gl_pathv[i], "/*", (char *)NULL), 1, depth);
        } else {
            read_conf(cf, apr_pstrdup(cf->c->pool, g.gl_pathv[i]), depth + 1);
        }
    }
    globfree(&g);
}

/* One directive of the configuration, in the server being read. */
static void directive(conf_t *cf, const char *name, const apr_array_header_t *a, int depth)
{
    apr_pool_t *p = cf->c->pool;
    scope_t *s = cf->cur;
    const char *first = a->nelts ? APR_ARRAY_IDX(a, 0, const char *) : "";
    int i;

    if (!strcasecmp(name, "Include") || !strcasecmp(name, "IncludeOptional")) {
        include(cf, first, !strcasecmp(name, "IncludeOptional"), depth);
    } else if (!strcasecmp(name, "ServerRoot")) {
        cf->root = first;
    } else if (!strcasecmp(name, "User")) {
        cf->user = first;
    } else if (!strcasecmp(name, "Group")) {
        cf->group = first;
    } else if (!strcasecmp(name, "ServerLimit")) {
        cf->server_limit = int_arg(a);
    } else if (!strncasecmp(name, "BankIdentity", 12)) {
        cf->key_lines = apr_pstrcat(p, cf->key_lines ? cf->key_lines : "", name, (char *)NULL);
        for (i = 0; i < a->nelts; i++) {
            cf->key_lines = apr_pstrcat(p, cf->key_lines, " \"", APR_ARRAY_IDX(a, i, const char *),
                                        "\"", (char *)NULL);
        }
        cf->key_lines = apr_pstrcat(p, cf->key_lines, "\n", (char *)NULL);
    } else if (!strcasecmp(name, "DBDriver")) {
        s->driver = first;
    } else if (!strcasecmp(name, "DBDParams")) {
        s->params = first;
    } else if (!strcasecmp(name, "DBDMin")) {
        s->dbd_min = int_arg(a);
    } else if (!strcasecmp(name, "DBDKeep")) {
        s->dbd_keep = int_arg(a);
    } else if (!strcasecmp(name, "DBDMax")) {
        s->dbd_max = int_arg(a);
    } else if (!strcasecmp(name, "BankBvnProvider") && strcasecmp(first, "none") != 0) {
        APR_ARRAY_PUSH(s->providers, const char *) =
            apr_pstrcat(p, first, a->nelts > 1 ? " " : "",
                        a->nelts > 1 ? APR_ARRAY_IDX(a, 1, const char *) : "", (char *)NULL);
    } else if (!strcasecmp(name, "BankBvnProviderCredentials")) {
        if (a->nelts == 1 && strncmp(first, "file:", 5) != 0) { /* the bare path of a file */
            APR_ARRAY_PUSH(s->key_files, const char *) =
                first[0] == '/' ? first : apr_pstrcat(p, cf->root, "/", first, (char *)NULL);
        }
        APR_ARRAY_PUSH(s->credentials, const char *) =
            apr_pstrcat(p, first, a->nelts > 1 ? " " : "",
                        a->nelts > 1 ? APR_ARRAY_IDX(a, 1, const char *) : "", (char *)NULL);
    }
    /* Every key file a Bank* directive names: file:PATH, or a path given to a *Key* one. */
    if (!strncasecmp(name, "Bank", 4)) {
        for (i = 0; i < a->nelts; i++) {
            const char *v = APR_ARRAY_IDX(a, i, const char *);
            if (!strncmp(v, "file:", 5) && v[5]) {
                APR_ARRAY_PUSH(s->key_files, const char *) = v + 5;
            } else if (v[0] == '/' && strcasestr(name, "key")) {
                APR_ARRAY_PUSH(strncasecmp(name, "BankIdentity", 12) ? s->key_files
                                                                     : s->identity_keys,
                               const char *) = v;
            }
        }
    }
}

static void read_conf(conf_t *cf, const char *path, int depth)
{
    apr_pool_t *p = cf->c->pool;
    char *text, *line, *last;
    const char *joined = NULL;

    if (depth > INCLUDE_DEPTH) {
        say(cf, 0, "configuration", apr_psprintf(p, "includes nested too deep at %s", path));
        return;
    }
    text = ctl_slurp(cf->c, path, CONF_MAX, path);
    for (line = apr_strtok(text, "\n", &last); line; line = apr_strtok(NULL, "\n", &last)) {
        apr_size_t n = strlen(line);
        const char *rest;
        char *name;

        while (n && apr_isspace(line[n - 1])) {
            line[--n] = '\0';
        }
        if (n && line[n - 1] == '\\') { /* continued on the next line */
            line[n - 1] = '\0';
            joined = apr_pstrcat(p, joined ? joined : "", line, (char *)NULL);
            continue;
        }
        rest = joined ? apr_pstrcat(p, joined, line, (char *)NULL) : line;
        joined = NULL;
        while (apr_isspace(*rest)) {
            rest++;
        }
        if (!*rest || *rest == '#') {
            continue;
        }
        rest = expand(cf, rest);
        name = next_word(p, &rest);
        if (!strncasecmp(name, "<VirtualHost", 12)) {
            while (apr_isspace(*rest)) {
                rest++;
            }
            cf->cur = new_scope(p, apr_psprintf(p, "<VirtualHost %s in %s", rest, path));
            APR_ARRAY_PUSH(cf->vhosts, scope_t *) = cf->cur;
        } else if (!strcasecmp(name, "</VirtualHost>")) {
            cf->cur = cf->main;
        } else if (*name != '<') {
            directive(cf, name, args_of(p, rest), depth);
        }
    }
}

void ctl_check_read_conf(conf_t *cf, const char *file)
{
    const char *slash = strrchr(file, '/');

    cf->root = slash ? apr_pstrndup(cf->c->pool, file, (apr_size_t)(slash - file)) : ".";
    cf->server_limit = -1;
    cf->main = cf->cur = new_scope(cf->c->pool, "main server");
    cf->vhosts = apr_array_make(cf->c->pool, 4, sizeof(scope_t *));
    read_envvars(cf, cf->root);
    read_conf(cf, file, 0);
}
