/* bankctl check (check.c) and its reading of the httpd configuration (check_conf.c): what
 * they share, the servers found and what is being checked. */
#ifndef BANKCTL_CHECK_SERVERS_H
#define BANKCTL_CHECK_SERVERS_H

#include <stdio.h>
#include <apr_tables.h>
#include "bankctl.h"

/* One server: the main one or a <VirtualHost>. */
typedef struct {
    const char *name;
    const char *driver, *params;
    int dbd_min, dbd_keep, dbd_max; /* -1: not set here */
    apr_array_header_t *providers;  /* const char *: "KIND [URL]" */
    apr_array_header_t *credentials;
    apr_array_header_t *key_files;
    apr_array_header_t *identity_keys; /* of BankIdentity*: root's (or the starting user's) */
} scope_t;

typedef struct {
    ctl_t *c;
    const char *root; /* ServerRoot */
    const char *user, *group;
    int server_limit;
    apr_table_t *env; /* Debian's envvars */
    scope_t *main, *cur;
    apr_array_header_t *vhosts; /* scope_t * */
    const char *key_lines;      /* the BankIdentity* directives, one a line */
    ctl_check_keys_t keys;
    int failures;
} conf_t;

/* One line of the report, "ok" or "FAIL"; a failure counts. */
static inline void say(conf_t *cf, int ok, const char *check, const char *detail)
{
    printf("%-4s %s: %s\n", ok ? "ok" : "FAIL", check, detail);
    fflush(stdout);
    cf->failures += !ok;
}

/* Reads the configuration file and what it includes, with Debian's envvars beside it, into
 * cf->main and cf->vhosts (cf->c set, the rest zero); a file that cannot be included or is
 * nested too deep is a failure said. */
void ctl_check_read_conf(conf_t *cf, const char *file);

#endif
