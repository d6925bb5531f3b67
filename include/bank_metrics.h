/* Request metrics (docs/operations.md, "Metrics"): counters, a gauge and a latency histogram
 * per endpoint in one plain struct, which the module keeps in shared memory so that every
 * httpd process adds to the same numbers. Updates are atomic (APR's 64-bit atomics) and need
 * no lock; rendering reads each number once. No httpd dependency. */
#ifndef BANK_METRICS_H
#define BANK_METRICS_H

#include <apr_pools.h>
#include <apr_time.h>

/* The endpoints, as the `endpoint` label names them. */
typedef enum {
    BANK_EP_SIGN_IN,
    BANK_EP_SIGN_OUT,
    BANK_EP_BVN,
    BANK_EP_BANKS,
    BANK_EP_WEBHOOK,
    BANK_EP_COUNT,
    BANK_EP_NONE = -1 /* not an endpoint: not timed */
} bank_endpoint_t;

/* Every counter; bank_metrics.c gives each its metric family and label. */
typedef enum {
    BANK_M_SIGN_IN_OK,
    BANK_M_SIGN_IN_WRONG,
    BANK_M_SIGN_IN_THROTTLED,
    BANK_M_SIGN_IN_REFUSED,
    BANK_M_TOKEN_REFUSED,
    BANK_M_BVN_VERIFIED,
    BANK_M_BVN_REPEAT,
    BANK_M_BVN_MISMATCH,
    BANK_M_BVN_THROTTLED,
    BANK_M_BVN_IN_USE,
    BANK_M_BVN_OTHER,
    BANK_M_BVN_INVALID,
    BANK_M_NOTICE_STORED,
    BANK_M_NOTICE_DUPLICATE,
    BANK_M_NOTICE_REFUSED,
    BANK_M_DB_ERRORS,
    BANK_M_UNAVAILABLE,
    /* identity provider calls: provider x outcome, in bank_idp_kind and bank_idp_verdict order
     * (dojah, prembly; match, mismatch, unavailable, refused) */
    BANK_M_IDP_CALLS,
    BANK_M_IDP_CALLS_END = BANK_M_IDP_CALLS + 7,
    BANK_M_PUSH_SENT,         /* push messages FCM accepted */
    BANK_M_PUSH_RETRIED,      /* a failed call, to be tried again later */
    BANK_M_PUSH_FAILED,       /* given up: attempts used up, or refused for good */
    BANK_M_PUSH_UNREGISTERED, /* the device's token is gone: the device row deleted */
    BANK_M_PUSH_LEAN,         /* rounds held to BANK_PUSH_BATCH_LEAN: CPUs or commits busy */
    BANK_M_PASSWORD_PAIRS,    /* two sign-ins' password verifications computed together */
    BANK_M_FEED_FAILED,       /* reads of the token revocation feed that failed */
    BANK_M_COUNT
} bank_metric_t;

/* Histogram upper bounds, in microseconds; one more slot counts what is above the last. */
#define BANK_METRICS_BOUNDS 11

typedef struct {
    apr_uint64_t slot[BANK_METRICS_BOUNDS + 1]; /* observations in (previous bound, bound] */
    apr_uint64_t sum_usec;
} bank_histogram_t;

typedef struct {
    apr_uint64_t counter[BANK_M_COUNT];
    apr_uint64_t password_waiting;     /* gauge: password verifications under way */
    apr_uint64_t password_running_max; /* gauge: the most verifications computing at once */
    bank_histogram_t latency[BANK_EP_COUNT];
    apr_uint64_t push_backlog;       /* gauge: outbox rows still to send, as last counted */
    bank_histogram_t push_calls;     /* FCM messages:send calls, each from start to answer */
    apr_uint64_t notices_committing; /* payment notices waiting for their commit, server-wide */
    apr_uint64_t server_errors[BANK_EP_COUNT]; /* answers 5xx per endpoint */
    apr_uint64_t feed_read_sec; /* gauge: the latest good read of a revocation feed (epoch s) */
} bank_metrics_t;

void bank_metrics_count(bank_metrics_t *m, bank_metric_t c);
/* The process's shared block, set once by the host before it forks (NULL: none, nothing is
 * counted): for code that counts but is handed no block. */
void bank_metrics_share(bank_metrics_t *m);
bank_metrics_t *bank_metrics_shared(void);
/* One request of endpoint e that took `took`. */
void bank_metrics_observe(bank_metrics_t *m, bank_endpoint_t e, apr_interval_time_t took);
/* One FCM call that took `took`. */
void bank_metrics_push_call(bank_metrics_t *m, apr_interval_time_t took);
/* The outbox rows still to send, as just counted. */
void bank_metrics_push_backlog(bank_metrics_t *m, apr_uint64_t rows);
/* Endpoint e answered with a 5xx status. */
void bank_metrics_server_error(bank_metrics_t *m, bank_endpoint_t e);
/* A read of a token revocation feed that started at `started` succeeded. */
void bank_metrics_feed_read(bank_metrics_t *m, apr_time_t started);
/* A payment notice starts waiting for its commit (delta 1) or has it (delta -1). */
void bank_metrics_committing(bank_metrics_t *m, int delta);
/* A password verification starts (delta 1) or ends (delta -1). */
void bank_metrics_waiting(bank_metrics_t *m, int delta);

/* `now` verifications compute at once (counted by the host's bound): keeps the maximum. */
void bank_metrics_running(bank_metrics_t *m, apr_uint64_t now);

/* The `endpoint` label of e ("sign_in", ...). */
const char *bank_metrics_endpoint(bank_endpoint_t e);
/* Everything in Prometheus's text exposition format (version 0.0.4). */
const char *bank_metrics_prometheus(apr_pool_t *p, const bank_metrics_t *m);
/* One gauge in the same text format: its HELP and TYPE lines and its sample. */
const char *bank_metrics_gauge(apr_pool_t *p, const char *name, const char *help,
                               apr_uint64_t value);

#endif
