/* The SQLite webhook ceiling for scripts/bench: one connection committing the webhook's own
 * INSERT (bank_store_notice_put, the statement the handler runs) once per row, for
 * SECONDS, through mod_bank's data layer with the server's DBDInitSQL. Prints the rows and
 * the rows per second. */
#include <stdio.h>
#include <stdlib.h>
#include <apr_general.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "bank_db.h"
#include "bank_store.h"
#include "bank_time.h"
#include "bank_uuid.h"

int main(int argc, char **argv)
{
    apr_pool_t *p, *iter;
    const char *err = NULL, *v;
    bank_db_t *db;
    bank_notice_t n = {
        "payments",   "fund_transfer", "received", "5000", "10.75", "NGN", "bench", "A B",
        "0000000019", "999",           "1",        "T100", "ok",    NULL,  "w",     NULL,
        NULL};
    apr_time_t start, until;
    /* a body of the size scripts/bench sends, stored as the handler stores it */
    const char *raw =
        "{\"service\":\"payments\",\"type\":\"fund_transfer\",\"data\":{\"amount\":5000,"
        "\"charges\":10.75,\"currency\":\"NGN\",\"narration\":\"bench\","
        "\"receiverAccountName\":\"A B\",\"receiverAccountNumber\":\"0000000019\","
        "\"receiverBankCode\":\"999\",\"sessionId\":\"1\",\"statusCode\":\"T100\","
        "\"statusMessage\":\"ok\",\"transactionReference\":\"TRF-1-1\",\"walletId\":\"w\"}}";
    long rows = 0;
    int secs;

    if (argc != 3 || (secs = atoi(argv[2])) < 1) {
        fprintf(stderr, "usage: insert SQLITE-PATH SECONDS\n");
        return 2;
    }
    apr_app_initialize(&argc, (const char *const **)&argv, NULL);
    apr_pool_create(&p, NULL);
    if (!(db = bank_db_open(p, "sqlite3", argv[1], &err)) ||
        bank_db_query_value(db, "PRAGMA busy_timeout = 2000", &v) != 0 ||
        (err = bank_db_prepare_all(db)) != NULL) {
        fprintf(stderr, "insert: %s\n", err ? err : bank_db_error(db));
        return 1;
    }
    apr_pool_create(&iter, p);
    start = apr_time_now();
    until = start + apr_time_from_sec(secs);
    while (apr_time_now() < until) {
        bank_notice_put_t put = {
            &n, bank_uuid4(iter), "partner", raw, bank_time_iso(iter, apr_time_now()), 0, 0};

        n.transaction_reference = apr_psprintf(iter, "INS-%" APR_TIME_T_FMT "-%ld", start, rows);
        if (bank_store_notice_put(db, &put) != BANK_DB_OK || !put.added) {
            fprintf(stderr, "insert: %s\n", bank_db_error(db));
            return 1;
        }
        apr_pool_clear(iter);
        rows++;
    }
    printf("%ld %.1f\n", rows, rows / ((double)(apr_time_now() - start) / APR_USEC_PER_SEC));
    return 0;
}
