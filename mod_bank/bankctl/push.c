/* bankctl push list, push retry and push prune: the push outbox (docs/push.md). The device
 * token is never shown. */
#include <stdio.h>
#include <string.h>
#include <apr_strings.h>
#include "bankctl.h"
#include "bank_store.h"
#include "bank_time.h"

#define LIMIT_DEFAULT 50
#define LIMIT_MAX 10000
/* push prune: rows done more than this many days ago (default), and rows a batch looks at */
#define PRUNE_DAYS_DEFAULT 30
#define PRUNE_BATCH_DEFAULT 500

static const char *or_dash(ctl_t *c, const char *s)
{
    return s ? bank_time_api(c->pool, s) : "-";
}

int cmd_push_list(ctl_t *c, apr_table_t *o)
{
    const char *lim = apr_table_get(o, "limit"), *state = NULL;
    long limit = lim ? ctl_parse_range("push list", "limit", lim, 1, LIMIT_MAX) : LIMIT_DEFAULT;
    apr_array_header_t *rows;
    int i;

    if (apr_table_get(o, "pending") && apr_table_get(o, "failed")) {
        die(EXIT_USAGE, "push list: --pending and --failed exclude each other");
    }
    state = apr_table_get(o, "pending") ? "pending" : apr_table_get(o, "failed") ? "failed" : NULL;
    ctl_open_ready(c);
    if (bank_store_push_list(c->db, state, (int)limit, &rows) != BANK_DB_OK) {
        ctl_db_fail(c, "cannot list the push messages");
    }
    if (rows->nelts == 0) {
        printf("no push messages\n");
        return 0;
    }
    printf("%-8s  %-12s  %-8s  %-36s  %-24s  %-24s  %-24s  %s\n", "ID", "STATE", "ATTEMPTS",
           "CUSTOMER", "CREATED", "NEXT", "DONE", "REFERENCE / LAST ERROR");
    for (i = 0; i < rows->nelts; i++) {
        const bank_push_row_t *r = &APR_ARRAY_IDX(rows, i, bank_push_row_t);
        char *ref = apr_pstrdup(c->pool, r->reference ? r->reference : "-"), *p;
        for (p = ref; *p; p++) {
            if ((unsigned char)*p < 0x20 || *p == 0x7f) {
                *p = '?'; /* partner-sent text on a terminal */
            }
        }
        printf("%-8" APR_INT64_T_FMT "  %-12s  %-8" APR_INT64_T_FMT "  %-36s  %-24s  %-24s  %-24s  "
               "%s%s%s\n",
               r->id, r->state, r->attempts, r->customer_id ? r->customer_id : "-",
               or_dash(c, r->created_at),
               strcmp(r->state, "pending") == 0 ? or_dash(c, r->next_at) : "-",
               or_dash(c, r->done_at), ref, r->last_error ? " / " : "",
               r->last_error ? r->last_error : "");
    }
    return 0;
}

int cmd_push_retry(ctl_t *c, apr_table_t *o)
{
    const char *id = ctl_need(o, "id", "push retry");
    long n = ctl_parse_range("push retry", "id", id, 1, 999999999L);
    int count = 0;

    ctl_open_ready(c);
    if (bank_store_push_requeue(c->db, n, bank_time_iso(c->pool, apr_time_now()), &count) !=
        BANK_DB_OK) {
        ctl_db_fail(c, "cannot requeue the push message");
    }
    if (count == 0) {
        die(1, "push retry: no failed push message %ld (see bankctl push list --failed)", n);
    }
    printf("push message %ld is pending again\n", n);
    return 0;
}

typedef struct {
    const char *cutoff;
    int batch;
    apr_int64_t after;
} prune_t;

static bank_db_rc prune_batch(ctl_t *c, void *baton, long i, int *done, int *more)
{
    prune_t *p = baton;

    (void)i;
    return bank_store_push_prune(c->db, p->cutoff, p->batch, &p->after, done, more);
}

/* Each batch a statement and a commit of its own (ctl_batches); the rows removed before a
 * failure stay removed. */
int cmd_push_prune(ctl_t *c, apr_table_t *o)
{
    const char *d = apr_table_get(o, "older-than"), *b = apr_table_get(o, "batch");
    long days = d ? ctl_parse_range("push prune", "older-than", d, 1, 3650) : PRUNE_DAYS_DEFAULT;
    long batch = b ? ctl_parse_range("push prune", "batch", b, 1, LIMIT_MAX) : PRUNE_BATCH_DEFAULT;
    prune_t p = {
        bank_time_iso(c->pool, apr_time_now() - apr_time_from_sec((apr_time_t)days * 86400)),
        (int)batch, 0};
    apr_int64_t total;

    ctl_open_ready(c);
    total = ctl_batches(c, prune_batch, &p, "cannot prune the push messages");
    printf("%" APR_INT64_T_FMT " push messages done before %s removed (sent, unregistered or "
           "failed)\n",
           total, bank_time_api(c->pool, p.cutoff));
    return 0;
}
