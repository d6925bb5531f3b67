/* The data layer's typed functions: one per need, each returning a plain struct (values as
 * the database gives them: timestamps as text, read with bank_time_parse). A lookup that
 * finds nothing returns BANK_DB_NOT_FOUND; any other failure what bank_db.h says, with the
 * text in bank_db_error. Results live in the handle's pool. Only the store files
 * (mod_bank/bank_store_*.c) know statement labels and columns. No httpd dependency. */
#ifndef BANK_STORE_H
#define BANK_STORE_H

#include <apr_pools.h>
#include <apr_tables.h>
#include "bank_crypt.h"
#include "bank_db.h"
#include "bank_notice.h"
#include "bank_push.h"

/* ---- access tokens, sign-in throttle, devices (bank_store_auth.c) ---- */

typedef struct {
    const char *customer_id;
    const char *hash; /* sha256 hex of the secret */
    const char *abilities;
    const char *expires_at; /* NULL: never */
    const char *last_used_at;
} bank_token_row_t;

bank_db_rc bank_store_token_find(bank_db_t *db, const char *id, bank_token_row_t *out);
/* Records uses of tokens: ids[i] used at times[i] (bank_time_iso), count 1 to
 * BANK_TOKEN_USES_MAX, in one statement; a token's last_used_at never moves back. On
 * PostgreSQL in a transaction of its own that waits for no standby and no row lock. */
#define BANK_TOKEN_USES_MAX 64
bank_db_rc bank_store_token_uses(bank_db_t *db, int count, const char *const *ids,
                                 const char *const *times);
/* A new token row; *id its key. */
bank_db_rc bank_store_token_insert(bank_db_t *db, const char *customer_id, const char *hash,
                                   const char *abilities, const char *now, const char *expires,
                                   const char **id);
/* Deletes one token (sign-out); *count 0 when it was gone already. */
bank_db_rc bank_store_token_delete(bank_db_t *db, const char *id, int *count);
/* Deletes every token of a customer; *count how many. */
bank_db_rc bank_store_token_revoke_all(bank_db_t *db, const char *customer_id, int *count);
/* Deletes up to batch tokens that expired before `before`; *removed: how many. */
bank_db_rc bank_store_tokens_prune(bank_db_t *db, const char *before, int batch, int *removed);
/* The tokens revoked (deleted, or changed in what verifies them) and the customers whose BVN
 * answer changed, committed after position, a feed position this returned before (NULL:
 * none, only where the feed stands): *ids the tokens' ids as text ("0": every token),
 * *customers the customers' ids ("*": every customer), together at most BANK_CHANGE_FEED_MAX
 * + 1 (more: not all of them), *next where the feed stands after them. All from the
 * handle's pool. */
bank_db_rc bank_store_token_revocations(bank_db_t *db, const char *position,
                                        apr_array_header_t **ids, apr_array_header_t **customers,
                                        const char **next);

/* Failures within a window, counted in one of two tables of the same shape: per
 * (lower-cased e-mail, client IP) for BankSignInThrottle, or per (scope, subject) for the
 * shared counters of bank_throttle.c ("bvn" per customer, "address" per client IP). */
typedef enum { BANK_COUNTS_SIGN_IN, BANK_COUNTS_SHARED } bank_counts_table;

typedef struct {
    apr_int64_t failures;
    const char *window_start;
} bank_throttle_t;

/* a, b: the e-mail and the IP (SIGN_IN), the scope and the subject (SHARED). Timestamps
 * as bank_time_iso gives them; a window that started before cutoff has expired. */
/* The failures of the unexpired window (none: 0). */
bank_db_rc bank_store_count_get(bank_db_t *db, bank_counts_table table, const char *a,
                                const char *b, const char *cutoff, bank_throttle_t *out);
/* Counts one failure atomically (a new window when the old one expired before cutoff). */
bank_db_rc bank_store_count_fail(bank_db_t *db, bank_counts_table table, const char *a,
                                 const char *b, const char *now, const char *cutoff,
                                 bank_throttle_t *out);
/* Clears the row and, in the same statement, reads what it held: its failures if the window
 * has not expired, else 0 (no row: 0). */
bank_db_rc bank_store_count_clear(bank_db_t *db, bank_counts_table table, const char *a,
                                  const char *b, const char *cutoff, bank_throttle_t *out);
/* Drops the rows (of scope, SHARED) whose window started before `before`. */
bank_db_rc bank_store_count_prune(bank_db_t *db, bank_counts_table table, const char *scope,
                                  const char *before);
/* The customer's device, signed in on by the session token_id (NULL: none known); the
 * schema takes it from any other customer (012_device_owner.sql). */
bank_db_rc bank_store_device_upsert(bank_db_t *db, const char *customer_id, const char *device,
                                    const char *token_id, const char *now);
/* Keeps `device` and the customer's `keep` - 1 other devices seen last (BankMaxDevices) and
 * removes the others. */
bank_db_rc bank_store_device_trim(bank_db_t *db, const char *customer_id, const char *device,
                                  int keep);

/* ---- customers, identity records, accounts (bank_store_customer.c) ----
 * A customer's BVN and the identity records are stored sealed with the keyring of
 * bank_crypt_use (docs/security.md) and given back plain; a value that does not open fails
 * the call (BANK_DB_ERROR, the reason in bank_db_error), never yields another row's data. */

typedef struct {
    const char *id;
    const char *email;
    const char *password; /* the stored hash */
    const char *first_name;
    const char *last_name;
    const char *phone;
    int email_verified;
    const char *bvn; /* NULL until verified */
    const char *referral_code;
    const char *created_at;
    const char *updated_at;
} bank_customer_t;

/* E-mail compared with ASCII letters folded, and nothing else (whatever the locale). */
bank_db_rc bank_store_customer_by_email(bank_db_t *db, const char *email, bank_customer_t *out);
/* Up to limit stored password hashes, of the customers whose id is `from` (a UUID) or after
 * it in the id order (with random ids, a random sample); from NULL: from the start. */
bank_db_rc bank_store_password_sample(bank_db_t *db, const char *from, int limit,
                                      const char *const **hashes, int *n);
bank_db_rc bank_store_customer_by_id(bank_db_t *db, const char *id, bank_customer_t *out);
/* id, email, password, names, phone, email_verified, created_at and updated_at of c. */
bank_db_rc bank_store_customer_insert(bank_db_t *db, const bank_customer_t *c);
/* Stores BVN and referral code on a customer not yet verified; *changed 0 when a concurrent
 * verification came first. */
bank_db_rc bank_store_customer_set_bvn(bank_db_t *db, const char *id, const char *bvn,
                                       const char *referral, const char *now, int *changed);

typedef struct {
    const char *bvn;
    const char *first_name;
    const char *last_name;
    const char *date_of_birth; /* YYYY-MM-DD */
    const char *phone;
} bank_bvn_record_t;

bank_db_rc bank_store_bvn_record_upsert(bank_db_t *db, const bank_bvn_record_t *rec,
                                        const char *now);
/* n records added or replaced as bank_store_bvn_record_upsert does, in one transaction
 * (bankctl bvn import's batch); *replaced: how many had a record already. */
bank_db_rc bank_store_bvn_records_load(bank_db_t *db, const bank_bvn_record_t *recs, int n,
                                       const char *now, int *replaced);
/* An identity provider's match (docs/identity.md): names and date, no phone, the provider
 * as source and now as when it was checked. */
bank_db_rc bank_store_bvn_record_keep(bank_db_t *db, const bank_bvn_record_t *rec,
                                      const char *source, const char *now);

/* A kept record with where it came from (bankctl bvn show). */
typedef struct {
    bank_bvn_record_t rec;
    const char *source;     /* "table" or the provider's name */
    const char *checked_at; /* when the provider confirmed it; NULL: loaded by the operator */
} bank_bvn_kept_t;

bank_db_rc bank_store_bvn_record_get(bank_db_t *db, const char *bvn, bank_bvn_kept_t *out);
/* Deletes the record of a BVN; *count 0 when there was none. */
bank_db_rc bank_store_bvn_record_delete(bank_db_t *db, const char *bvn, int *count);
/* The keyed hash a BVN is looked up by (NULL without a hash key). */
const char *bank_store_bvn_hash(bank_db_t *db, const char *bvn);

typedef struct {
    const char *id;
    const char *customer_id;
    const char *account_type;
    apr_int64_t balance_minor;
    const char *currency;
    const char *status;
    const char *bank_name;
    int verified;
    const char *bank_account_id;
    const char *account_name;
    const char *account_number;
    const char *created_at;
    const char *updated_at;
} bank_account_t;

/* What BVN onboarding reads before deciding (bank_onboard.c): one statement, and a second
 * for the BVN's holder while the customer has no BVN. */
typedef struct {
    bank_customer_t customer;
    bank_account_t account;   /* id NULL: no account */
    const char *owner;        /* who holds the BVN asked about; read only while the customer
                                 has no BVN; NULL: nobody */
    bank_throttle_t count;    /* the counter (scope, customer) of the unexpired window; 0: none */
    bank_bvn_record_t record; /* bvn NULL: no record of the BVN; phone not read */
} bank_onboard_row_t;

/* The customer, their account, the BVN's holder, the customer's counter in `scope` (its
 * window started after cutoff) and the BVN's record; BANK_DB_NOT_FOUND: no such customer. */
bank_db_rc bank_store_onboard_read(bank_db_t *db, const char *customer_id, const char *bvn,
                                   const char *scope, const char *cutoff, bank_onboard_row_t *out);
/* The next account serial (1, 2, ...), shared by every process. */
bank_db_rc bank_store_account_serial_next(bank_db_t *db, const char *now, apr_int64_t *serial);
/* A verified personal NGN account with balance 0: id, customer_id, bank_name,
 * bank_account_id, account_name, account_number, created_at and updated_at of a; the row as
 * stored in *out (NULL: not wanted), in the same round trip. */
bank_db_rc bank_store_account_insert(bank_db_t *db, const bank_account_t *a, bank_account_t *out);

/* ---- identity keys and sealing in batches (bank_store_identity.c) ---- */

/* Records each key's check value the first time the database sees it, then compares:
 * *wrong (NULL: all good) says which key is not the one the database knows, or which key
 * id rows are sealed with that kr lacks. */
bank_db_rc bank_store_identity_keys_check(bank_db_t *db, const bank_keyring_t *kr,
                                          const char **wrong);
/* How many rows still hold identity data in plain text (written before sealing). */
bank_db_rc bank_store_identity_plain(bank_db_t *db, apr_int64_t *count);
/* One batch, in one transaction: up to limit customers and limit identity records that are
 * plain or sealed with another key than kr's current one, sealed with the current key.
 * *done: rows changed (0: nothing left). A value that does not open fails the batch. */
bank_db_rc bank_store_identity_reseal(bank_db_t *db, const bank_keyring_t *kr, int limit,
                                      int *done);

/* ---- banks and payment notices (bank_store_notice.c) ---- */

typedef struct {
    apr_int64_t id;
    const char *name;
    const char *slug;
    const char *code;
    apr_int64_t active;
} bank_bank_t;

/* The active banks (bank_bank_t), in no particular order. */
bank_db_rc bank_store_banks_active(bank_db_t *db, apr_array_header_t **out);
/* ---- the runtime role's privileges (bank_store_privileges.c) ---- */
#define BANK_PRIV_SELECT 1
#define BANK_PRIV_INSERT 2
#define BANK_PRIV_UPDATE 4
#define BANK_PRIV_DELETE 8
/* What the connected role lacks to run every statement of the store, and what the triggers
 * of the tables they write (and the schema's functions they call) do as that role (PostgreSQL;
 * SQLite has no roles: none): *missing "INSERT on push_outbox, USAGE on sequence
 * push_outbox_id_seq, ..." or NULL. */
bank_db_rc bank_store_privileges_missing(bank_db_t *db, const char **missing);

/* The highest migration applied (schema_version; none: 0). */
bank_db_rc bank_store_schema_version(bank_db_t *db, apr_int64_t *version);

/* One notice to store: what it is, then what storing it did. */
typedef struct {
    const bank_notice_t *n;
    const char *id; /* a new UUID */
    const char *partner;
    const char *raw; /* the body as received */
    const char *now;
    int added;   /* 1 written, 0 its key (partner, transaction_reference,
                    status_code) was there already: a repeat, nothing written */
    int matched; /* written with the account whose bank-side id is walletId (0: no walletId,
                    or no such account) */
} bank_notice_put_t;

/* Stores one notice unless its key is there, joined to its account in the same statement. */
bank_db_rc bank_store_notice_put(bank_db_t *db, bank_notice_put_t *put);
/* Stores count notices in ONE transaction (one commit: one fsync for all), in key order; a
 * key twice in the list is written once, the second a repeat. If anything fails, nothing is
 * stored and every put says added 0. */
bank_db_rc bank_store_notices_put(bank_db_t *db, bank_notice_put_t **puts, int count);

/* A stored notice, for bankctl notices: the partner's fields (service and type not read
 * back), who sent it, whose account it names and when it arrived. */
typedef struct {
    bank_notice_t n;
    const char *partner;
    const char *customer_id;
    const char *received_at;
} bank_notice_row_t;

/* The newest limit notices (bank_notice_row_t), newest first. */
bank_db_rc bank_store_notices_list(bank_db_t *db, int limit, apr_array_header_t **out);

/* A notice whole, every column as the database prints it (bankctl notices archive and
 * restore; NULL for SQL NULL), in the order of bank_notice_column_names. */
#define BANK_NOTICE_COLUMNS 23
enum {
    BANK_NOTICE_ID = 0,
    BANK_NOTICE_PARTNER = 1,
    BANK_NOTICE_AMOUNT = 5,
    BANK_NOTICE_STATUS_CODE = 13,
    BANK_NOTICE_REFERENCE = 15,
    BANK_NOTICE_RECEIVED_AT = 22
};
extern const char *const bank_notice_column_names[BANK_NOTICE_COLUMNS];
typedef struct {
    const char *v[BANK_NOTICE_COLUMNS];
} bank_notice_record_t;
/* Part of the notices in (received_at, id) order: after one row (its received_at and id as a
 * record gave them; both NULL: from the first), up to another (a page of those received
 * before a cut: the window holds no later notice). */
typedef struct {
    const char *after_at, *after_id;
    const char *upto_at, *upto_id;
} bank_notice_window_t;

/* How many notices were received before cut. */
bank_db_rc bank_store_notices_before(bank_db_t *db, const char *cut, apr_int64_t *count);
/* The next limit notices received before cut after w's after_* row (bank_notice_record_t). */
bank_db_rc bank_store_notices_page(bank_db_t *db, const char *cut, const bank_notice_window_t *w,
                                   int limit, apr_array_header_t **out);
/* Keeps the keys of the notices in w (a repeat of one is then answered as a duplicate, also
 * once it is gone), marked archived at now; *kept: how many were not kept already. */
bank_db_rc bank_store_notices_keep_keys(bank_db_t *db, const char *now,
                                        const bank_notice_window_t *w, int *kept);
/* After the keys were kept, before the first notice goes: on PostgreSQL, waits for every
 * insert of notices under way to end. An insert reads the kept keys as of its start (READ
 * COMMITTED) but meets the unique key as it is: one that started before the keys were
 * committed could otherwise store a repeat once its row was deleted. Every insert that
 * starts later sees the keys. Nothing to wait for on SQLite (one writer, reading the latest
 * rows). */
bank_db_rc bank_store_notices_settle(bank_db_t *db);
/* Deletes the notices in w and their push messages, in one transaction; *removed: how many
 * notices. */
bank_db_rc bank_store_notices_remove(bank_db_t *db, const bank_notice_window_t *w, int *removed);
/* Puts n archived notices back (one whose id or key is there is passed over), without push
 * messages, and forgets their kept keys, in one transaction; *added: how many came back. */
bank_db_rc bank_store_notices_restore(bank_db_t *db, const bank_notice_record_t *r, int n,
                                      int *added);

/* ---- the push outbox (bank_store_push.c, docs/push.md) ---- */

/* Claims up to max rows due at now under lease (a new random text) until `until`: another
 * sender takes them only after that. *out: the rows the lease holds, as the messages to send
 * (bank_push_msg_t, bank_push.h). */
bank_db_rc bank_store_push_claim(bank_db_t *db, const char *lease, const char *until,
                                 const char *now, int max, apr_array_header_t **out);
/* Settles a claimed row if the lease still holds it (*settled 1; 0: the lease had ended and
 * another sender may have it): state "pending" (again at next_at), "sent", "failed" or
 * "unregistered" (done_at set, else NULL), why the last failure (NULL: none). */
bank_db_rc bank_store_push_settle(bank_db_t *db, apr_int64_t id, const char *lease,
                                  const char *state, const char *next_at, const char *done_at,
                                  const char *why, int *settled);
/* Marks every row the lease still holds sent (settle the others first); *count how many. */
bank_db_rc bank_store_push_sent(bank_db_t *db, const char *lease, const char *until,
                                const char *done_at, int *count);
/* Deletes every device row with this token. */
bank_db_rc bank_store_push_device_drop(bank_db_t *db, const char *device_token);
/* The rows still to send. */
bank_db_rc bank_store_push_backlog(bank_db_t *db, apr_int64_t *count);

/* A row for bankctl push list (never the device token). */
typedef struct {
    apr_int64_t id;
    const char *state;
    apr_int64_t attempts;
    const char *customer_id;
    const char *reference; /* the notice's transactionReference */
    const char *created_at;
    const char *next_at;
    const char *done_at;
    const char *last_error;
} bank_push_row_t;

/* The newest limit rows (bank_push_row_t) in state (NULL: any). */
bank_db_rc bank_store_push_list(bank_db_t *db, const char *state, int limit,
                                apr_array_header_t **out);
/* Makes failed row id pending again at now, its attempts afresh; *count 0 if there is no
 * failed row id. */
bank_db_rc bank_store_push_requeue(bank_db_t *db, apr_int64_t id, const char *now, int *count);
/* bankctl push prune, one batch: of the next batch rows in id order after *after, those done
 * (sent, unregistered, failed) before cutoff are deleted (*removed of them), in one statement
 * of its own; *after moves past the batch. *more 0 once the next batch is empty or all
 * created at or after cutoff (ids follow creation: none later can be done before it). */
bank_db_rc bank_store_push_prune(bank_db_t *db, const char *cutoff, int batch, apr_int64_t *after,
                                 int *removed, int *more);

#endif
