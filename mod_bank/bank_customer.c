/* The customer record every answer shows (sign-in, BVN), from either driver's row, and the
 * one way a customer token is issued (sign-in, bankctl token issue). */
#include <apr_strings.h>
#include <apr_time.h>
#include "bank_customer.h"
#include "bank_json.h"
#include "bank_db.h"
#include "bank_token.h"
#include "bank_time.h"

json_object *bank_customer_json(apr_pool_t *p, const char *const *row)
{
    json_object *o = json_object_new_object();
    const char *first = row[BANK_CUST_FIRST] ? row[BANK_CUST_FIRST] : "";
    const char *last = row[BANK_CUST_LAST] ? row[BANK_CUST_LAST] : "";

    json_object_object_add(o, "customerId", bank_json_str(row[BANK_CUST_ID]));
    json_object_object_add(o, "firstName", bank_json_str(row[BANK_CUST_FIRST]));
    json_object_object_add(o, "lastName", bank_json_str(row[BANK_CUST_LAST]));
    json_object_object_add(o, "email", bank_json_str(row[BANK_CUST_EMAIL]));
    json_object_object_add(o, "emailVerified",
                           json_object_new_boolean(bank_db_bool(row[BANK_CUST_EMAIL_VERIFIED])));
    json_object_object_add(o, "phone", bank_json_str(row[BANK_CUST_PHONE]));
    json_object_object_add(o, "createdAt", bank_json_time(p, row[BANK_CUST_CREATED]));
    json_object_object_add(o, "updatedAt", bank_json_time(p, row[BANK_CUST_UPDATED]));
    json_object_object_add(o, "fullName",
                           json_object_new_string(apr_pstrcat(p, first, " ", last, (char *)NULL)));
    json_object_object_add(o, "address", NULL);
    return o;
}

/* A failure that is not the driver's: said in db->error, and inside a transaction marked as
 * bank_db_* marks a failed statement, so the transaction can only roll back. */
static bank_db_rc issue_failed(bank_db_t *db, const char *why)
{
    db->error = why;
    if (db->in_txn) {
        db->txn_failed = 1;
    }
    return BANK_DB_ERROR;
}

bank_db_rc bank_token_issue(bank_db_t *db, apr_pool_t *p, const char *customer_id,
                            apr_int64_t ttl_seconds, const char *abilities_json, const char **plain,
                            const char **expires_iso)
{
    apr_time_t now = apr_time_now();
    const char *secret = NULL, *hash = NULL, *now_s = bank_time_iso(p, now), *id;
    const char *expires = bank_time_iso(p, now + apr_time_from_sec(ttl_seconds));
    bank_rows_t rows;
    bank_db_rc rc;

    if (bank_token_secret_new(p, &secret, &hash) != 0) {
        return issue_failed(db, "cannot create a token secret (no randomness)");
    }
    {
        const char *args[] = {customer_id, hash, abilities_json, now_s, now_s, expires};
        if ((rc = bank_db_select(db, "bank_token_insert", &rows, BANK_NARGS(args), args)) !=
            BANK_DB_OK) {
            return rc;
        }
    }
    if (!(id = bank_rows_get(&rows, 0, 0))) {
        return issue_failed(db, "the token insert returned no id");
    }
    *plain = bank_token_encode(p, id, secret);
    *expires_iso = expires;
    return BANK_DB_OK;
}
