/* The push outbox against a real SQLite database, and PostgreSQL under DB=pgsql: a stored
 * notice that names an account writes one row per device of its customer in the same
 * statement, a repeat writes nothing; claims under a lease never hand one row to two
 * senders, a lease that ends hands it on; settling, requeueing and dropping a device;
 * pruning the rows done long ago. */
#include <string.h>
#include "unit.h"
#include "db_fixture.h"
#include "bank_notice.h"
#include "bank_store.h"
#include "bank_uuid.h"

/* Long ago: only this test's rows are due at OLD_DUE (the shared PostgreSQL database holds
 * other tests' rows, due now). */
#define OLD "2000-01-01T00:00:00.000Z"
#define OLD_DUE "2000-01-01T00:00:01.000Z"
#define OLD_LATER "2000-01-01T00:10:00.000Z"

static int seq;

static bank_notice_put_t *put_of(bank_db_t *db, const char *ref, const char *wallet)
{
    return fixture_notice(db, ref, wallet, OLD);
}

static long count_of(bank_db_t *db, const char *sql)
{
    const char *v = NULL;
    CHECK(bank_db_query_value(db, sql, &v) == 0);
    return v ? atol(v) : -1;
}

static long outbox_rows(bank_db_t *db, const char *ref)
{
    return count_of(db, apr_psprintf(bank_db_pool(db),
                                     "SELECT count(*) FROM push_outbox o JOIN payment_notices n "
                                     "ON n.id = o.notice_id WHERE n.transaction_reference = '%s'",
                                     ref));
}

/* A customer with an account (wallet) and two devices. */
static const char *customer_with_devices(bank_db_t *db, const char *pre, bank_customer_t *c)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *wallet = apr_pstrcat(p, pre, "wallet", (char *)NULL);

    fixture_customer(db, "Ada", "Obi", "pw", c);
    fixture_account(db, c, wallet);
    CHECK(bank_store_device_upsert(db, c->id, apr_pstrcat(p, pre, "dev-1", (char *)NULL), NULL,
                                   OLD) == BANK_DB_OK);
    CHECK(bank_store_device_upsert(db, c->id, apr_pstrcat(p, pre, "dev-2", (char *)NULL), NULL,
                                   OLD) == BANK_DB_OK);
    return wallet;
}

/* This test's rows among those claimed. */
static int ours(apr_array_header_t *rows, const char *pre)
{
    int i, n = 0;
    for (i = 0; i < rows->nelts; i++) {
        const bank_push_msg_t *d = &APR_ARRAY_IDX(rows, i, bank_push_msg_t);
        n += d->reference && strncmp(d->reference, pre, strlen(pre)) == 0;
    }
    return n;
}

/* This test's first row among those claimed, or NULL. */
static const bank_push_msg_t *first_ours(apr_array_header_t *rows, const char *pre)
{
    int i;
    for (i = 0; i < rows->nelts; i++) {
        const bank_push_msg_t *d = &APR_ARRAY_IDX(rows, i, bank_push_msg_t);
        if (d->reference && strncmp(d->reference, pre, strlen(pre)) == 0) {
            return d;
        }
    }
    return NULL;
}

static void test_outbox(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "PUSH-%d-%d-", getpid(), ++seq), *ref, *wallet;
    bank_notice_put_t *puts[3];
    bank_customer_t c;

    wallet = customer_with_devices(db, pre, &c);
    ref = apr_pstrcat(p, pre, "a", (char *)NULL);
    /* one notice in a batch with one naming no account: rows for the matched one only */
    puts[0] = put_of(db, ref, wallet);
    puts[1] = put_of(db, apr_pstrcat(p, pre, "b", (char *)NULL), "no-such-wallet");
    CHECK(bank_store_notices_put(db, puts, 2) == BANK_DB_OK);
    CHECK(outbox_rows(db, ref) == 2);
    CHECK(outbox_rows(db, apr_pstrcat(p, pre, "b", (char *)NULL)) == 0);
    /* the same notice again (another id, same key): nothing more */
    puts[0] = put_of(db, ref, wallet);
    CHECK(bank_store_notice_put(db, puts[0]) == BANK_DB_OK && !puts[0]->added);
    CHECK(outbox_rows(db, ref) == 2);
    /* an ignored notice (fields missing) says nothing to push */
    puts[2] = put_of(db, apr_pstrcat(p, pre, "c", (char *)NULL), wallet);
    ((bank_notice_t *)puts[2]->n)->status = "ignored";
    CHECK(bank_store_notice_put(db, puts[2]) == BANK_DB_OK && puts[2]->added);
    CHECK(outbox_rows(db, apr_pstrcat(p, pre, "c", (char *)NULL)) == 0);
}

static void test_claims(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "CLAIM-%d-%d-", getpid(), ++seq), *wallet;
    apr_array_header_t *a = NULL, *b = NULL;
    bank_notice_put_t *put;
    bank_customer_t c;
    apr_int64_t before = 0, after = 0;
    int i, settled = 0, n = 0;
    const bank_push_msg_t *d;

    wallet = customer_with_devices(db, pre, &c);
    CHECK(bank_store_push_backlog(db, &before) == BANK_DB_OK);
    put = put_of(db, apr_pstrcat(p, pre, "a", (char *)NULL), wallet);
    CHECK(bank_store_notice_put(db, put) == BANK_DB_OK && put->added);
    CHECK(bank_store_push_backlog(db, &after) == BANK_DB_OK && after == before + 2);
    /* a first sender takes both; a second, at the same moment, nothing of them */
    CHECK(bank_store_push_claim(db, "lease-a", OLD_LATER, OLD_DUE, 100, &a) == BANK_DB_OK);
    CHECK(ours(a, pre) == 2);
    CHECK(bank_store_push_claim(db, "lease-b", OLD_LATER, OLD_DUE, 100, &b) == BANK_DB_OK);
    CHECK(ours(b, pre) == 0);
    d = first_ours(a, pre);
    CHECK(d && d->attempts == 0 && strcmp(d->amount, "5000") == 0 &&
          strcmp(d->currency, "NGN") == 0 && strcmp(d->receiver_name, "ADA OBI") == 0 &&
          strncmp(d->device_token, pre, strlen(pre)) == 0);
    /* the lease ends (its holder died): the rows go to the next sender; the dead sender's
     * claim cost them no attempt (attempts are counted when an outcome is written) */
    CHECK(bank_store_push_claim(db, "lease-c", "2000-01-01T00:20:00.000Z", OLD_LATER, 100, &b) ==
          BANK_DB_OK);
    CHECK(ours(b, pre) == 2);
    /* the first sender's late outcome no longer counts */
    CHECK(bank_store_push_settle(db, d->id, "lease-a", "sent", OLD_LATER, OLD_LATER, NULL,
                                 &settled) == BANK_DB_OK &&
          settled == 0);
    for (i = 0; i < b->nelts; i++) {
        d = &APR_ARRAY_IDX(b, i, bank_push_msg_t);
        CHECK(d->attempts == 0);
        CHECK(bank_store_push_settle(db, d->id, "lease-c", i == 0 ? "sent" : "failed", OLD_LATER,
                                     OLD_LATER, i == 0 ? NULL : "FCM answered HTTP 503",
                                     &settled) == BANK_DB_OK &&
              settled == 1);
    }
    CHECK(bank_store_push_backlog(db, &after) == BANK_DB_OK && after == before + 2 - b->nelts);
    /* a failed row is listed, and requeued once */
    CHECK(bank_store_push_list(db, "failed", 10000, &a) == BANK_DB_OK);
    d = &APR_ARRAY_IDX(b, b->nelts - 1, bank_push_msg_t);
    for (i = 0; i < a->nelts; i++) {
        const bank_push_row_t *r = &APR_ARRAY_IDX(a, i, bank_push_row_t);
        if (r->id == d->id) {
            n++;
            CHECK(strcmp(r->state, "failed") == 0 && r->attempts == 1 && r->last_error &&
                  strcmp(r->last_error, "FCM answered HTTP 503") == 0 &&
                  strcmp(r->customer_id, c.id) == 0);
        }
    }
    CHECK(n == 1);
    CHECK(bank_store_push_requeue(db, d->id, OLD_DUE, &n) == BANK_DB_OK && n == 1);
    CHECK(bank_store_push_requeue(db, d->id, OLD_DUE, &n) == BANK_DB_OK && n == 0);
    CHECK(bank_store_push_claim(db, "lease-d", OLD_LATER, OLD_DUE, 100, &a) == BANK_DB_OK);
    d = first_ours(a, pre);
    CHECK(ours(a, pre) == 1 && d && d->attempts == 0);
    if (!d) {
        return;
    }
    /* the device goes, first, as the sender does: its removal settles its unsent rows
     * unregistered, this leased one too (the sender's own settle then finds nothing left
     * under its lease); the other device stays */
    CHECK(bank_store_push_device_drop(db, d->device_token) == BANK_DB_OK);
    CHECK(bank_store_push_settle(db, d->id, "lease-d", "unregistered", OLD_LATER, OLD_LATER,
                                 "FCM answered HTTP 404", &settled) == BANK_DB_OK &&
          settled == 0);
    CHECK(count_of(db, apr_psprintf(p,
                                    "SELECT count(*) FROM push_outbox WHERE id = %" APR_INT64_T_FMT
                                    " AND state = 'unregistered' AND lease IS NULL",
                                    d->id)) == 1);
    CHECK(count_of(db, apr_psprintf(p, "SELECT count(*) FROM devices WHERE customer_id = '%s'",
                                    c.id)) == 1);
}

/* The round's sent messages in one statement: every row the lease still holds (the others
 * settled one by one first), none of another lease, none after the lease moved on. */
static void test_sent(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "SENT-%d-%d-", getpid(), ++seq), *wallet, *state;
    const char *later = "2000-01-01T00:30:00.000Z", *until = "2000-01-01T00:40:00.000Z";
    apr_array_header_t *a = NULL, *b = NULL;
    bank_notice_put_t *put;
    bank_customer_t c;
    const bank_push_msg_t *d;
    int i, settled = 0, marked = -1;

    wallet = customer_with_devices(db, pre, &c);
    for (i = 0; i < 2; i++) { /* two notices: four rows */
        put = put_of(db, apr_psprintf(p, "%s%d", pre, i), wallet);
        CHECK(bank_store_notice_put(db, put) == BANK_DB_OK && put->added);
    }
    CHECK(bank_store_push_claim(db, "lease-s", until, later, 3, &a) == BANK_DB_OK);
    CHECK(ours(a, pre) == 3);
    /* one of the round failed: settled on its own, before the round's sent ones */
    d = first_ours(a, pre);
    if (!d || ours(a, pre) != 3) {
        return;
    }
    CHECK(bank_store_push_settle(db, d->id, "lease-s", "failed", later, later, "HTTP 400",
                                 &settled) == BANK_DB_OK &&
          settled == 1);
    /* the fourth row, claimed by another sender, is not this round's */
    CHECK(bank_store_push_claim(db, "lease-t", until, later, 100, &b) == BANK_DB_OK);
    CHECK(ours(b, pre) == 1);
    CHECK(bank_store_push_sent(db, "lease-s", until, later, &marked) == BANK_DB_OK && marked == 2);
    for (i = 0; i < a->nelts; i++) {
        const bank_push_msg_t *m = &APR_ARRAY_IDX(a, i, bank_push_msg_t);
        if (strncmp(m->reference, pre, strlen(pre)) != 0) {
            continue;
        }
        state = NULL;
        CHECK(bank_db_query_value(db,
                                  apr_psprintf(p,
                                               "SELECT state || ' ' || attempts || ' ' || "
                                               "COALESCE(lease, '-') FROM push_outbox WHERE id = "
                                               "%" APR_INT64_T_FMT,
                                               m->id),
                                  &state) == 0);
        CHECK(state && strcmp(state, m->id == d->id ? "failed 1 -" : "sent 1 -") == 0);
    }
    /* again: nothing left under that lease */
    CHECK(bank_store_push_sent(db, "lease-s", until, later, &marked) == BANK_DB_OK && marked == 0);
    /* the other lease's row, after its lease ended and a third sender took it: the late
     * "sent" of the second counts nothing */
    CHECK(bank_store_push_claim(db, "lease-u", "2000-01-01T00:50:00.000Z", until, 100, &b) ==
          BANK_DB_OK);
    CHECK(ours(b, pre) == 1);
    CHECK(bank_store_push_sent(db, "lease-t", until, later, &marked) == BANK_DB_OK && marked == 0);
    CHECK(bank_store_push_sent(db, "lease-u", "2000-01-01T00:50:00.000Z", until, &marked) ==
              BANK_DB_OK &&
          marked == 1);
}

/* PostgreSQL: a row another transaction is claiming is passed over, not waited for. */
static void test_skip_locked(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "SKIP-%d-%d-", getpid(), ++seq), *wallet;
    bank_db_t *other = fixture_pgsql(p);
    apr_array_header_t *a = NULL, *b = NULL;
    bank_notice_put_t *put;
    bank_customer_t c;
    int i, settled;

    CHECK(other != NULL);
    if (!other) {
        return;
    }
    wallet = customer_with_devices(db, pre, &c);
    put = put_of(db, apr_pstrcat(p, pre, "a", (char *)NULL), wallet);
    CHECK(bank_store_notice_put(db, put) == BANK_DB_OK && put->added);
    CHECK(bank_db_begin(db) == BANK_DB_OK);
    CHECK(bank_store_push_claim(db, "lease-x", OLD_LATER, OLD_DUE, 1, &a) == BANK_DB_OK);
    CHECK(a->nelts == 1);
    /* still uncommitted: the other connection skips that row and takes the next */
    CHECK(bank_store_push_claim(other, "lease-y", OLD_LATER, OLD_DUE, 100, &b) == BANK_DB_OK);
    CHECK(ours(b, pre) == 1);
    CHECK(bank_db_end(db, 1) == BANK_DB_OK);
    for (i = 0; i < a->nelts; i++) {
        CHECK(bank_store_push_settle(db, APR_ARRAY_IDX(a, i, bank_push_msg_t).id, "lease-x", "sent",
                                     OLD_LATER, OLD_LATER, NULL, &settled) == BANK_DB_OK);
    }
    for (i = 0; i < b->nelts; i++) {
        CHECK(bank_store_push_settle(other, APR_ARRAY_IDX(b, i, bank_push_msg_t).id, "lease-y",
                                     "sent", OLD_LATER, OLD_LATER, NULL, &settled) == BANK_DB_OK);
    }
}

/* A pending message's state and last error ("state|error"). */
static const char *row_state(bank_db_t *db, const char *ref, const char *device)
{
    const char *v = NULL;
    CHECK(bank_db_query_value(
              db,
              apr_psprintf(bank_db_pool(db),
                           "SELECT o.state || '|' || COALESCE(o.last_error, '') FROM push_outbox o"
                           " JOIN payment_notices n ON n.id = o.notice_id"
                           " WHERE n.transaction_reference = '%s' AND o.device_token = '%s'",
                           ref, device),
              &v) == 0);
    return v ? v : "(none)";
}

static long devices_of(bank_db_t *db, const char *customer_id, const char *device)
{
    return count_of(db, apr_psprintf(bank_db_pool(db),
                                     "SELECT count(*) FROM devices WHERE customer_id = '%s'%s%s%s",
                                     customer_id, device ? " AND device_token = '" : "",
                                     device ? device : "", device ? "'" : ""));
}

/* A device token is one customer's: the one who signed in on it last (C6). Signing in on it
 * takes it from the other customer, with that customer's unsent messages to it. */
static void test_device_taken(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "TAKE-%d-%d-", getpid(), ++seq), *wallet, *phone;
    bank_customer_t bob, alice;
    bank_notice_put_t *put;
    const char *ref;

    wallet = customer_with_devices(db, pre, &bob);
    phone = apr_pstrcat(p, pre, "dev-1", (char *)NULL);
    ref = apr_pstrcat(p, pre, "a", (char *)NULL);
    put = put_of(db, ref, wallet);
    CHECK(bank_store_notice_put(db, put) == BANK_DB_OK && put->added);
    CHECK(strcmp(row_state(db, ref, phone), "pending|") == 0);
    fixture_customer(db, "Alice", "Obi", "pw", &alice);
    CHECK(bank_store_device_upsert(db, alice.id, phone, NULL, OLD_LATER) == BANK_DB_OK);
    CHECK(devices_of(db, alice.id, phone) == 1);
    CHECK(devices_of(db, bob.id, phone) == 0);
    CHECK(devices_of(db, bob.id, NULL) == 1); /* his other phone stays his */
    CHECK(strncmp(row_state(db, ref, phone), "unregistered|the device left the customer", 41) == 0);
    CHECK(strcmp(row_state(db, ref, apr_pstrcat(p, pre, "dev-2", (char *)NULL)), "pending|") == 0);
    /* a later notice for Bob has no row for the phone; Bob signing in again takes it back */
    ref = apr_pstrcat(p, pre, "b", (char *)NULL);
    put = put_of(db, ref, wallet);
    CHECK(bank_store_notice_put(db, put) == BANK_DB_OK && put->added);
    CHECK(outbox_rows(db, ref) == 1);
    CHECK(bank_store_device_upsert(db, bob.id, phone, NULL, OLD_LATER) == BANK_DB_OK);
    CHECK(devices_of(db, alice.id, NULL) == 0 && devices_of(db, bob.id, NULL) == 2);
}

/* The session a device was signed in with: revoking it (sign-out, bankctl, SQL) removes the
 * device and its unsent messages; a device signed in on again by a newer session stays
 * when the older one signs out. */
static void test_device_session(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "SESS-%d-%d-", getpid(), ++seq), *wallet, *phone, *ref;
    const char *t1 = NULL, *t2 = NULL;
    bank_customer_t c;
    bank_notice_put_t *put;
    int n = 0;

    wallet = customer_with_devices(db, pre, &c);
    phone = apr_pstrcat(p, pre, "dev-1", (char *)NULL);
    CHECK(bank_store_token_insert(db, c.id, "h1", "[\"*\"]", OLD, NULL, &t1) == BANK_DB_OK);
    CHECK(bank_store_token_insert(db, c.id, "h2", "[\"*\"]", OLD, NULL, &t2) == BANK_DB_OK);
    CHECK(bank_store_device_upsert(db, c.id, phone, t1, OLD) == BANK_DB_OK);
    CHECK(bank_store_device_upsert(db, c.id, phone, t2, OLD_LATER) == BANK_DB_OK);
    ref = apr_pstrcat(p, pre, "a", (char *)NULL);
    put = put_of(db, ref, wallet);
    CHECK(bank_store_notice_put(db, put) == BANK_DB_OK && put->added);
    /* the older session signs out: the phone is the newer one's still */
    CHECK(bank_store_token_delete(db, t1, &n) == BANK_DB_OK && n == 1);
    CHECK(devices_of(db, c.id, phone) == 1);
    CHECK(strcmp(row_state(db, ref, phone), "pending|") == 0);
    /* the newer one signs out: the phone goes, and its unsent message */
    CHECK(bank_store_token_delete(db, t2, &n) == BANK_DB_OK && n == 1);
    CHECK(devices_of(db, c.id, phone) == 0);
    CHECK(devices_of(db, c.id, NULL) == 1);
    CHECK(strncmp(row_state(db, ref, phone), "unregistered|", 13) == 0);
}

/* BankMaxDevices: the devices seen last are kept. */
static void test_device_trim(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "TRIM-%d-%d-", getpid(), ++seq);
    bank_customer_t c;
    int i;

    fixture_customer(db, "Ada", "Obi", "pw", &c);
    for (i = 0; i < 12; i++) {
        CHECK(bank_store_device_upsert(db, c.id, apr_psprintf(p, "%sd%02d", pre, i), NULL,
                                       apr_psprintf(p, "2000-01-01T00:00:%02d.000Z", i)) ==
              BANK_DB_OK);
    }
    CHECK(devices_of(db, c.id, NULL) == 12);
    CHECK(bank_store_device_trim(db, c.id, apr_psprintf(p, "%sd11", pre), 10) == BANK_DB_OK);
    CHECK(devices_of(db, c.id, NULL) == 10);
    CHECK(devices_of(db, c.id, apr_psprintf(p, "%sd00", pre)) == 0);
    CHECK(devices_of(db, c.id, apr_psprintf(p, "%sd01", pre)) == 0);
    CHECK(devices_of(db, c.id, apr_psprintf(p, "%sd02", pre)) == 1);
    /* seen again, the oldest one left is the newest now, and another goes */
    CHECK(bank_store_device_upsert(db, c.id, apr_psprintf(p, "%sd02", pre), NULL,
                                   "2000-01-01T00:01:00.000Z") == BANK_DB_OK);
    CHECK(bank_store_device_trim(db, c.id, apr_psprintf(p, "%sd02", pre), 9) == BANK_DB_OK);
    CHECK(devices_of(db, c.id, apr_psprintf(p, "%sd02", pre)) == 1);
    CHECK(devices_of(db, c.id, apr_psprintf(p, "%sd03", pre)) == 0);
    CHECK(devices_of(db, c.id, NULL) == 9);
    /* the device signed in on stays even when its last-seen time is not the newest (a
     * sign-in that began earlier but commits later) */
    CHECK(bank_store_device_trim(db, c.id, apr_psprintf(p, "%sd04", pre), 2) == BANK_DB_OK);
    CHECK(devices_of(db, c.id, apr_psprintf(p, "%sd04", pre)) == 1);
    CHECK(devices_of(db, c.id, apr_psprintf(p, "%sd02", pre)) == 1);
    CHECK(devices_of(db, c.id, NULL) == 2);
}

/* One customer's backlog delays another's message by one round at most: every customer's
 * oldest due message is claimed before anyone's second. */
static void test_fair(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "FAIR-%d-%d-", getpid(), ++seq), *busy, *quiet;
    const char *due = "1999-06-01T00:00:00.000Z", *now = "1999-06-01T00:00:01.000Z";
    const char *until = "1999-06-01T00:10:00.000Z";
    apr_array_header_t *a = NULL;
    bank_customer_t c1, c2;
    bank_notice_put_t *put;
    int i, quiet_rows = 0, settled;

    /* only this test's rows are due at `now` (a failed earlier run's are sent) */
    CHECK(bank_db_query(db, "UPDATE push_outbox SET state = 'sent' WHERE state = 'pending'"
                            " AND next_at < '1999-12-31T00:00:00.000Z'") == 0);
    busy = customer_with_devices(db, apr_pstrcat(p, pre, "busy-", (char *)NULL), &c1);
    quiet = customer_with_devices(db, apr_pstrcat(p, pre, "quiet-", (char *)NULL), &c2);
    for (i = 0; i < 30; i++) { /* 60 messages, older than the quiet customer's */
        put = fixture_notice(db, apr_psprintf(p, "%sbusy-%d", pre, i), busy, due);
        CHECK(bank_store_notice_put(db, put) == BANK_DB_OK && put->added);
    }
    put = fixture_notice(db, apr_pstrcat(p, pre, "quiet", (char *)NULL), quiet, now);
    CHECK(bank_store_notice_put(db, put) == BANK_DB_OK && put->added);
    /* a round of 5: the busy customer's first, the quiet one's two, then the busy one's */
    CHECK(bank_store_push_claim(db, "lease-f", until, now, 5, &a) == BANK_DB_OK);
    CHECK(a->nelts == 5);
    for (i = 0; i < a->nelts; i++) {
        const bank_push_msg_t *m = &APR_ARRAY_IDX(a, i, bank_push_msg_t);
        quiet_rows += strcmp(m->reference, apr_pstrcat(p, pre, "quiet", (char *)NULL)) == 0;
    }
    CHECK(quiet_rows == 2);
    CHECK(bank_store_push_sent(db, "lease-f", until, now, &settled) == BANK_DB_OK && settled == 5);
    /* the rest: the busy customer's other 57 */
    CHECK(bank_store_push_claim(db, "lease-g", until, now, 100, &a) == BANK_DB_OK);
    CHECK(a->nelts == 57);
    CHECK(bank_store_push_sent(db, "lease-g", until, now, &settled) == BANK_DB_OK && settled == 57);
}

/* Sets the state and done_at of notice ref's rows (done NULL: left NULL). */
static void mark(bank_db_t *db, const char *ref, const char *state, const char *done)
{
    CHECK(bank_db_query(db, apr_psprintf(bank_db_pool(db),
                                         "UPDATE push_outbox SET state = '%s', done_at = %s%s%s "
                                         "WHERE notice_id = (SELECT id FROM payment_notices "
                                         "WHERE transaction_reference = '%s')",
                                         state, done ? "'" : "", done ? done : "NULL",
                                         done ? "'" : "", ref)) == 0);
}

/* bankctl push prune's batches: the rows done (sent, unregistered, failed) before the cutoff
 * go, whatever the batch's length; pending rows and rows done later stay; a batch of rows
 * none of which was created before the cutoff ends it. Started at this test's first row (the
 * shared PostgreSQL database holds other tests' rows, created now). */
static void test_prune(bank_db_t *db)
{
    apr_pool_t *p = bank_db_pool(db);
    const char *pre = apr_psprintf(p, "PRUNE-%d-%d-", getpid(), ++seq), *wallet;
    static const char *const names[] = {"sent", "unreg", "failed", "pending", "young"};
    const char *cutoff = "2000-06-01T00:00:00.000Z";
    apr_int64_t after, first;
    long removed = 0;
    int n = 0, more = 1, i, rounds = 0;
    bank_customer_t c;

    wallet = customer_with_devices(db, pre, &c);
    for (i = 0; i < 5; i++) {
        bank_notice_put_t *put = put_of(db, apr_pstrcat(p, pre, names[i], (char *)NULL), wallet);
        CHECK(bank_store_notice_put(db, put) == BANK_DB_OK && put->added);
    }
    mark(db, apr_pstrcat(p, pre, "sent", (char *)NULL), "sent", OLD_LATER);
    mark(db, apr_pstrcat(p, pre, "unreg", (char *)NULL), "unregistered", OLD_LATER);
    mark(db, apr_pstrcat(p, pre, "failed", (char *)NULL), "failed", OLD_LATER);
    mark(db, apr_pstrcat(p, pre, "young", (char *)NULL), "sent", "2001-01-01T00:00:00.000Z");
    /* a pending row is never done: an old done_at on one does not make it go */
    mark(db, apr_pstrcat(p, pre, "pending", (char *)NULL), "pending", OLD_LATER);
    first = count_of(db, apr_psprintf(p,
                                      "SELECT MIN(o.id) FROM push_outbox o JOIN payment_notices n"
                                      " ON n.id = o.notice_id WHERE n.transaction_reference "
                                      "LIKE '%s%%'",
                                      pre));
    /* nothing created before OLD: the first batch ends it */
    after = first - 1;
    CHECK(bank_store_push_prune(db, OLD, 3, &after, &n, &more) == BANK_DB_OK);
    CHECK(!more && n == 0 && after == first - 1);
    more = 1;
    while (more && rounds++ < 100) {
        CHECK(bank_store_push_prune(db, cutoff, 3, &after, &n, &more) == BANK_DB_OK);
        removed += n;
    }
    /* ten rows in windows of 3: 3, 3, 3, 1, then an empty one */
    CHECK(!more && rounds == 5 && removed == 6);
    for (i = 0; i < 5; i++) {
        CHECK(outbox_rows(db, apr_pstrcat(p, pre, names[i], (char *)NULL)) == (i < 3 ? 0 : 2));
    }
    /* settled: no row of this test is left due for the tests after it */
    mark(db, apr_pstrcat(p, pre, "pending", (char *)NULL), "sent", OLD_LATER);
}

static void all(bank_db_t *db)
{
    test_device_taken(db);
    test_device_session(db);
    test_device_trim(db);
    test_fair(db);
    test_outbox(db);
    test_claims(db);
    test_sent(db);
    test_prune(db);
    if (bank_db_is_pgsql(db)) {
        test_skip_locked(db);
    }
}

static void run_tests(apr_pool_t *p)
{
    fixture_each(p, all);
}
