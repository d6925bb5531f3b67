/* The customer record every answer shows (sign-in, BVN), from either driver's row. */
#include <apr_strings.h>
#include "bank_customer.h"
#include "bank_json.h"
#include "bank_sql.h"

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
