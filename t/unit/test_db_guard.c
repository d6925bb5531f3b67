/* The statement guard: a socket past its deadline is shut down (a blocked read returns at
 * once), one that left in time is untouched, a full table watches nothing, and the thread
 * stops with its pool. */
#include <sys/socket.h>
#include <unistd.h>
#include "unit.h"
#include "bank_db_guard.h"

static void run_tests(apr_pool_t *p)
{
    apr_pool_t *gp;
    bank_db_guard_t *g;
    int sv[2], sv2[2], t, t2;
    char c;
    ssize_t n;
    apr_time_t t0, took;

    apr_pool_create(&gp, p);
    g = bank_db_guard_start(gp, 2, apr_time_from_msec(20));
    CHECK(g != NULL);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2) == 0);

    /* A read nobody answers, watched for 200 ms: the guard ends it. */
    t0 = apr_time_now();
    t = bank_db_guard_enter(g, sv[0], t0 + apr_time_from_msec(200));
    CHECK(t >= 0);
    n = read(sv[0], &c, 1);
    took = apr_time_now() - t0;
    CHECK(n == 0); /* end of file: the socket was shut down */
    CHECK(took >= apr_time_from_msec(200));
    CHECK(took < apr_time_from_msec(1500));
    CHECK(bank_db_guard_leave(g, t) == 1);
    CHECK(bank_db_guard_cut(g) == 1);

    /* Left before its deadline: untouched, still usable. */
    t2 = bank_db_guard_enter(g, sv2[0], apr_time_now() + apr_time_from_msec(100));
    CHECK(t2 >= 0);
    CHECK(write(sv2[1], "x", 1) == 1);
    CHECK(read(sv2[0], &c, 1) == 1 && c == 'x');
    CHECK(bank_db_guard_leave(g, t2) == 0);
    apr_sleep(apr_time_from_msec(200));
    CHECK(write(sv2[1], "y", 1) == 1);
    CHECK(read(sv2[0], &c, 1) == 1 && c == 'y');
    CHECK(bank_db_guard_cut(g) == 1);

    /* Two slots: a third statement at once is not watched (and nothing breaks). */
    t = bank_db_guard_enter(g, sv2[0], apr_time_now() + apr_time_from_sec(60));
    t2 = bank_db_guard_enter(g, sv2[1], apr_time_now() + apr_time_from_sec(60));
    CHECK(t >= 0 && t2 >= 0 && t != t2);
    CHECK(bank_db_guard_enter(g, sv[1], apr_time_now()) == -1);
    CHECK(bank_db_guard_leave(g, -1) == 0);
    CHECK(bank_db_guard_leave(g, t) == 0 && bank_db_guard_leave(g, t2) == 0);
    /* A slot given back is taken again. */
    t = bank_db_guard_enter(g, sv2[0], apr_time_now() + apr_time_from_sec(60));
    CHECK(t >= 0);
    CHECK(bank_db_guard_leave(g, t) == 0);

    /* No guard: nothing watched, nothing cut. */
    CHECK(bank_db_guard_enter(NULL, sv2[0], 0) == -1);
    CHECK(bank_db_guard_leave(NULL, 0) == 0);

    /* Stops with its pool (the thread joined: the sanitizers and valgrind see no leak). */
    apr_pool_destroy(gp);
    close(sv[0]);
    close(sv[1]);
    close(sv2[0]);
    close(sv2[1]);
}
