/* POST /webhook/<partner> (docs/api.md): the payment partner's fund-transfer notices.
 * Fails closed without a secret; the bearer is checked against every configured secret,
 * then the HMAC of the raw bytes when BankWebhookSignature is set; the payload is validated
 * (notice.c) and committed before the answer. The table's UNIQUE (partner,
 * transaction_reference, status_code) makes a repeat insert nothing, whichever process
 * and connection it reaches, and the affected-row count tells the partner so. */
#include <apr_strings.h>
#include <apr_hash.h>
#include <apr_thread_mutex.h>
#include <apr_thread_cond.h>
#include <apr_global_mutex.h>
#include <http_protocol.h>
#include <util_mutex.h>
#include "mod_bank.h"
#include "mod_bank_webhook.h"
#include "mod_bank_config.h"
#include "mod_bank_http.h"
#include "mod_bank_db.h"
#include "mod_bank_auth.h"
#include "mod_bank_metrics.h"
#include "bank_json.h"
#include "bank_notice.h"
#include "bank_store.h"
#include "bank_digest.h"
#include "bank_time.h"
#include "bank_uuid.h"
#include "mod_bank_push.h"

APLOG_USE_MODULE(bank);

/* Retry-After when no secret is configured: fixing that takes an operator, not seconds. */
#define WEBHOOK_UNCONFIGURED_RETRY 300

static int authenticate(request_rec *r, const bank_dir_conf *conf, const char *partner)
{
    const apr_array_header_t *secrets = conf->webhook_secrets;
    const char *bearer = bank_bearer(r);

    if (!secrets || secrets->nelts == 0) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(0701) "no BankWebhookSecret for partner %s (Location %s): "
                                      "every payment notice is refused with 503 until one is set",
                      partner, bank_location(r) ? bank_location(r) : "(none)");
        return bank_error_unavailable(r, NULL, WEBHOOK_UNCONFIGURED_RETRY);
    }
    if (!bank_secret_in(bearer, (const char *const *)secrets->elts, secrets->nelts)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0702) "payment notice for partner %s refused: %s bearer", partner,
                      bearer ? "wrong" : "no");
        return bank_error(r, BANK_E_UNAUTHORIZED_ACCESS, NULL, NULL);
    }
    /* The access log names the partner, never the secret. */
    r->user = apr_pstrdup(r->pool, partner);
    r->ap_auth_type = "Bearer";
    return OK;
}

static int check_signature(request_rec *r, const bank_dir_conf *conf, const char *raw,
                           apr_size_t len)
{
    const char *given;

    if (!conf->sig_set) {
        return OK;
    }
    given = apr_table_get(r->headers_in, conf->sig_header);
    if (!bank_notice_signature_ok(conf->sig_alg == BANK_HMAC_SHA512 ? 512 : 256, conf->sig_key, raw,
                                  len, given)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0703) "payment notice refused: %s %s header",
                      given ? "wrong" : "no", conf->sig_header);
        return bank_error(r, BANK_E_INVALID_SIGNATURE, NULL, NULL);
    }
    return OK;
}

/* ---- group commit ----
 * Notices that arrive together in one process share one transaction: one commit, one fsync
 * for all of them, where a commit per notice made the disk's flush rate the webhook's limit
 * (docs/api.md). A request queues its notice; if no commit is running for its server, it
 * takes everything queued (at most BATCH_MAX) and commits it on its own
 * connection, else it waits for the one running to finish and then looks again. Each request
 * answers only once the transaction holding its notice has committed; if that transaction
 * fails, every request in it answers the failure (503 or 500), none 200. A key twice in one
 * batch is written once and the second copy answers "duplicate": true, as across batches.
 *
 * Across the server's processes commits take turns (the "bank-webhook" mutex, docs/api.md):
 * a leader waits for the turn before it takes the queue, so what arrives meanwhile joins its
 * batch. Without turns each process committed its own small batch at the same time as the
 * others: on SQLite they met in the file's write lock, whose waits are sleeps (p99 0.5-1 s);
 * on PostgreSQL, batches half the size cost the database twice the work per notice
 * (measured with scripts/bench; the numbers are in docs/api.md). A leader that waits longer than
 * TURN_WAIT (a commit stuck on a database that does not answer) commits without the turn. */
#define BATCH_MAX 64
#define TURN_WAIT apr_time_from_sec(1)
#define TURN_MUTEX "bank-webhook"

typedef struct queued_s {
    bank_notice_put_t put;
    int done;
    bank_db_rc rc;
    int retry;               /* when rc failed: 503 rather than 500 */
    apr_thread_cond_t *wake; /* its request's own: done, or its turn to lead */
    struct queued_s *next;
} queued_t;

typedef struct {
    apr_thread_mutex_t *lock;
    queued_t *head, *tail;
    int running; /* a commit is running (one at a time per server and process: on PostgreSQL
                    two at once made smaller batches and no more notices per second, measured
                    with make bench DB=pgsql) */
} batcher_t;

static struct {
    apr_global_mutex_t *turn; /* NULL: no turns (each process commits when it will) */
    apr_thread_mutex_t *lock; /* guards by_server */
    apr_pool_t *pool;
    apr_hash_t *by_server; /* server_rec * -> batcher_t * (each server has its own database) */
} commits;

int bank_webhook_pre_config(apr_pool_t *pconf)
{
    return ap_mutex_register(pconf, TURN_MUTEX, NULL, APR_LOCK_DEFAULT, 0) == APR_SUCCESS
               ? OK
               : HTTP_INTERNAL_SERVER_ERROR;
}

int bank_webhook_post_config(apr_pool_t *pconf, server_rec *s)
{
    commits.turn = NULL;
    /* ap_global_mutex_create logs its own failure (mechanism, file) */
    return ap_global_mutex_create(&commits.turn, NULL, TURN_MUTEX, NULL, s, pconf, 0) == APR_SUCCESS
               ? OK
               : HTTP_INTERNAL_SERVER_ERROR;
}

void bank_webhook_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv;

    if (commits.turn &&
        (rv = apr_global_mutex_child_init(&commits.turn, apr_global_mutex_lockfile(commits.turn),
                                          pchild)) != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                     BANKLOGNO(0709) "payment notices: no %s mutex in this process; its commits "
                                     "do not take turns with the other processes'",
                     TURN_MUTEX);
        commits.turn = NULL;
    }
    commits.pool = pchild;
    commits.by_server = apr_hash_make(pchild);
    if (apr_thread_mutex_create(&commits.lock, APR_THREAD_MUTEX_DEFAULT, pchild) != APR_SUCCESS) {
        commits.lock = NULL;
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(0707) "payment notices: no mutex; each commits on its own");
    }
}

/* The batcher of r's server, made on first use; NULL without one (commit alone). */
static batcher_t *batcher_of(request_rec *r)
{
    batcher_t *b = NULL;

    if (!commits.lock) {
        return NULL;
    }
    apr_thread_mutex_lock(commits.lock);
    b = apr_hash_get(commits.by_server, &r->server, sizeof(r->server));
    if (!b) {
        b = apr_pcalloc(commits.pool, sizeof(*b));
        if (apr_thread_mutex_create(&b->lock, APR_THREAD_MUTEX_DEFAULT, commits.pool) !=
            APR_SUCCESS) {
            b = NULL;
        } else {
            apr_hash_set(commits.by_server,
                         apr_pmemdup(commits.pool, &r->server, sizeof(r->server)),
                         sizeof(r->server), b);
        }
    }
    apr_thread_mutex_unlock(commits.lock);
    return b;
}

/* Commits the notices of batch (count of them) on db, r's connection (NULL: none could be
 * had); sets each one's outcome.
 * A batch whose transaction failed on a healthy connection (a statement refused, not the
 * database busy or gone) is tried again one notice per transaction, so one notice the
 * database refuses fails alone. */
static void commit_batch(request_rec *r, bank_db_t *db, queued_t **batch, int count)
{
    bank_notice_put_t **puts = apr_palloc(r->pool, sizeof(*puts) * (apr_size_t)count);
    bank_db_rc rc = BANK_DB_ERROR;
    int i, retry = 1;

    for (i = 0; i < count; i++) {
        puts[i] = &batch[i]->put;
        batch[i]->rc = BANK_DB_ERROR;
        batch[i]->retry = 1;
    }
    if (!db) {
        return; /* logged by bank_db */
    }
    rc = bank_store_notices_put(db, puts, count);
    if (rc != BANK_DB_OK) {
        retry = bank_db_failed(r, db, rc,
                               apr_psprintf(r->pool,
                                            "storing %d payment notice(s) in one "
                                            "transaction (none stored)",
                                            count));
    }
    if (rc != BANK_DB_OK && !retry && count > 1) {
        for (i = 0; i < count; i++) {
            bank_notice_put_t *one = &batch[i]->put; /* puts is in key order now */
            if ((batch[i]->rc = bank_store_notices_put(db, &one, 1)) != BANK_DB_OK) {
                batch[i]->retry = bank_db_failed(r, db, batch[i]->rc, "storing a payment notice");
            }
        }
        return;
    }
    for (i = 0; i < count; i++) {
        batch[i]->rc = rc;
        batch[i]->retry = retry;
    }
    for (i = 0; rc == BANK_DB_OK && i < count; i++) {
        if (batch[i]->put.matched) {
            bank_push_wake(); /* its outbox rows are committed with it */
            break;
        }
    }
    if (rc == BANK_DB_OK) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      BANKLOGNO(0708) "%d payment notice(s) committed in one transaction", count);
    }
}

/* Waits for the server's commit turn (at most TURN_WAIT); 1 if taken (release it), 0 if the
 * commit goes ahead without it. */
static int take_turn(request_rec *r)
{
    apr_time_t start = apr_time_now();
    apr_status_t rv;

    if (!commits.turn) {
        return 0;
    }
    rv = apr_global_mutex_timedlock(commits.turn, TURN_WAIT);
    if (rv == APR_ENOTIMPL) { /* a Mutex mechanism without timed waits */
        rv = apr_global_mutex_lock(commits.turn);
    }
    if (rv != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, rv, r,
                      BANKLOGNO(0710) "payment notices: no commit turn after %" APR_TIME_T_FMT
                                      " ms; committing without it",
                      apr_time_as_msec(apr_time_now() - start));
        return 0;
    }
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                  BANKLOGNO(0711) "payment notices: commit turn taken after %" APR_TIME_T_FMT " us",
                  apr_time_now() - start);
    return 1;
}

/* Queues q and returns once the transaction holding it has ended (q->rc says how). Each
 * waiter sleeps on its own condition, woken only when its notice is done or when it is
 * first in the queue and a commit may start (one broadcast per commit woke every waiter of
 * the process: most of httpd's time went to context switches, measured with perf). */
static void group_commit(request_rec *r, batcher_t *b, queued_t *q)
{
    queued_t *batch[BATCH_MAX];
    bank_db_t *db;
    int count, i, turn;

    apr_thread_mutex_lock(b->lock);
    if (b->tail) {
        b->tail->next = q;
    } else {
        b->head = q;
    }
    b->tail = q;
    while (!q->done) {
        if (b->running || b->head != q) {
            apr_thread_cond_wait(q->wake, b->lock);
            continue;
        }
        /* first in the queue, no commit running: wait for the turn, then lead everything
         * queued by then, up to BATCH_MAX */
        b->running = 1;
        apr_thread_mutex_unlock(b->lock);
        db = bank_db(r); /* before the turn: no turn held while waiting for a connection */
        turn = db ? take_turn(r) : 0;
        apr_thread_mutex_lock(b->lock);
        for (count = 0; count < BATCH_MAX && b->head; count++) {
            batch[count] = b->head;
            b->head = b->head->next;
        }
        if (!b->head) {
            b->tail = NULL;
        }
        apr_thread_mutex_unlock(b->lock);
        commit_batch(r, db, batch, count);
        if (turn) {
            apr_global_mutex_unlock(commits.turn);
        }
        apr_thread_mutex_lock(b->lock);
        b->running = 0;
        for (i = 0; i < count; i++) {
            batch[i]->done = 1;
            if (batch[i] != q) {
                apr_thread_cond_signal(batch[i]->wake);
            }
        }
        if (b->head) {
            apr_thread_cond_signal(b->head->wake); /* the next commit */
        }
    }
    apr_thread_mutex_unlock(b->lock);
}

/* Commits the notice (with other requests' in one transaction when they arrive together);
 * *duplicate is set when the key was already there (nothing written). */
static int store(request_rec *r, const bank_notice_t *n, const char *partner, const char *raw,
                 int *duplicate)
{
    queued_t *q = apr_pcalloc(r->pool, sizeof(*q));
    batcher_t *b = batcher_of(r);

    q->put.n = n;
    q->put.id = bank_uuid4(r->pool);
    q->put.partner = partner;
    q->put.raw = raw;
    q->put.now = bank_time_iso(r->pool, apr_time_now());
    if (!q->put.id) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, BANKLOGNO(0704) "no randomness for an id");
        return bank_error(r, BANK_E_INTERNAL, NULL, NULL);
    }
    if (b && apr_thread_cond_create(&q->wake, r->pool) == APR_SUCCESS) {
        group_commit(r, b, q);
    } else {
        commit_batch(r, bank_db(r), &q, 1);
    }
    if (q->rc != BANK_DB_OK) {
        return bank_error_db_retry(r, q->retry);
    }
    *duplicate = !q->put.added;
    /* Partner-sent text is escaped: it must not forge log lines. */
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  BANKLOGNO(0705) "payment notice %s: partner %s, reference %s, status code %s, %s",
                  *duplicate ? "repeated (nothing written)" : "stored", partner,
                  ap_escape_logitem(r->pool, n->transaction_reference),
                  ap_escape_logitem(r->pool, n->status_code), n->status);
    if (!*duplicate && n->wallet_id && !q->put.matched) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0706) "payment notice %s from partner %s: walletId %s matches "
                                      "no account; stored without one",
                      ap_escape_logitem(r->pool, n->transaction_reference), partner,
                      ap_escape_logitem(r->pool, n->wallet_id));
    }
    return OK;
}

int bank_webhook_handler(request_rec *r)
{
    const bank_dir_conf *conf = bank_conf(r);
    const char *partner = bank_conf_partner(r, conf), *raw = NULL;
    apr_array_header_t *errs = bank_errors_new(r->pool);
    apr_size_t len = 0;
    json_object *body = NULL, *answer;
    bank_notice_t *n;
    int rc, duplicate = 0;

    /* The order matters: nothing of the body is read before the partner is known, and
     * nothing is parsed before its signature holds. (The parser refuses NUL bytes, so the
     * raw body stored as text is all of it.) */
    if ((rc = bank_allow_methods(r, AP_METHOD_BIT << M_POST, "POST")) != OK) {
        return rc;
    }
    if ((rc = authenticate(r, conf, partner)) != OK) {
        return rc;
    }
    if ((rc = bank_read_body(r, &raw, &len)) != OK) {
        return rc;
    }
    if ((rc = check_signature(r, conf, raw, len)) != OK) {
        return rc;
    }
    if ((rc = bank_parse_json(r, raw, len, &body)) != OK) {
        return rc;
    }
    if (!(n = bank_notice_read(r->pool, body, errs))) {
        return bank_error_validation(r, errs);
    }
    if ((rc = store(r, n, partner, raw, &duplicate)) != OK) {
        return rc;
    }
    bank_metrics_outcome(r, duplicate ? BANK_M_NOTICE_DUPLICATE : BANK_M_NOTICE_STORED);
    answer = bank_json_own(r->pool, json_object_new_object());
    json_object_object_add(answer, "received", json_object_new_boolean(1));
    json_object_object_add(answer, "duplicate", json_object_new_boolean(duplicate));
    json_object_object_add(answer, "transactionReference",
                           json_object_new_string(n->transaction_reference));
    return bank_send_json(r, HTTP_OK, answer, NULL);
}
