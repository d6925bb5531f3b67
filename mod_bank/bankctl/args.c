/* bankctl: options, value checks, input files and the way out with a message. Values are
 * never echoed: a stray argument may be a password or a BVN. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_file_io.h>
#include <apr_file_info.h>
#include "bankctl.h"
#include "bank_limits.h"
#include "bank_encoding.h"
#include "bank_validate.h"

#define SECRET_INPUT_MAX 8192 /* BANK_PASSWORD_MAX characters of up to 4 bytes, and a newline */

void die(int code, const char *fmt, ...)
{
    va_list ap;

    fputs("bankctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

/* The name of option a (-x, --name or --name=VALUE, *eq then at its '='). Values are never
 * echoed: a stray argument may be a password or a BVN. A one-letter option is written -x
 * (bankctl check -f FILE, as apache2 -f). */
static const char *option_name(ctl_t *c, const char *cmd, const char *a, const char **eq)
{
    if (a[0] == '-' && a[1] && a[1] != '-' && a[2] == '\0') {
        *eq = NULL;
        return a + 1;
    }
    if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
        die(EXIT_USAGE, "%s: unexpected argument (options are --name VALUE)", cmd);
    }
    *eq = strchr(a, '=');
    return *eq ? apr_pstrndup(c->pool, a + 2, (apr_size_t)(*eq - a - 2)) : a + 2;
}

/* The option called name: --db and --keys, every command's, or one of spec. */
static const opt_t *option_of(const opt_t *spec, const char *cmd, const char *name)
{
    static const opt_t db_opt = {"db", 1}, keys_opt = {"keys", 1};
    const opt_t *o;

    if (strcmp(name, "db") == 0 || strcmp(name, "keys") == 0) {
        return strcmp(name, "db") == 0 ? &db_opt : &keys_opt;
    }
    for (o = spec; o->name && strcmp(o->name, name) != 0; o++) {
    }
    if (!o->name) {
        die(EXIT_USAGE, "%s: unknown option %s%s", cmd, name[1] ? "--" : "-", name);
    }
    return o;
}

apr_table_t *ctl_parse_opts(ctl_t *c, int argc, const char *const *argv,
                            const ctl_command_t *command)
{
    const opt_t *spec = command->opts;
    const char *cmd = command->name;
    apr_table_t *t = apr_table_make(c->pool, 8);
    int i;

    for (i = 0; i < argc; i++) {
        const char *a = argv[i], *eq, *name, *val = NULL;
        const opt_t *o;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("usage: bankctl [--db DB] %s\n", command->usage);
            exit(0);
        }
        /* A command's one positional argument (has_value 2), given once; "-" is one (standard
         * input). */
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            for (o = spec; o->name && o->has_value != 2; o++) {
            }
            if (o->name && !apr_table_get(t, o->name)) {
                apr_table_setn(t, o->name, a);
                continue;
            }
        }
        name = option_name(c, cmd, a, &eq);
        o = option_of(spec, cmd, name);
        if (o->has_value) {
            val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val || (!eq && strncmp(val, "--", 2) == 0)) {
                die(EXIT_USAGE, "%s: --%s needs a value", cmd, name);
            }
        } else if (eq) {
            die(EXIT_USAGE, "%s: --%s takes no value", cmd, name);
        }
        if (strcmp(name, "db") == 0 || strcmp(name, "keys") == 0) {
            const char **spec = strcmp(name, "db") == 0 ? &c->db_spec : &c->keys_spec;
            if (*spec) {
                die(EXIT_USAGE, "--%s given twice", name);
            }
            *spec = val;
            continue;
        }
        if (apr_table_get(t, name)) {
            die(EXIT_USAGE, "%s: --%s given twice", cmd, name);
        }
        apr_table_setn(t, name, val ? val : "1");
    }
    return t;
}

const char *ctl_need(apr_table_t *o, const char *name, const char *cmd)
{
    const char *v = apr_table_get(o, name);
    if (!v) {
        die(EXIT_USAGE, "%s: --%s is required", cmd, name);
    }
    return v;
}

/* A name-like value: 1..max characters, no control characters; NULL, or what is wrong. */
const char *ctl_text_problem(apr_pool_t *p, const char *v, apr_size_t max)
{
    const char *s;

    for (s = v; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f) {
            return "must not contain control characters";
        }
    }
    if (!bank_utf8_valid(v, strlen(v))) {
        return "must be UTF-8 text";
    }
    if (bank_utf8_length(v) < 1 || bank_utf8_length(v) > max || v[strspn(v, " ")] == '\0') {
        return apr_psprintf(p, "must be 1 to %" APR_SIZE_T_FMT " characters", max);
    }
    return NULL;
}

void ctl_check_text(const char *cmd, const char *opt, const char *v, apr_size_t max)
{
    apr_pool_t *p;
    const char *why;

    apr_pool_create(&p, NULL);
    if ((why = ctl_text_problem(p, v, max)) != NULL) {
        die(EXIT_USAGE, "%s: --%s %s", cmd, opt, why);
    }
    apr_pool_destroy(p);
}

const char *ctl_phone_problem(apr_pool_t *p, const char *v)
{
    if (v[0] == '\0' || strlen(v) > BANK_PHONE_MAX || v[strspn(v, "+0123456789 -()")] != '\0') {
        return apr_psprintf(p, "must be 1 to %d of the characters +0-9, space, -()",
                            BANK_PHONE_MAX);
    }
    return NULL;
}

void ctl_check_phone(const char *cmd, const char *v)
{
    apr_pool_t *p;
    const char *why;

    apr_pool_create(&p, NULL);
    if ((why = ctl_phone_problem(p, v)) != NULL) {
        die(EXIT_USAGE, "%s: --phone %s", cmd, why);
    }
    apr_pool_destroy(p);
}

long ctl_parse_range(const char *cmd, const char *opt, const char *v, long min, long max)
{
    apr_size_t len = strlen(v);
    long n;

    if (len == 0 || len > 9 || v[strspn(v, "0123456789")] != '\0' ||
        (n = strtol(v, NULL, 10)) < min || n > max) {
        die(EXIT_USAGE, "%s: --%s must be a whole number from %ld to %ld", cmd, opt, min, max);
    }
    return n;
}

/* ---- files ---- */

/* A whole text file of at most max bytes, or stdin for "-"; dies on failure. what names it in
 * messages (never the content: it may be a password). */
char *ctl_slurp(ctl_t *c, const char *path, apr_size_t max, const char *what)
{
    apr_file_t *f = NULL;
    apr_finfo_t fi;
    apr_size_t n = 0, cap = max;
    char *buf, err[120];
    apr_status_t rv =
        strcmp(path, "-") == 0
            ? apr_file_open_stdin(&f, c->pool)
            : apr_file_open(&f, path, APR_FOPEN_READ | APR_FOPEN_BINARY, APR_OS_DEFAULT, c->pool);

    if (rv == APR_SUCCESS && strcmp(path, "-") != 0 &&
        apr_file_info_get(&fi, APR_FINFO_SIZE, f) == APR_SUCCESS && fi.size < (apr_off_t)max) {
        cap = (apr_size_t)fi.size;
    }
    buf = apr_palloc(c->pool, cap + 2);
    /* One byte more than allowed: reading it means the input is too long. */
    if (rv == APR_SUCCESS && (rv = apr_file_read_full(f, buf, cap + 1, &n)) == APR_EOF) {
        rv = APR_SUCCESS;
    }
    if (rv != APR_SUCCESS) {
        die(1, "cannot read %s: %s", what, apr_strerror(rv, err, sizeof(err)));
    }
    if (n > cap) {
        die(EXIT_USAGE, "%s is too long (or changed while read)", what);
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        die(EXIT_USAGE, "%s contains a NUL byte", what);
    }
    return buf;
}

const char *ctl_read_password(ctl_t *c, apr_table_t *o, const char *cmd)
{
    const char *arg = apr_table_get(o, "password"), *file = apr_table_get(o, "password-file");
    char *pw;
    apr_size_t n;

    if (!arg == !file) {
        die(EXIT_USAGE, "%s: give one of --password P, --password - or --password-file F", cmd);
    }
    if (arg && strcmp(arg, "-") != 0) {
        pw = apr_pstrdup(c->pool, arg);
    } else {
        pw = ctl_slurp(c, file ? file : "-", SECRET_INPUT_MAX, "the password");
        n = strlen(pw);
        /* One trailing line end is the file's, not the password's. */
        if (n > 0 && pw[n - 1] == '\n') {
            pw[--n] = '\0';
        }
        if (n > 0 && pw[n - 1] == '\r') {
            pw[--n] = '\0';
        }
    }
    n = bank_utf8_length(pw);
    if (n < 1 || n > BANK_PASSWORD_MAX) {
        die(EXIT_USAGE, "%s: the password must be 1 to %d characters", cmd, BANK_PASSWORD_MAX);
    }
    return pw;
}
