/* bankctl token issue and token revoke: the one token issue the module's sign-in uses
 * (bank_customer.c), with abilities checked against the list the module knows. */
#include <stdio.h>
#include <string.h>
#include <apr_strings.h>
#include "bankctl.h"
#include "bank_time.h"
#include "bank_customer.h"
#include "bank_json.h"
#include "bank_limits.h"
#include "bank_store.h"

/* --abilities a,b as the JSON array text the tokens table stores; each a known ability. */
static const char *abilities_json(ctl_t *c, const char *list)
{
    json_object *arr = bank_json_own(c->pool, json_object_new_array());
    const char *s = list ? list : BANK_ABILITY_ALL;

    for (;;) {
        apr_size_t n = strcspn(s, ",");
        const char *a = apr_pstrndup(c->pool, s, n);
        if (!bank_ability_known(a)) {
            /* The name is not echoed: only what the module knows is. */
            die(EXIT_USAGE,
                "token issue: --abilities takes a comma-separated list of the known "
                "abilities: %s",
                BANK_ABILITIES_TEXT);
        }
        json_object_array_add(arr, json_object_new_string(a));
        if (s[n] == '\0') {
            break;
        }
        s += n + 1;
    }
    return bank_json_text(c->pool, arr);
}

int cmd_token_issue(ctl_t *c, apr_table_t *o)
{
    const char *cmd = "token issue", *email = ctl_need(o, "email", cmd),
               *ttl_s = apr_table_get(o, "ttl");
    long ttl = ttl_s ? ctl_parse_range(cmd, "ttl", ttl_s, BANK_TOKEN_TTL_MIN, BANK_TOKEN_TTL_MAX)
                     : BANK_TOKEN_TTL_DEFAULT;
    const char *abilities = abilities_json(c, apr_table_get(o, "abilities"));
    const char *plain = NULL, *expires = NULL;

    ctl_open_ready(c);
    if (bank_token_issue(c->db, c->pool, ctl_customer_id(c, email, 1), ttl, abilities, &plain,
                         &expires) != BANK_DB_OK) {
        ctl_db_fail(c, "cannot issue the token");
    }
    printf("%s\n", plain);
    return 0;
}

int cmd_token_revoke(ctl_t *c, apr_table_t *o)
{
    const char *email = ctl_need(o, "email", "token revoke");
    int n = 0;

    ctl_open_ready(c);
    if (bank_store_token_revoke_all(c->db, ctl_customer_id(c, email, 1), &n) != BANK_DB_OK) {
        ctl_db_fail(c, "cannot revoke the tokens");
    }
    printf("revoked %d\n", n);
    return 0;
}

typedef struct {
    const char *before;
    int batch;
} token_prune_t;

static bank_db_rc token_prune_batch(ctl_t *c, void *baton, long i, int *done, int *more)
{
    token_prune_t *t = baton;
    bank_db_rc rc = bank_store_tokens_prune(c->db, t->before, t->batch, done);

    (void)i;
    *more = rc == BANK_DB_OK && *done == t->batch;
    return rc;
}

/* Tokens expired more than DAYS ago: refused everywhere already, removed a batch a
 * statement (ctl_batches) without a row each on the revocation feed (014). */
int cmd_token_prune(ctl_t *c, apr_table_t *o)
{
    const char *d = apr_table_get(o, "expired-for"), *b = apr_table_get(o, "batch");
    long days = d ? ctl_parse_range("token prune", "expired-for", d, 1, 3650) : 30;
    long batch = b ? ctl_parse_range("token prune", "batch", b, 1, 10000) : 500;
    token_prune_t t = {
        bank_time_iso(c->pool, apr_time_now() - apr_time_from_sec((apr_time_t)days * 86400)),
        (int)batch};
    apr_int64_t total;

    ctl_open_ready(c);
    total = ctl_batches(c, token_prune_batch, &t, "cannot prune the tokens");
    printf("%" APR_INT64_T_FMT " tokens expired before %s removed\n", total,
           bank_time_api(c->pool, t.before));
    return 0;
}
