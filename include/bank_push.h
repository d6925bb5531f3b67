/* Push notifications through Firebase Cloud Messaging HTTP v1 (docs/push.md): the Google
 * service account (bank_push.c: its file, the RS256-signed JWT of the OAuth 2 flow, the
 * message and the judging of FCM's answers, the retry schedule) and the HTTP client
 * (bank_push_client.c: libcurl; the token exchange and many messages at once over one
 * multi handle). No httpd dependency: the module and the C tests share it. Nothing here
 * logs; the texts it returns never hold the private key, a bearer or a device token. */
#ifndef BANK_PUSH_H
#define BANK_PUSH_H

#include <apr_pools.h>
#include <apr_time.h>

/* Limits and defaults, named once (docs/push.md lists them). */
#define BANK_PUSH_BASE_DEFAULT "https://fcm.googleapis.com"
#define BANK_PUSH_SCOPE "https://www.googleapis.com/auth/firebase.messaging"
#define BANK_PUSH_JWT_LIFETIME 3600  /* seconds: Google's maximum */
#define BANK_PUSH_TOKEN_MARGIN 300   /* seconds before expires_in a bearer is renewed */
#define BANK_PUSH_ATTEMPTS_DEFAULT 8 /* BankPushAttempts */
#define BANK_PUSH_ATTEMPTS_MAX 100
#define BANK_PUSH_TIMEOUT_DEFAULT 10 /* BankPushTimeout, seconds per call */
#define BANK_PUSH_TIMEOUT_MAX 300
#define BANK_PUSH_CONNECT_TIMEOUT_MAX 5       /* seconds of the call spent connecting, at most */
#define BANK_PUSH_MAX_ANSWER (64 * 1024)      /* bytes of an answer body */
#define BANK_PUSH_CREDENTIALS_MAX (16 * 1024) /* bytes of a service-account file */
#define BANK_PUSH_BACKOFF_BASE 2              /* seconds: the first retry's delay (before jitter) */
#define BANK_PUSH_BACKOFF_MAX 600      /* seconds: no retry waits longer, Retry-After aside */
#define BANK_PUSH_RETRY_AFTER_MAX 3600 /* seconds: a longer Retry-After is cut to this */
#define BANK_PUSH_BATCH 100            /* messages claimed and sent at once per sender */
#define BANK_PUSH_BATCH_LEAN 50        /* the same, every half second, under a flood */
#define BANK_PUSH_SPARE_CPU_DEFAULT 10 /* BankPushSpareCPU, percent idle */

/* A service account, from Google's JSON key file. */
typedef struct {
    const char *client_email;
    const char *token_uri;
    const char *key_id; /* private_key_id, the JWT's kid; NULL: none given */
    void *key;          /* EVP_PKEY, freed with the pool it was read into */
} bank_push_account_t;

/* Reads a service-account file only its owner may read, owned by the user reading it;
 * checks its token_uri (https://, or http:// to a loopback address). NULL and *out, else
 * why not (never a byte of the key). */
const char *bank_push_account_file(apr_pool_t *p, const char *path, bank_push_account_t *out);
/* The same from the file's text (for the tests). */
const char *bank_push_account_parse(apr_pool_t *p, const char *text, apr_size_t len,
                                    bank_push_account_t *out);

/* The signed assertion of the OAuth 2 JWT-bearer flow, issued at `now` (seconds), or NULL. */
const char *bank_push_jwt(apr_pool_t *p, const bank_push_account_t *a, apr_int64_t now);
/* The token request's body for an assertion. */
const char *bank_push_token_body(apr_pool_t *p, const char *assertion);
/* Reads the token endpoint's answer: NULL with *bearer and *expires_in (seconds), else why
 * not. */
const char *bank_push_token_answer(apr_pool_t *p, long status, const char *body, apr_size_t len,
                                   const char **bearer, apr_int64_t *expires_in);

/* One message to send: its outbox row, its device and what it says (from the stored notice),
 * as a claim reads them (bank_store_push_claim). */
typedef struct {
    apr_int64_t id; /* the outbox row */
    const char *device_token;
    apr_int64_t attempts; /* made before this one (counted when an outcome is written, so a
                           * sender killed mid-call costs the row none) */
    const char *amount;
    const char *currency;
    const char *receiver_name;
    const char *status_code;
    const char *status_message;
    const char *reference;
} bank_push_msg_t;

/* The messages:send body for m. */
const char *bank_push_body(apr_pool_t *p, const bank_push_msg_t *m);

typedef enum {
    BANK_PUSH_SENT = 0,
    BANK_PUSH_RETRY,        /* 429, 5xx, timeout, no answer: later, with backoff */
    BANK_PUSH_UNREGISTERED, /* the token is gone or invalid: drop the device */
    BANK_PUSH_REJECTED,     /* refused for another reason: no use repeating it */
    BANK_PUSH_AUTH          /* 401: the bearer was refused */
} bank_push_verdict;

/* Judges messages:send's answer (status 0: none came). */
bank_push_verdict bank_push_judge(apr_pool_t *p, long status, const char *body, apr_size_t len);

/* The delay before attempt `attempts + 1` (attempts >= 1 made): BANK_PUSH_BACKOFF_BASE
 * doubled per attempt, capped at BANK_PUSH_BACKOFF_MAX, then jitter (a uniform draw
 * from half of it to all of it, rnd in [0, 1)); at least retry_after seconds when FCM said
 * so (capped at BANK_PUSH_RETRY_AFTER_MAX). */
apr_interval_time_t bank_push_backoff(int attempts, int retry_after, double rnd);
/* A Retry-After header's seconds (delta-seconds or an HTTP date, from now), 0 if none. */
int bank_push_retry_after(const char *value, apr_time_t now);
/* 1 if the base URL may be used (https://, http:// only to loopback); *norm without a
 * trailing slash. NULL or why not. */
const char *bank_push_url_check(apr_pool_t *p, const char *url, const char **norm);
/* BankPush's arguments: kind "fcm", a Firebase project id, FCM's base URL or NULL (*base_url:
 * it normalised, or BANK_PUSH_BASE_DEFAULT). NULL, or why not, quoting the argument. */
const char *bank_push_fcm_check(apr_pool_t *p, const char *kind, const char *project,
                                const char *url, const char **base_url);

/* The first line of /proc/stat ("cpu  user nice system idle iowait irq softirq steal ..."):
 * the clock ticks of all the CPUs in all (*total) and idle (*idle: idle and iowait). 1 if
 * read, 0 if the text does not start with that line. */
int bank_push_cpu_ticks(const char *text, apr_uint64_t *total, apr_uint64_t *idle);
/* 1 if from one reading (total0, idle0) to the next at least percent of the ticks were idle,
 * or none passed; 0 if the CPUs were busier than that. */
int bank_push_cpu_spare(apr_uint64_t total0, apr_uint64_t idle0, apr_uint64_t total1,
                        apr_uint64_t idle1, int percent);

/* ---- bank_push_client.c ---- */

/* The client of one process: its libcurl multi handle (connections reused between rounds)
 * and the cached bearer. Lives in (and is cleaned up with) p. */
typedef struct bank_push_client_s bank_push_client_t;

typedef struct {
    const char *project;
    const char *base_url; /* no trailing slash */
    int timeout;          /* seconds per call */
    const bank_push_account_t *account;
} bank_push_conf_t;

bank_push_client_t *bank_push_client_create(apr_pool_t *p, const bank_push_conf_t *c);

/* One message's outcome. */
typedef struct {
    bank_push_verdict verdict;
    long status;     /* HTTP status, 0 when no answer came */
    int retry_after; /* seconds FCM asked for (0: none) */
    const char *why; /* for the outbox's last_error and the log: no secrets */
    apr_interval_time_t took;
} bank_push_result_t;

/* Sends msgs[0..n) at once; out[i] is msgs[i]'s outcome. A bearer is fetched first if none
 * is cached (or it is within BANK_PUSH_TOKEN_MARGIN of its end); if FCM refuses it (401),
 * it is fetched again once and those messages sent again. NULL, or why no message could
 * go (the token endpoint failed: every out[i] is RETRY). */
const char *bank_push_send(bank_push_client_t *cl, apr_pool_t *p, const bank_push_msg_t *msgs,
                           int n, bank_push_result_t *out);

#endif
