/* The sign-in ceiling for scripts/bench: mod_bank's own password verification
 * (bank_password_verify, scrypt n=16384 as sign-in runs it) in PROCS processes for SECONDS,
 * nothing else. Prints the verifications per second of all processes together. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <apr_general.h>
#include <apr_time.h>
#include "bank_password.h"

static long run(const char *stored, apr_time_t until)
{
    apr_pool_t *p;
    long n = 0;

    apr_pool_create(&p, NULL);
    while (apr_time_now() < until) {
        if (bank_password_verify(p, "bench-password", stored) != BANK_PW_MATCH) {
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
    int fds[2], procs, i, secs;
    long total = 0, n;

    if (argc != 3 || (secs = atoi(argv[1])) < 1 || (procs = atoi(argv[2])) < 1) {
        fprintf(stderr, "usage: kdf SECONDS PROCS\n");
        return 2;
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
            n = run(stored, until);
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
