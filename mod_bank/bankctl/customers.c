/* bankctl customer add and bvn add: a customer with a hashed password, an identity-provider
 * record. Checked with the module's own validators and limits (bvn import checks each record
 * of its file with ctl_bvn_record_problem too). */
#include <stdio.h>
#include <string.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "bankctl.h"
#include "bank_limits.h"
#include "bank_password.h"
#include "bank_store.h"
#include "bank_time.h"
#include "bank_uuid.h"
#include "bank_validate.h"

int cmd_customer_add(ctl_t *c, apr_table_t *o)
{
    const char *cmd = "customer add", *email = ctl_need(o, "email", cmd), *pw;
    const char *first = ctl_need(o, "first", cmd), *last = ctl_need(o, "last", cmd);
    const char *phone = ctl_need(o, "phone", cmd);
    bank_customer_t cust;

    if (strlen(email) > BANK_EMAIL_MAX || !bank_email_plausible(email)) {
        die(EXIT_USAGE, "%s: --email is not a plausible e-mail address (%d at most)", cmd,
            BANK_EMAIL_MAX);
    }
    ctl_check_text(cmd, "first", first, BANK_NAME_MAX);
    ctl_check_text(cmd, "last", last, BANK_NAME_MAX);
    ctl_check_phone(cmd, phone);
    pw = ctl_read_password(c, o, cmd);
    ctl_open_ready(c);
    if (ctl_customer_id(c, email, 0)) {
        die(1, "a customer with e-mail %s already exists", email);
    }
    memset(&cust, 0, sizeof(cust));
    if (!(cust.password = bank_password_hash(c->pool, pw)) || !(cust.id = bank_uuid4(c->pool))) {
        die(1, "cannot hash the password (no randomness?)");
    }
    cust.email = email;
    cust.first_name = first;
    cust.last_name = last;
    cust.phone = phone;
    cust.email_verified = apr_table_get(o, "verified") != NULL;
    cust.created_at = cust.updated_at = bank_time_iso(c->pool, apr_time_now());
    if (bank_store_customer_insert(c->db, &cust) != BANK_DB_OK) {
        /* Lost a race with another insert of the same address: say so plainly. */
        if (ctl_customer_id(c, email, 0)) {
            die(1, "a customer with e-mail %s already exists", email);
        }
        ctl_db_fail(c, "cannot add the customer");
    }
    printf("%s\n", cust.id);
    return 0;
}

const char *ctl_bvn_record_problem(apr_pool_t *p, const bank_bvn_record_t *rec, apr_time_t now,
                                   int *field)
{
    const char *why;

    *field = CTL_BVN_BVN;
    if (!bank_bvn_valid(rec->bvn)) {
        return "must be exactly 11 digits";
    }
    *field = CTL_BVN_DOB;
    switch (bank_date_check(rec->date_of_birth, now)) {
    case BANK_DATE_OK:
        break;
    case BANK_DATE_UNREAL:
        return "is not a real calendar date";
    case BANK_DATE_FUTURE:
        return "is in the future";
    default:
        return "must be a date YYYY-MM-DD";
    }
    *field = CTL_BVN_FIRST;
    if ((why = ctl_text_problem(p, rec->first_name, BANK_NAME_MAX)) != NULL) {
        return why;
    }
    *field = CTL_BVN_LAST;
    if ((why = ctl_text_problem(p, rec->last_name, BANK_NAME_MAX)) != NULL) {
        return why;
    }
    *field = CTL_BVN_PHONE;
    return rec->phone ? ctl_phone_problem(p, rec->phone) : NULL;
}

int cmd_bvn_add(ctl_t *c, apr_table_t *o)
{
    static const char *const opts[] = {"bvn", "dob", "first", "last", "phone"};
    const char *cmd = "bvn add", *why;
    apr_time_t now = apr_time_now();
    bank_bvn_record_t rec;
    int field;

    rec.bvn = ctl_need(o, "bvn", cmd);
    rec.date_of_birth = ctl_need(o, "dob", cmd);
    rec.first_name = ctl_need(o, "first", cmd);
    rec.last_name = ctl_need(o, "last", cmd);
    rec.phone = apr_table_get(o, "phone");
    if ((why = ctl_bvn_record_problem(c->pool, &rec, now, &field)) != NULL) {
        die(EXIT_USAGE, "%s: --%s %s", cmd, opts[field], why);
    }
    ctl_open_ready(c);
    if (bank_store_bvn_record_upsert(c->db, &rec, bank_time_iso(c->pool, now)) != BANK_DB_OK) {
        ctl_db_fail(c, "cannot store the BVN record");
    }
    printf("ok\n");
    return 0;
}
