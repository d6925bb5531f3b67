/* bankctl notices: the payment notices stored by the webhook, newest first, as a table or as
 * one JSON object a line with the names of docs/api.md. Partner-sent text never reaches a
 * terminal unescaped. */
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <apr_strings.h>
#include "bankctl.h"
#include "bank_json.h"
#include "bank_store.h"
#include "bank_time.h"

#define LIMIT_DEFAULT 20
#define LIMIT_MAX 10000

/* The text fields, with their names in docs/api.md. */
#define F(name, field) BANK_JSON_FIELD(name, TEXT, bank_notice_t, field)
static const bank_json_field_t text_fields[] = {F("currency", currency),
                                                F("narration", narration),
                                                F("receiverAccountName", receiver_account_name),
                                                F("receiverAccountNumber", receiver_account_number),
                                                F("receiverBankCode", receiver_bank_code),
                                                F("sessionId", session_id),
                                                F("statusCode", status_code),
                                                F("statusMessage", status_message),
                                                F("transactionReference", transaction_reference),
                                                F("walletId", wallet_id)};
#undef F

/* Stored JSON text back to JSON (a number, or clientRef/customerReference), else null. The
 * value belongs to c->pool: the caller takes a reference to add it to an object. */
static json_object *json_back(ctl_t *c, const char *text)
{
    const char *why;
    return text ? bank_json_parse(c->pool, text, strlen(text), &why) : NULL;
}

static void notice_json(ctl_t *c, const bank_notice_row_t *row)
{
    const bank_notice_t *n = &row->n;
    json_object *o = bank_json_own(c->pool, json_object_new_object()), *charges;
    const char *amount = n->amount;

    json_object_object_add(o, "amount",
                           amount && amount[strspn(amount, "-0123456789")] == '\0' && *amount
                               ? json_object_new_int64(apr_atoi64(amount))
                               : NULL);
    /* json-c keeps a parsed number's text: charges come out as they were sent. */
    charges = json_back(c, n->charges);
    if (!json_object_is_type(charges, json_type_double) &&
        !json_object_is_type(charges, json_type_int)) {
        charges = NULL;
    }
    json_object_object_add(o, "charges", json_object_get(charges));
    bank_json_add_fields(c->pool, o, n, text_fields, BANK_JSON_NFIELDS(text_fields));
    json_object_object_add(o, "clientRef", json_object_get(json_back(c, n->client_ref)));
    json_object_object_add(o, "customerReference",
                           json_object_get(json_back(c, n->customer_reference)));
    json_object_object_add(o, "partner", bank_json_str(row->partner));
    json_object_object_add(o, "status", bank_json_str(n->status));
    json_object_object_add(o, "receivedAt", bank_json_time(c->pool, row->received_at));
    json_object_object_add(o, "customerId", bank_json_str(row->customer_id));
    printf("%s\n", bank_json_text(c->pool, o));
}

/* Partner-sent text on a terminal: control characters become '?'. */
static const char *show(ctl_t *c, const char *s)
{
    char *out, *p;

    if (!s) {
        return "-";
    }
    out = apr_pstrdup(c->pool, s);
    for (p = out; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            *p = '?';
        }
    }
    return out;
}

int cmd_notices(ctl_t *c, apr_table_t *o)
{
    const char *lim = apr_table_get(o, "limit");
    long limit = lim ? ctl_parse_range("notices", "limit", lim, 1, LIMIT_MAX) : LIMIT_DEFAULT;
    int json = apr_table_get(o, "json") != NULL, i;
    apr_array_header_t *rows;

    ctl_open_db(c); /* notices hold no identity data */
    if (bank_store_notices_list(c->db, (int)limit, &rows) != BANK_DB_OK) {
        ctl_db_fail(c, "cannot list the notices");
    }
    if (!json && rows->nelts == 0) {
        printf("no payment notices\n");
    } else if (!json) {
        printf("%-24s  %-12s  %-8s  %-6s  %14s  %-3s  %-42s  %-20s  %s\n", "RECEIVED", "PARTNER",
               "STATUS", "CODE", "AMOUNT", "CUR", "REFERENCE", "WALLET", "CUSTOMER");
    }
    for (i = 0; i < rows->nelts; i++) {
        const bank_notice_row_t *row = &APR_ARRAY_IDX(rows, i, bank_notice_row_t);
        const bank_notice_t *n = &row->n;
        if (json) {
            notice_json(c, row);
            continue;
        }
        printf("%-24s  %-12s  %-8s  %-6s  %14s  %-3s  %-42s  %-20s  %s\n",
               show(c, bank_time_api(c->pool, row->received_at)), show(c, row->partner),
               show(c, n->status), show(c, n->status_code), show(c, n->amount),
               show(c, n->currency), show(c, n->transaction_reference), show(c, n->wallet_id),
               show(c, row->customer_id));
    }
    return 0;
}
