/* The sign-in ceiling for scripts/bench: mod_bank's own password verification
 * (bank_password_verify, scrypt n=16384 as sign-in runs it) in PROCS processes for SECONDS,
 * nothing else, one verification per call. Prints the verifications per second of all
 * processes together. With a third argument, the same parameters computed another way:
 *  - `two`: bank_password_verify_two, two verifications per call, as the verification threads
 *    compute two sign-ins that wait together (mod_bank_verify.c);
 *  - `openssl`: OpenSSL's EVP_PBE_scrypt (what a server using OpenSSL's scrypt, e.g. Node's
 *    crypto.scrypt, computes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <apr_general.h>
#include <apr_time.h>
#include <openssl/evp.h>
#include "bank_password.h"
#include "bank_scrypt.h"

enum { ONE, TWO, OPENSSL };

static long run(const char *stored, apr_time_t until, int how)
{
    apr_pool_t *p;
    unsigned char key[64];
    const char *const plain[2] = {"bench-password", "bench-password"}, *const two[2] = {stored,
                                                                                        stored};
    int rc[2];
    long n = 0;

    apr_pool_create(&p, NULL);
    if (how != OPENSSL) {
        bank_scrypt_keep(1); /* as a process with one verification thread does */
    }
    while (apr_time_now() < until) {
        if (how == TWO) {
            bank_password_verify_two(p, plain, two, rc);
            if (rc[0] != BANK_PW_MATCH || rc[1] != BANK_PW_MATCH) {
                return -1;
            }
            n++; /* and one more below */
        } else if (how == OPENSSL) {
            if (EVP_PBE_scrypt("bench-password", 14, (const unsigned char *)"0123456789abcdef", 16,
                               16384, 8, 1, 64UL * 1024 * 1024, key, sizeof(key)) != 1) {
                return -1;
            }
        } else if (bank_password_verify(p, "bench-password", stored) != BANK_PW_MATCH) {
            return -1;
        }
        apr_pool_clear(p);
        n++;
    }
    return n;
}

int main(int argc, char **argv)
{
    apr_pool_t *p;
    const char *stored;
    apr_time_t start, until;
    int fds[2], procs, i, secs, how = ONE;
    long total = 0, n;

    if (argc < 3 || argc > 4 || (secs = atoi(argv[1])) < 1 || (procs = atoi(argv[2])) < 1 ||
        (argc == 4 && strcmp(argv[3], "openssl") != 0 && strcmp(argv[3], "two") != 0)) {
        fprintf(stderr, "usage: kdf SECONDS PROCS [two|openssl]\n");
        return 2;
    }
    if (argc == 4) {
        how = strcmp(argv[3], "two") == 0 ? TWO : OPENSSL;
    }
    apr_app_initialize(&argc, (const char *const **)&argv, NULL);
    apr_pool_create(&p, NULL);
    if (!(stored = bank_password_hash(p, "bench-password")) || pipe(fds) != 0) {
        fprintf(stderr, "kdf: no hash\n");
        return 1;
    }
    start = apr_time_now();
    until = start + apr_time_from_sec(secs);
    for (i = 0; i < procs; i++) {
        if (fork() == 0) {
            n = run(stored, until, how);
            if (write(fds[1], &n, sizeof(n)) != (ssize_t)sizeof(n)) {
                _exit(1);
            }
            _exit(0);
        }
    }
    close(fds[1]);
    for (i = 0; i < procs; i++) {
        if (read(fds[0], &n, sizeof(n)) != (ssize_t)sizeof(n) || n < 0) {
            fprintf(stderr, "kdf: a process failed\n");
            return 1;
        }
        total += n;
    }
    while (wait(NULL) > 0) {
    }
    printf("%ld %.1f\n", total, total / ((double)(apr_time_now() - start) / APR_USEC_PER_SEC));
    return 0;
}
