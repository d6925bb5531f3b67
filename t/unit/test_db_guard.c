/* The statement guard: a statement past its cancel time is cancelled through the host's
 * function on a thread of its own (which may block, as on a stopped server, without holding
 * the guard up); past its cut time its socket is shut down (a blocked read returns at once);
 * one that left in time is untouched; the argument is released exactly once in every case; a
 * full table watches nothing; the thread stops with its pool. */
#include <sys/socket.h>
#include <unistd.h>
#include <apr_atomic.h>
#include "unit.h"
#include "bank_db_guard.h"

typedef struct {
    int answer_fd; /* the cancel writes here: the "server" answers the cancelled statement */
    int block_fd;  /* or, if >= 0, first waits for a byte here: a server that does not answer */
    volatile apr_uint32_t cancels, releases;
} fake_t;

static void fake_cancel(void *arg)
{
    fake_t *f = arg;
    char c;

    apr_atomic_inc32(&f->cancels);
    if (f->block_fd >= 0 && read(f->block_fd, &c, 1) != 1) {
        return;
    }
    if (f->answer_fd >= 0 && write(f->answer_fd, "c", 1) != 1) {
        return;
    }
}

static void fake_release(void *arg)
{
    apr_atomic_inc32(&((fake_t *)arg)->releases);
}

/* Waits (2 s at most) until the fake was released n times in all. */
static int released(fake_t *f, apr_uint32_t n)
{
    int i;

    for (i = 0; i < 200 && apr_atomic_read32(&f->releases) < n; i++) {
        apr_sleep(apr_time_from_msec(10));
    }
    return apr_atomic_read32(&f->releases) == n;
}

static void run_tests(apr_pool_t *p)
{
    apr_pool_t *gp;
    bank_db_guard_t *g;
    int sv[2], sv2[2], block[2], t, t2;
    fake_t answers = {-1, -1, 0, 0}, stopped = {-1, -1, 0, 0}, idle = {-1, -1, 0, 0};
    unsigned long cancelled, cut;
    char c;
    ssize_t n;
    apr_time_t t0, took;

    apr_atomic_init(p);
    apr_pool_create(&gp, p);
    g = bank_db_guard_start(gp, 2, apr_time_from_msec(20), fake_cancel, fake_release);
    CHECK(g != NULL);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2) == 0);
    CHECK(pipe(block) == 0);

    /* A statement the server answers once cancelled (a commit waiting for a standby). */
    answers.answer_fd = sv[1];
    t0 = apr_time_now();
    t = bank_db_guard_enter(g, sv[0], t0 + apr_time_from_msec(150), t0 + apr_time_from_sec(10),
                            &answers);
    CHECK(t >= 0);
    n = read(sv[0], &c, 1);
    took = apr_time_now() - t0;
    CHECK(n == 1 && c == 'c');
    CHECK(took >= apr_time_from_msec(150) && took < apr_time_from_sec(2));
    CHECK(bank_db_guard_leave(g, t) == BANK_GUARD_CANCELLED);
    CHECK(released(&answers, 1));
    CHECK(apr_atomic_read32(&answers.cancels) == 1);

    /* A server that answers nothing, not even the cancel: the socket is cut at cut_at while
     * the cancel is still blocked. */
    stopped.block_fd = block[0];
    t0 = apr_time_now();
    t = bank_db_guard_enter(g, sv2[0], t0 + apr_time_from_msec(100), t0 + apr_time_from_msec(300),
                            &stopped);
    n = read(sv2[0], &c, 1);
    took = apr_time_now() - t0;
    CHECK(n == 0); /* end of file: shut down */
    CHECK(took >= apr_time_from_msec(300) && took < apr_time_from_sec(2));
    CHECK(bank_db_guard_leave(g, t) == BANK_GUARD_CUT);
    CHECK(apr_atomic_read32(&stopped.cancels) == 1);
    CHECK(apr_atomic_read32(&stopped.releases) == 0); /* the blocked cancel still owns it */
    CHECK(write(block[1], "x", 1) == 1);              /* the server wakes up */
    CHECK(released(&stopped, 1));
    bank_db_guard_counts(g, &cancelled, &cut);
    CHECK(cancelled == 2 && cut == 1);

    /* Left before its times: untouched, released by leave, the socket still usable. */
    close(sv2[0]);
    close(sv2[1]);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2) == 0);
    t = bank_db_guard_enter(g, sv2[0], apr_time_now() + apr_time_from_msec(100),
                            apr_time_now() + apr_time_from_msec(200), &idle);
    CHECK(t >= 0);
    CHECK(write(sv2[1], "x", 1) == 1);
    CHECK(read(sv2[0], &c, 1) == 1 && c == 'x');
    CHECK(bank_db_guard_leave(g, t) == BANK_GUARD_NONE);
    CHECK(released(&idle, 1));
    apr_sleep(apr_time_from_msec(300));
    CHECK(write(sv2[1], "y", 1) == 1);
    CHECK(read(sv2[0], &c, 1) == 1 && c == 'y');
    CHECK(apr_atomic_read32(&idle.cancels) == 0);

    /* Two slots: a third statement at once is not watched, and its argument is released. */
    t = bank_db_guard_enter(g, sv2[0], apr_time_now() + apr_time_from_sec(60),
                            apr_time_now() + apr_time_from_sec(60), NULL);
    t2 = bank_db_guard_enter(g, sv2[1], apr_time_now() + apr_time_from_sec(60),
                             apr_time_now() + apr_time_from_sec(60), NULL);
    CHECK(t >= 0 && t2 >= 0 && t != t2);
    CHECK(bank_db_guard_enter(g, sv[1], apr_time_now(), apr_time_now(), &idle) == -1);
    CHECK(released(&idle, 2));
    CHECK(bank_db_guard_leave(g, -1) == BANK_GUARD_NONE);
    CHECK(bank_db_guard_leave(g, t) == BANK_GUARD_NONE);
    CHECK(bank_db_guard_leave(g, t2) == BANK_GUARD_NONE);
    /* A slot given back is taken again. */
    t = bank_db_guard_enter(g, sv2[0], apr_time_now() + apr_time_from_sec(60),
                            apr_time_now() + apr_time_from_sec(60), NULL);
    CHECK(t >= 0 && bank_db_guard_leave(g, t) == BANK_GUARD_NONE);

    /* No guard: nothing watched, the argument released. */
    CHECK(bank_db_guard_enter(NULL, sv2[0], 0, 0, &idle) == -1);
    CHECK(released(&idle, 3));
    CHECK(bank_db_guard_leave(NULL, 0) == BANK_GUARD_NONE);

    /* Stops with its pool, releasing what it still held (the thread joined: the sanitizers
     * and valgrind see no leak). */
    t = bank_db_guard_enter(g, sv2[0], apr_time_now() + apr_time_from_sec(60),
                            apr_time_now() + apr_time_from_sec(60), &idle);
    CHECK(t >= 0);
    apr_pool_destroy(gp);
    CHECK(released(&idle, 4));
    close(sv[0]);
    close(sv[1]);
    close(sv2[0]);
    close(sv2[1]);
    close(block[0]);
    close(block[1]);
}
