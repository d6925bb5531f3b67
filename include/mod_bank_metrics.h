/* mod_bank_metrics.c: the metrics of include/bank_metrics.h in shared memory created at
 * start-up, what each request adds to them, the bank-metrics handler (Prometheus text) and
 * mod_status's section (docs/operations.md, "Metrics"). */
#ifndef MOD_BANK_METRICS_H
#define MOD_BANK_METRICS_H

#include <httpd.h>
#include "bank_metrics.h"

/* Creates the shared block once per httpd (kept across graceful restarts) in post_config,
 * before the children that inherit it are forked. */
int bank_metrics_post_config(apr_pool_t *pconf, server_rec *s);
/* mod_status's status_hook. */
void bank_metrics_register_hooks(void);
/* The handler `bank-metrics`: GET or HEAD, Prometheus's text exposition format. */
int bank_metrics_handler(request_rec *r);

/* A handler's own outcome for the counters, when the answer's status and code do not tell it
 * (a first BVN verification from a repeat, a stored notice from a duplicate). */
void bank_metrics_outcome(request_rec *r, bank_metric_t c);
/* After endpoint e's handler returned rc: its outcome counted, its time observed. */
void bank_metrics_request(request_rec *r, bank_endpoint_t e, int rc);
/* The shared block, for the core rules that count in it (sign-in's password verifications);
 * NULL when there is none. */
bank_metrics_t *bank_metrics_block(void);

#endif
