/* The customer record every answer shows (sign-in, BVN), from either driver's row, and the
 * one way a customer token is issued (sign-in, bankctl token issue). */
#include <apr_strings.h>
#include <apr_time.h>
#include "bank_customer.h"
#include "bank_json.h"
#include "bank_token.h"
#include "bank_time.h"

#define F(name, kind, field) BANK_JSON_FIELD(name, kind, bank_customer_t, field)
static const bank_json_field_t customer_fields[] = {F("customerId", TEXT, id),
                                                    F("firstName", TEXT, first_name),
                                                    F("lastName", TEXT, last_name),
                                                    F("email", TEXT, email),
                                                    F("emailVerified", BOOL, email_verified),
                                                    F("phone", TEXT, phone),
                                                    F("createdAt", TIME, created_at),
                                                    F("updatedAt", TIME, updated_at)};
#undef F

json_object *bank_customer_json(apr_pool_t *p, const bank_customer_t *c)
{
    json_object *o = json_object_new_object();
    const char *first = c->first_name ? c->first_name : "";
    const char *last = c->last_name ? c->last_name : "";

    bank_json_add_fields(p, o, c, customer_fields, BANK_JSON_NFIELDS(customer_fields));
    json_object_object_add(o, "fullName",
                           json_object_new_string(apr_pstrcat(p, first, " ", last, (char *)NULL)));
    json_object_object_add(o, "address", NULL);
    return o;
}

bank_db_rc bank_token_issue(bank_db_t *db, apr_pool_t *p, const char *customer_id,
                            apr_int64_t ttl_seconds, const char *abilities_json, const char **plain,
                            const char **expires_iso)
{
    apr_time_t now = apr_time_now();
    const char *secret = NULL, *hash = NULL, *now_s = bank_time_iso(p, now), *id = NULL;
    const char *expires = bank_time_iso(p, now + apr_time_from_sec(ttl_seconds));
    bank_db_rc rc;

    if (bank_token_secret_new(p, &secret, &hash) != 0) {
        return bank_db_fail(db, "cannot create a token secret (no randomness)");
    }
    if ((rc = bank_store_token_insert(db, customer_id, hash, abilities_json, now_s, expires,
                                      &id)) != BANK_DB_OK) {
        return rc;
    }
    *plain = bank_token_encode(p, id, secret);
    *expires_iso = expires;
    return BANK_DB_OK;
}
