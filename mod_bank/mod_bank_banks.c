/* GET/HEAD /misc/payment_banks (docs/api.md): active banks by name, a strong ETag, 304, and
 * an in-process cache shared by the threads of a child, expiring per BankBanksMaxAge. */
#include <stdlib.h>
#include <string.h>
#include <apr_strings.h>
#include <http_protocol.h>
#include <http_request.h>
#include "mod_bank.h"
#include "mod_bank_banks.h"
#include "mod_bank_server_map.h"
#include "mod_bank_config.h"
#include "mod_bank_http.h"
#include "mod_bank_auth.h"
#include "mod_bank_db.h"
#include "bank_json.h"
#include "bank_limits.h"
#include "bank_store.h"
#include "bank_digest.h"

APLOG_USE_MODULE(bank);

/* One rendered answer per server (each virtual host may have its own database) in each
 * child process. Readers copy it under the lock, so a refresh can free the old one at once. */
typedef struct {
    apr_pool_t *pool; /* holds text and etag; replaced on refresh */
    const char *text;
    const char *etag;
    apr_time_t fetched;
} cache_entry;

static bank_server_map_t *cache; /* server_rec * -> cache_entry; NULL: nothing kept */

void bank_banks_child_init(apr_pool_t *p, server_rec *s)
{
    if ((cache = bank_server_map_make(p, sizeof(cache_entry))) == NULL) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     BANKLOGNO(0401) "bank list cache disabled: no mutex");
    }
}

typedef struct {
    const char *name;
    json_object *o;
} bank_entry;

static int by_name(const void *a, const void *b)
{
    const bank_entry *x = a, *y = b;
    int c = strcasecmp(x->name, y->name);
    return c ? c : strcmp(x->name, y->name);
}

/* Reads the active banks and renders the whole answer. */
static int render(request_rec *r, bank_db_t *db, const char **text, const char **etag)
{
    apr_array_header_t *banks;
    bank_db_rc rc = bank_store_banks_active(db, &banks);
    json_object *doc, *body, *list;
    bank_entry *entries;
    int i;

    if (rc != BANK_DB_OK) {
        return bank_error_db(r, db, rc, "bank list");
    }
    entries = apr_pcalloc(r->pool, sizeof(*entries) * (banks->nelts + 1));
    for (i = 0; i < banks->nelts; i++) {
        const bank_bank_t *b = &APR_ARRAY_IDX(banks, i, bank_bank_t);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_int64(b->id));
        json_object_object_add(o, "name", bank_json_str(b->name));
        json_object_object_add(o, "slug", bank_json_str(b->slug));
        json_object_object_add(o, "code", bank_json_str(b->code));
        json_object_object_add(o, "active", json_object_new_int((int)b->active));
        entries[i].name = b->name ? b->name : "";
        entries[i].o = o;
    }
    qsort(entries, banks->nelts, sizeof(*entries), by_name);
    doc = bank_json_own(r->pool, json_object_new_object());
    body = json_object_new_object();
    list = json_object_new_array();
    for (i = 0; i < banks->nelts; i++) {
        json_object_array_add(list, entries[i].o);
    }
    json_object_object_add(body, "banks", list);
    json_object_object_add(doc, "body", body);
    *text = bank_json_text(r->pool, doc);
    *etag = apr_pstrcat(r->pool, "\"",
                        apr_pstrndup(r->pool, bank_sha256_hex(r->pool, *text, strlen(*text)), 32),
                        "\"", (char *)NULL);
    return OK;
}

/* Copies the cached answer if still fresh. */
static int cache_get(request_rec *r, apr_time_t max_age, const char **text, const char **etag)
{
    int hit = 0;
    const cache_entry *e = bank_server_map_lock(cache, r->server);

    if (!e) {
        return 0;
    }
    if (e->text && apr_time_now() - e->fetched < max_age) {
        *text = apr_pstrdup(r->pool, e->text);
        *etag = apr_pstrdup(r->pool, e->etag);
        hit = 1;
    }
    bank_server_map_unlock(cache);
    return hit;
}

static void cache_put(request_rec *r, const char *text, const char *etag)
{
    cache_entry *e = bank_server_map_lock(cache, r->server);
    apr_pool_t *p;

    if (!e) {
        return;
    }
    if (apr_pool_create(&p, bank_server_map_pool(cache)) == APR_SUCCESS) {
        if (e->pool) {
            apr_pool_destroy(e->pool);
        }
        e->pool = p;
        e->text = apr_pstrdup(p, text);
        e->etag = apr_pstrdup(p, etag);
        e->fetched = apr_time_now();
    }
    bank_server_map_unlock(cache);
}

int bank_banks_handler(request_rec *r)
{
    bank_dir_conf *conf = bank_conf(r);
    apr_int64_t max_age = bank_conf_banks_max_age(conf);
    bank_principal_t *who;
    const char *text = NULL, *etag = NULL;
    bank_db_t *db;
    int rc;

    if ((rc = bank_customer_request(r, AP_METHOD_BIT << M_GET, "GET, HEAD", BANK_ABILITY_BANKS, &db,
                                    &who)) != OK) {
        return rc;
    }
    if (!cache_get(r, apr_time_from_sec(max_age), &text, &etag)) {
        if (!db && !(db = bank_db(r))) {
            return bank_error_db(r, NULL, BANK_DB_ERROR, "bank list");
        }
        if ((rc = render(r, db, &text, &etag)) != OK) {
            return rc;
        }
        if (max_age > 0) {
            cache_put(r, text, etag);
        }
    }
    apr_table_setn(r->headers_out, "ETag", etag);
    apr_table_setn(r->headers_out, "Cache-Control",
                   apr_psprintf(r->pool, "private, max-age=%" APR_INT64_T_FMT, max_age));
    apr_table_mergen(r->headers_out, "Vary", "Authorization");
    rc = ap_meets_conditions(r);
    if (rc == HTTP_NOT_MODIFIED) {
        r->status = HTTP_NOT_MODIFIED;
        return OK;
    }
    if (rc == HTTP_PRECONDITION_FAILED) {
        /* If-Match (or If-Unmodified-Since) does not hold: in the error shape of docs/api.md */
        return bank_error(r, BANK_E_PRECONDITION_FAILED, NULL, NULL);
    }
    if (rc != OK) {
        return rc;
    }
    return bank_send_text(r, HTTP_OK, text, strlen(text));
}
