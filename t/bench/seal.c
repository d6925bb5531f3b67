/* The CPU cost of identity encryption on the BVN paths (docs/benchmarks.md): for SECONDS
 * each, one process, what each path computes with the keys (bank_crypt.h), nothing else:
 *   first   a first verification from the records table: the BVN's keyed hash and the
 *           customer's BVN sealed;
 *   provider a first verification through a provider: that, and the record's four values
 *           (first name, last name, date of birth, phone) sealed;
 *   repeat  the read path (a verified customer sends their BVN again): the keyed hash and
 *           four values opened (the customer's BVN, the record's names and date of birth).
 * Prints microseconds per path. Usage: seal [SECONDS]. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <apr_general.h>
#include <apr_file_io.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "bank_crypt.h"

#define ROW "0190e7a4-7c2b-7d3e-9f10-2a3b4c5d6e7f"

static const char *keys_file(apr_pool_t *p)
{
    const char *dir = apr_psprintf(p, "/tmp/mod_bank-seal-bench.%d", (int)getpid());
    const char *k1 = apr_pstrcat(p, dir, "/k1.key", (char *)NULL);
    const char *hk = apr_pstrcat(p, dir, "/hash.key", (char *)NULL);
    const char *conf = apr_pstrcat(p, dir, "/keys.conf", (char *)NULL);
    apr_file_t *f;

    apr_dir_make(dir, APR_FPROT_UREAD | APR_FPROT_UWRITE | APR_FPROT_UEXECUTE, p);
    apr_file_open(&f, k1, APR_FOPEN_WRITE | APR_FOPEN_CREATE | APR_FOPEN_TRUNCATE, APR_FPROT_UREAD,
                  p);
    apr_file_puts("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", f);
    apr_file_close(f);
    apr_file_open(&f, hk, APR_FOPEN_WRITE | APR_FOPEN_CREATE | APR_FOPEN_TRUNCATE, APR_FPROT_UREAD,
                  p);
    apr_file_puts("ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100\n", f);
    apr_file_close(f);
    apr_file_open(&f, conf, APR_FOPEN_WRITE | APR_FOPEN_CREATE | APR_FOPEN_TRUNCATE,
                  APR_FPROT_UREAD | APR_FPROT_UWRITE, p);
    apr_file_printf(f, "BankIdentityKey k1 %s\nBankIdentityHashKey %s\n", k1, hk);
    apr_file_close(f);
    return conf;
}

typedef enum { FIRST, PROVIDER, REPEAT } path_t;

static double run(const bank_keyring_t *kr, path_t path, apr_interval_time_t length)
{
    static const char *cols[] = {"bvn_records.first_name", "bvn_records.last_name",
                                 "bvn_records.date_of_birth", "bvn_records.phone"};
    static const char *vals[] = {"CHIDINMA", "OKAFOR-ADEYEMI", "1990-05-14", "+2348012345678"};
    const char *sealed[4], *plain = NULL;
    apr_pool_t *keep, *p;
    apr_time_t start, end;
    long n = 0;
    int i;

    apr_pool_create(&keep, NULL);
    apr_pool_create(&p, NULL);
    sealed[0] = bank_seal(keep, kr, "customers.bvn", ROW, "22212345678");
    for (i = 1; i < 4; i++) {
        sealed[i] = bank_seal(keep, kr, cols[i - 1], ROW, vals[i - 1]);
    }
    start = apr_time_now();
    end = start + length;
    while (apr_time_now() < end) {
        apr_pool_clear(p);
        if (!bank_blind_hash(p, kr, "bvn", "22212345678")) {
            return -1;
        }
        if (path == REPEAT) {
            for (i = 0; i < 4; i++) {
                if (bank_open(p, kr, i ? cols[i - 1] : "customers.bvn", ROW, sealed[i], &plain,
                              NULL) != BANK_OPEN_OK) {
                    return -1;
                }
            }
        } else if (!bank_seal(p, kr, "customers.bvn", ROW, "22212345678")) {
            return -1;
        }
        for (i = 0; path == PROVIDER && i < 4; i++) {
            if (!bank_seal(p, kr, cols[i], ROW, vals[i])) {
                return -1;
            }
        }
        n++;
    }
    apr_pool_destroy(p);
    apr_pool_destroy(keep);
    return n ? (double)(apr_time_now() - start) / (double)n : -1;
}

int main(int argc, char **argv)
{
    apr_pool_t *p;
    bank_keyring_t *kr = NULL;
    const char *err;
    apr_interval_time_t length = apr_time_from_sec(argc > 1 ? atoi(argv[1]) : 3);

    apr_initialize();
    apr_pool_create(&p, NULL);
    if ((err = bank_keyring_read_conf(p, keys_file(p), &kr)) != NULL) {
        fprintf(stderr, "seal: %s\n", err);
        return 1;
    }
    printf("first verification (records table): %.2f us\n", run(kr, FIRST, length));
    printf("first verification (provider): %.2f us\n", run(kr, PROVIDER, length));
    printf("repeat (read path): %.2f us\n", run(kr, REPEAT, length));
    apr_pool_destroy(p);
    apr_terminate();
    return 0;
}
