/* POST /onboarding/bvn (CONTRACT C7): checks a BVN against the identity provider's record
 * and, the first time, stores it with a referral code and opens the customer's NGN account,
 * all in one transaction. Repeats and concurrent requests answer with the one account.
 * The BVN is never logged. */
#include <string.h>
#include <apr_strings.h>
#include <http_protocol.h>
#include <http_request.h>
#include "mod_bank.h"
#include "mod_bank_metrics.h"
#include "bank_account.h"
#include "bank_customer.h"
#include "bank_json.h"
#include "bank_nuban.h"
#include "bank_util.h"

APLOG_USE_MODULE(bank);

/* A new referral code is drawn this many times when the last one was taken. */
#define BVN_ATTEMPTS 3
/* A string field longer than this fails maxLength rather than its format rule. */
#define BVN_FIELD_MAX 1024

/* Unknown BVN, another date of birth, other names: one answer, byte for byte, so the
 * endpoint tells nobody who holds a BVN or when they were born (docs/api.md). */
#define BVN_MISMATCH "The bvn_number and date_of_birth do not match a BVN record of this customer"

/* The write that a taken referral code makes fail: the only step worth another attempt. */
static const char step_referral[] = "referral";

/* Columns of bank_customer_by_id: BANK_CUST_* (bank_customer.h); of
 * bank_account_by_customer: */
enum {
    A_ID,
    A_CUSTOMER,
    A_TYPE,
    A_BALANCE,
    A_CURRENCY,
    A_STATUS,
    A_BANK,
    A_VERIFIED,
    A_BANK_ID,
    A_NAME,
    A_NUMBER,
    A_CREATED,
    A_UPDATED
};

/* Where the customer stands with the BVN asked about. */
typedef enum {
    BVN_OPEN,       /* not verified and the BVN is free: open the account */
    BVN_DONE,       /* verified with this BVN; the account exists */
    BVN_OTHER,      /* verified with another BVN */
    BVN_TAKEN,      /* the BVN belongs to another customer */
    BVN_NO_ACCOUNT, /* verified with this BVN but without an account: data to repair */
    BVN_NO_CUSTOMER /* the token's customer no longer exists */
} bvn_verdict;

typedef struct {
    const char *customer_id;
    const char *bvn;
    const char *const *customer; /* row of bank_customer_by_id */
    const char *const *account;  /* row of bank_account_by_customer, or NULL */
    bvn_verdict verdict;
    const char *owner; /* BVN_TAKEN: the customer who holds the BVN */
} bvn_state_t;

/* ---- the answer ---- */

/* Interface 2.4. */
static json_object *account_json(apr_pool_t *p, const char *const *a)
{
    json_object *o = json_object_new_object(), *d = json_object_new_object();

    json_object_object_add(d, "bank", bank_json_str(a[A_BANK]));
    json_object_object_add(d, "verified", json_object_new_boolean(bank_db_bool(a[A_VERIFIED])));
    json_object_object_add(d, "accountId", bank_json_str(a[A_BANK_ID]));
    json_object_object_add(d, "accountName", bank_json_str(a[A_NAME]));
    json_object_object_add(d, "accountNumber", bank_json_str(a[A_NUMBER]));

    json_object_object_add(o, "accountId", bank_json_str(a[A_ID]));
    json_object_object_add(o, "customerId", bank_json_str(a[A_CUSTOMER]));
    json_object_object_add(o, "accountType", bank_json_str(a[A_TYPE]));
    json_object_object_add(
        o, "balance",
        json_object_new_string(bank_money_text(p, apr_atoi64(a[A_BALANCE] ? a[A_BALANCE] : "0"))));
    json_object_object_add(o, "currency", bank_json_str(a[A_CURRENCY]));
    json_object_object_add(o, "status", bank_json_str(a[A_STATUS]));
    json_object_object_add(o, "details", d);
    json_object_object_add(o, "createdAt", bank_json_time(p, a[A_CREATED]));
    json_object_object_add(o, "updatedAt", bank_json_time(p, a[A_UPDATED]));
    return o;
}

/* Interface 2.3: the fields of 2.2 and bvn, referralCode, account, nin. */
static json_object *customer_json(apr_pool_t *p, const char *const *c, const char *const *a)
{
    json_object *o = bank_customer_json(p, c);

    json_object_object_add(o, "bvn", bank_json_str(c[BANK_CUST_BVN]));
    json_object_object_add(o, "referralCode", bank_json_str(c[BANK_CUST_REFERRAL]));
    json_object_object_add(o, "account", account_json(p, a));
    json_object_object_add(o, "nin", NULL);
    return o;
}

/* The answer a settled state calls for. */
static int answer(request_rec *r, const bvn_state_t *st, int opened)
{
    json_object *body;

    switch (st->verdict) {
    case BVN_DONE:
        body = bank_json_own(r->pool, json_object_new_object());
        json_object_object_add(body, "customer", customer_json(r->pool, st->customer, st->account));
        bank_metrics_outcome(r, opened ? BANK_M_BVN_VERIFIED : BANK_M_BVN_REPEAT);
        return bank_send_json(r, HTTP_OK, body,
                              opened ? "BVN verified successfully" : "BVN already verified");
    case BVN_OTHER:
        return bank_error(r, BANK_E_ALREADY_VERIFIED, NULL, NULL);
    case BVN_TAKEN:
        /* Nothing about the other customer: not who, not when. */
        return bank_error(r, BANK_E_BVN_IN_USE, NULL, NULL);
    case BVN_NO_CUSTOMER:
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      BANKLOGNO(0601) "token of customer %s, who no longer exists",
                      st->customer_id);
        return bank_error(r, BANK_E_UNAUTHORIZED_ACCESS, NULL, NULL);
    default:
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                      BANKLOGNO(0602) "customer %s has a BVN but no account: repair the data",
                      st->customer_id);
        return bank_error(r, BANK_E_INTERNAL, NULL, NULL);
    }
}

/* ---- the database ---- */

/* Reads the customer and decides where they stand (inside or outside a transaction). */
static bank_db_rc load_state_once(bank_db_t *db, bvn_state_t *st)
{
    const char *args[1];
    bank_rows_t rows;
    bank_db_rc rc;

    st->customer = st->account = NULL;
    args[0] = st->customer_id;
    if ((rc = bank_db_select(db, "bank_customer_by_id", &rows, 1, args)) != BANK_DB_OK) {
        return rc;
    }
    if (rows.nrows != 1) {
        st->verdict = BVN_NO_CUSTOMER;
        return BANK_DB_OK;
    }
    st->customer = rows.rows[0];
    if (st->customer[BANK_CUST_BVN] && strcmp(st->customer[BANK_CUST_BVN], st->bvn) != 0) {
        st->verdict = BVN_OTHER;
        return BANK_DB_OK;
    }
    if (st->customer[BANK_CUST_BVN]) {
        if ((rc = bank_db_select(db, "bank_account_by_customer", &rows, 1, args)) != BANK_DB_OK) {
            return rc;
        }
        st->account = rows.nrows == 1 ? rows.rows[0] : NULL;
        st->verdict = st->account ? BVN_DONE : BVN_NO_ACCOUNT;
        return BANK_DB_OK;
    }
    args[0] = st->bvn;
    if ((rc = bank_db_select(db, "bank_customer_by_bvn", &rows, 1, args)) != BANK_DB_OK) {
        return rc;
    }
    st->verdict = rows.nrows > 0 ? BVN_TAKEN : BVN_OPEN;
    st->owner = rows.nrows > 0 && rows.rows[0][0] ? rows.rows[0][0] : "";
    return BANK_DB_OK;
}

static bank_db_rc load_state(bank_db_t *db, bvn_state_t *st)
{
    bank_db_rc rc = BANK_DB_OK;
    int pass;

    /* Two statements, no snapshot across them (PostgreSQL reads each at its own instant):
     * if the BVN's owner turns out to be this customer, a concurrent request of theirs
     * committed in between; read the state again rather than call the BVN taken. */
    for (pass = 0; pass < 2; pass++) {
        if ((rc = load_state_once(db, st)) != BANK_DB_OK || st->verdict != BVN_TAKEN ||
            strcmp(st->owner, st->customer_id) != 0) {
            return rc;
        }
    }
    return rc;
}

/* Fails the open transaction with a reason of ours (not a driver's). */
static bank_db_rc fail(bank_db_t *db, const char *why)
{
    db->error = why;
    db->txn_failed = 1;
    return BANK_DB_ERROR;
}

/* The writes of a first verification, inside the transaction. *step names the one that
 * failed. */
static bank_db_rc write_account(request_rec *r, bank_db_t *db, const bvn_state_t *st,
                                const char *account_name, const char **step)
{
    bank_dir_conf *conf = bank_conf(r);
    const char *now = bank_time_iso(r->pool, apr_time_now());
    const char *referral = bank_referral_code(r->pool), *id = bank_uuid4(r->pool);
    const char *bank_id = bank_uuid4(r->pool), *serial, *number;
    bank_rows_t rows;
    bank_db_rc rc;
    int n = 0;

    *step = "random";
    if (!referral || !id || !bank_id) {
        return fail(db, "no randomness for the referral code or ids");
    }
    *step = step_referral;
    {
        const char *args[] = {st->bvn, referral, now, st->customer_id};
        if ((rc = bank_db_exec(db, "bank_customer_set_bvn", &n, BANK_NARGS(args), args)) !=
            BANK_DB_OK) {
            return rc;
        }
        if (n != 1) {
            return fail(db, "the customer changed meanwhile");
        }
    }
    *step = "serial";
    {
        const char *args[] = {now};
        if ((rc = bank_db_select(db, "bank_account_serial_next", &rows, BANK_NARGS(args), args)) !=
            BANK_DB_OK) {
            return rc;
        }
    }
    serial = bank_rows_get(&rows, 0, 0);
    number = bank_nuban_account(r->pool, bank_conf_account_bank_code(conf),
                                serial ? apr_atoi64(serial) : 0);
    if (!number) {
        return fail(db, "no account number: the serial is outside 1..999999999");
    }
    *step = "account";
    {
        const char *args[] = {
            id, st->customer_id, bank_conf_account_bank(conf), bank_id, account_name, number, now,
            now};
        return bank_db_exec(db, "bank_account_insert", NULL, BANK_NARGS(args), args);
    }
}

/* One attempt: BEGIN, decide again on what the transaction sees (a concurrent request may
 * have won since), write, COMMIT. BANK_DB_OK with st->verdict as found (BVN_OPEN: opened
 * now); otherwise rolled back, with *step saying where it failed. */
static bank_db_rc open_once(request_rec *r, bank_db_t *db, bvn_state_t *st,
                            const char *account_name, const char **step)
{
    bank_db_rc rc;

    *step = "begin";
    if ((rc = bank_db_begin(db)) != BANK_DB_OK) {
        if (db->txn) { /* the sqlite3 driver keeps a transaction whose BEGIN failed */
            const char *err = db->error;
            bank_db_end(db, 0);
            db->error = err;
        }
        return rc;
    }
    *step = "state";
    rc = load_state(db, st);
    if (rc == BANK_DB_OK && st->verdict == BVN_OPEN) {
        rc = write_account(r, db, st, account_name, step);
    }
    if (rc != BANK_DB_OK || st->verdict != BVN_OPEN) {
        const char *err = db->error;
        bank_db_end(db, 0);
        db->error = err; /* the cause, not the rollback's echo of it */
        return rc;
    }
    *step = "commit";
    return bank_db_end(db, 1);
}

/* Opens the account, or finds that another request did. OK with the settled state in *st
 * and *opened set when this request opened it; otherwise the error answer was written. */
static int open_account(request_rec *r, bank_db_t *db, bvn_state_t *st, const char *account_name,
                        int *opened)
{
    const char *step = NULL;
    bank_db_rc rc;
    int attempt;

    ap_log_rerror(APLOG_MARK, APLOG_TRACE1, 0, r,
                  BANKLOGNO(0606) "customer %s: not verified yet, opening the account",
                  st->customer_id);
    for (attempt = 1;; attempt++) {
        const char *err;
        rc = open_once(r, db, st, account_name, &step);
        if (rc == BANK_DB_OK && st->verdict != BVN_OPEN) {
            return OK; /* settled inside the transaction: someone else was first */
        }
        if (rc == BANK_DB_OK) {
            break;
        }
        /* Rolled back. A unique key may have lost a race that the state now shows. */
        err = db->error;
        if (load_state(db, st) == BANK_DB_OK && st->verdict != BVN_OPEN) {
            return OK;
        }
        db->error = err;
        if (step != step_referral || attempt == BVN_ATTEMPTS) {
            return bank_error_db(r, db, rc,
                                 apr_pstrcat(r->pool, "opening the account of ", st->customer_id,
                                             " (", step, ")", (char *)NULL));
        }
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      BANKLOGNO(0603) "customer %s: attempt %d failed (%s), trying again",
                      st->customer_id, attempt, err ? err : "database error");
    }
    *opened = 1;
    if ((rc = load_state(db, st)) != BANK_DB_OK) {
        return bank_error_db(r, db, rc, "reading the new account");
    }
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  BANKLOGNO(0604) "customer %s verified; account %s opened", st->customer_id,
                  st->account ? st->account[A_ID] : "(not found)");
    return OK;
}

/* ---- the request ---- */

/* 422 with one entry per failed field, or OK with both values. */
static int validate(request_rec *r, json_object *body, const char **bvn, const char **dob)
{
    apr_array_header_t *errs = bank_errors_new(r->pool);

    *bvn = bank_v_string(errs, body, "bvn_number", 1, BVN_FIELD_MAX);
    if (*bvn && !bank_bvn_valid(*bvn)) {
        bank_errors_add(errs, "bvn_number", "regex",
                        "The bvn_number field must be exactly 11 digits");
    }
    *dob = bank_v_string(errs, body, "date_of_birth", 1, BVN_FIELD_MAX);
    if (*dob) {
        switch (bank_date_check(*dob, apr_time_now())) {
        case BANK_DATE_OK:
            break;
        case BANK_DATE_FORMAT:
            bank_errors_add(errs, "date_of_birth", "date",
                            "The date_of_birth field must be a date in the format YYYY-MM-DD");
            break;
        case BANK_DATE_UNREAL:
            bank_errors_add(errs, "date_of_birth", "date",
                            "The date_of_birth field must be a real calendar date");
            break;
        default:
            bank_errors_add(errs, "date_of_birth", "beforeOrEqual",
                            "The date_of_birth field must not be in the future");
            break;
        }
    }
    return errs->nelts ? bank_error_validation(r, errs) : OK;
}

/* The identity record must know the BVN, with this date of birth and the customer's names.
 * OK, or the answer written: a mismatch counts one failure of the customer (BankBvnThrottle)
 * and is the one 422 of BVN_MISMATCH, or the 429 past the limit. *account_name is the
 * record's names for the account. */
static int check_record(request_rec *r, bank_db_t *db, const bvn_state_t *st, const char *dob,
                        bank_throttle_t *throttle, const char **account_name)
{
    apr_array_header_t *errs;
    const char *args[] = {st->bvn}, *why = NULL;
    bank_rows_t rows;
    bank_db_rc rc;
    int left = 0;

    if ((rc = bank_db_select(db, "bank_bvn_record_find", &rows, 1, args)) != BANK_DB_OK) {
        return bank_error_db(r, db, rc, "BVN record lookup");
    }
    if (rows.nrows != 1) {
        why = "no record of this BVN";
    } else if (!rows.rows[0][2] || strcmp(rows.rows[0][2], dob) != 0) {
        why = "the date of birth differs from the record";
    } else if (!bank_names_match(r->pool, rows.rows[0][0], rows.rows[0][1],
                                 st->customer[BANK_CUST_FIRST], st->customer[BANK_CUST_LAST])) {
        why = "the names differ from the record";
    }
    if (!why) {
        *account_name = bank_account_name(r->pool, rows.rows[0][0], rows.rows[0][1]);
        return OK;
    }
    /* the reason is for the operator only; the answer is the same for all three */
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  BANKLOGNO(0605) "customer %s: BVN not verified (%s)", st->customer_id, why);
    if ((rc = bank_throttle_fail(throttle, &left)) != OK) {
        return rc;
    }
    errs = bank_errors_new(r->pool);
    bank_errors_add(errs, "bvn_number", "bvn_mismatch", BVN_MISMATCH);
    bank_rate_headers(r, throttle->attempts, left);
    bank_metrics_outcome(r, BANK_M_BVN_MISMATCH);
    return bank_error_validation(r, errs);
}

int bank_bvn_handler(request_rec *r)
{
    bank_principal_t *who;
    bank_throttle_t throttle;
    bvn_state_t st;
    json_object *body;
    const char *dob, *account_name = NULL;
    bank_db_t *db;
    bank_db_rc drc;
    int rc, opened = 0;

    /* The token before the body (CONTRACT C3): a caller without one gets 401, whatever
     * they sent, and nothing of the body is read or parsed for them. */
    if ((rc = bank_customer_request(r, AP_METHOD_BIT << M_POST, "POST", "onboarding:bvn", &db,
                                    &who)) != OK) {
        return rc;
    }
    if ((rc = bank_read_json(r, &body, NULL, NULL)) != OK) {
        return rc;
    }
    memset(&st, 0, sizeof(st));
    st.customer_id = who->customer_id;
    if ((rc = validate(r, body, &st.bvn, &dob)) != OK) {
        return rc;
    }
    if ((drc = load_state(db, &st)) != BANK_DB_OK) {
        return bank_error_db(r, db, drc, "customer lookup");
    }
    /* A customer verified with another BVN is told so before the record is looked at: the
     * answer is about their own state, and tells nothing about the BVN they sent. */
    if (st.verdict == BVN_NO_CUSTOMER || st.verdict == BVN_OTHER) {
        return answer(r, &st, 0);
    }
    /* Past BankBvnThrottle every attempt is refused, right or wrong. */
    bank_throttle_init(&throttle, r, db, "bvn", st.customer_id, "BVN",
                       bank_conf_bvn_attempts(bank_conf(r)), bank_conf_bvn_window(bank_conf(r)));
    if ((rc = bank_throttle_check(&throttle)) != OK ||
        (rc = check_record(r, db, &st, dob, &throttle, &account_name)) != OK) {
        return rc;
    }
    /* The record matched. A success clears the count; a 409 leaves it. Either way, if the
     * limit was reached meanwhile (wrong attempts at the same moment), 429: a right answer
     * hidden in a flood of wrong ones is not revealed. */
    rc = st.verdict == BVN_TAKEN ? bank_throttle_check(&throttle) : bank_throttle_clear(&throttle);
    if (rc != OK) {
        return rc;
    }
    if (st.verdict == BVN_OPEN && (rc = open_account(r, db, &st, account_name, &opened)) != OK) {
        return rc;
    }
    return answer(r, &st, opened);
}
