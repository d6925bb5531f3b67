/* BVN verification by an identity provider, asked at the moment of onboarding
 * (docs/identity.md): the two dialects (Dojah, Prembly) and their answers judged into one
 * verdict (bank_idp.c), the HTTP client (libcurl, bank_idp_client.c) and a circuit breaker
 * (bank_idp_breaker.c). No httpd dependency: the module
 * and bankctl share it. Nothing here logs; the texts it returns for the operator never hold
 * the BVN, the date of birth or the credentials. */
#ifndef BANK_IDP_H
#define BANK_IDP_H

#include <apr_pools.h>
#include <apr_time.h>

typedef enum { BANK_IDP_TABLE = 0, BANK_IDP_DOJAH, BANK_IDP_PREMBLY } bank_idp_kind;

/* Limits, named once for the module and bankctl (docs/identity.md lists them). */
#define BANK_IDP_TIMEOUT_DEFAULT 10      /* seconds, the whole call */
#define BANK_IDP_TIMEOUT_MAX 300         /* seconds */
#define BANK_IDP_CONNECT_TIMEOUT_MAX 5   /* seconds: connecting gets at most this much of it */
#define BANK_IDP_MAX_ANSWER (512 * 1024) /* bytes of an answer body */
#define BANK_IDP_BREAKER_FAILURES 5      /* consecutive failures that open the breaker */
#define BANK_IDP_BREAKER_OPEN 30         /* seconds it stays open before one trial call */
#define BANK_IDP_RETRY_AFTER 30          /* Retry-After of a 503 while it is closed */
#define BANK_IDP_CREDENTIAL_MAX 512      /* characters of an app id or a secret */
#define BANK_IDP_LATENCY_SAMPLES 64      /* the provider's latest answer times kept */
#define BANK_IDP_HOLD_FALLBACK 250       /* ms an answer without a call is held before any */

typedef struct {
    bank_idp_kind kind;
    const char *base_url; /* no trailing slash */
    const char *app_id;
    const char *secret;
    int timeout;       /* seconds */
    const char *proxy; /* BankBvnProviderProxy; NULL: none (the environment's are ignored) */
} bank_idp_conf_t;

/* What the customer sent and what the bank knows of them. */
typedef struct {
    const char *bvn;
    const char *dob; /* YYYY-MM-DD */
    const char *first;
    const char *last;
} bank_idp_query_t;

typedef enum {
    BANK_IDP_MATCH = 0,
    BANK_IDP_MISMATCH,    /* answered: not found, or a name or the date differs */
    BANK_IDP_UNAVAILABLE, /* down, past the timeout, 5xx, malformed or oversized answer */
    BANK_IDP_REFUSED      /* refused our credentials or account: a misconfiguration */
} bank_idp_verdict;

/* What a mismatch is about. */
typedef enum {
    BANK_IDP_DIFF_NONE = 0,
    BANK_IDP_DIFF_UNKNOWN, /* not found, or blocked */
    BANK_IDP_DIFF_DATE,
    BANK_IDP_DIFF_NAMES
} bank_idp_diff;

typedef struct {
    bank_idp_verdict verdict;
    bank_idp_diff diff; /* MISMATCH: what differs */
    const char *why;    /* for the operator's log; fixed texts, no personal data */
    const char *first;  /* MATCH: the names to keep and to name the account after */
    const char *last;
    long http_status; /* 0 when no answer came */
    int reused;       /* the call went over a connection an earlier call of the thread opened */
} bank_idp_result_t;

/* ---- bank_idp.c ---- */

/* "table", "dojah", "prembly". */
const char *bank_idp_kind_name(bank_idp_kind kind);
/* 0 and the kind for one of those names (case-insensitive), else -1. */
int bank_idp_kind_parse(const char *name, bank_idp_kind *out);
/* The provider's production base URL (docs/identity.md), NULL for the table. */
const char *bank_idp_default_url(bank_idp_kind kind);
/* NULL if url can be a base URL (https://, or http:// to a loopback address), else why not.
 * *norm gets it without trailing slashes. */
const char *bank_idp_url_check(apr_pool_t *p, const char *url, const char **norm);
/* NULL if url can name a proxy (http://, https://, socks5:// or socks5h://, a host, at
 * most a "/" for a path, no query), else why not. */
const char *bank_idp_proxy_check(apr_pool_t *p, const char *url);
/* NULL if s can be an app id or a secret (1..BANK_IDP_CREDENTIAL_MAX printable ASCII
 * characters, no spaces: they travel in HTTP headers), else why not. */
const char *bank_idp_credential_check(const char *s);
/* Reads "APP-ID SECRET" from a file only its owner may read, owned by the user reading it.
 * NULL with both set, else why not (never a byte of the file). */
const char *bank_idp_credentials_file(apr_pool_t *p, const char *path, const char **app_id,
                                      const char **secret);

/* The request each dialect sends (for the client and the unit tests). */
const char *bank_idp_dojah_url(apr_pool_t *p, const bank_idp_conf_t *c, const bank_idp_query_t *q);
const char *bank_idp_prembly_body(apr_pool_t *p, const bank_idp_query_t *q);
/* Judges an answer of HTTP status `status` with body[0..len) into out. */
void bank_idp_judge(apr_pool_t *p, bank_idp_kind kind, long status, const char *body,
                    apr_size_t len, const bank_idp_query_t *q, bank_idp_result_t *out);
/* A date as the providers write it ("2-Aug-1990", "02-August-1990", "1990-08-02") as
 * YYYY-MM-DD, or NULL. */
const char *bank_idp_date(apr_pool_t *p, const char *s);

/* ---- bank_idp_client.c ---- */

/* libcurl's global set-up: once per process, before any thread (httpd: post_config). */
int bank_idp_global_init(void);

/* Asks the provider. keep: a pool that lives as long as the thread (or the program); the
 * CURL handle kept there is reused, with its open connections, by the calls of that thread
 * (one thread at a time). Results in p. */
void bank_idp_check(apr_pool_t *p, apr_pool_t *keep, const bank_idp_conf_t *c,
                    const bank_idp_query_t *q, bank_idp_result_t *out);

/* ---- bank_idp_breaker.c ---- */

/* A circuit breaker per base URL, in memory shared by every process of the server (made
 * before the fork) and used without locks. */
typedef struct bank_idp_breaker_s bank_idp_breaker_t;
apr_size_t bank_idp_breaker_size(void);
/* The breaker in mem (bank_idp_breaker_size bytes), all closed. */
bank_idp_breaker_t *bank_idp_breaker_at(void *mem);
/* 0 if a call to url may go ahead now; else the seconds until one may (the breaker is
 * open). After BANK_IDP_BREAKER_OPEN seconds one trial call goes ahead; the others wait. */
int bank_idp_breaker_allow(bank_idp_breaker_t *b, const char *url, apr_time_t now);
/* The outcome of a call that went ahead: ok (an answer judged MATCH or MISMATCH) closes the
 * breaker; a failure counts, and the BANK_IDP_BREAKER_FAILURES-th in a row opens it.
 * Returns 1 when this failure opened it. */
int bank_idp_breaker_record(bank_idp_breaker_t *b, const char *url, int ok, apr_time_t now);
/* The provider at url answered (a match or a mismatch) after `took`: kept among its latest
 * BANK_IDP_LATENCY_SAMPLES answer times, in the same shared memory. */
void bank_idp_latency_record(bank_idp_breaker_t *b, const char *url, apr_interval_time_t took);
/* One of those times, the r-th modulo how many are kept (r: a random number); -1 when the
 * provider has not answered yet. */
apr_interval_time_t bank_idp_latency_draw(bank_idp_breaker_t *b, const char *url, apr_uint32_t r);

#endif
