/*
 * An open-loop load of several endpoints at once (scripts/bench mixed): requests are sent at a
 * fixed rate whatever the server's answers do, each timed from the moment it was due, not
 * from when a connection was free to send it, so a server that falls behind shows it in
 * the latencies instead of in a lower offered rate (no coordinated omission).
 *
 *   mixed --connect 127.0.0.1:8080 --rate R --seconds S [--conns MAX]
 *         --target NAME=WEIGHT:FILE ... [--tokens FILE] [--hmac-key K --hmac-header H]
 *         [--first S]
 *
 * Request k is due at k/R seconds after the start; its target is drawn by weight. A target
 * file holds "METHOD PATH", header lines and, after an empty line, the body; in it "@U@"
 * becomes a value unique to the request and "@T@" a line of the tokens file drawn at random.
 * The tool adds Host and Content-Length and, with --hmac-key, header H with the body's hex
 * HMAC-SHA512. Connections are kept alive and opened as needed, MAX at most (default 256);
 * a request due while all of them are busy waits for one, its wait counted in its latency.
 *
 * Output (standard output), times in milliseconds:
 *   mixed rate=R seconds=S sent=N answered=A errors=E conns=C
 *   target NAME sent=N 2xx=K non2xx=X errors=E p50=.. p99=.. p999=.. max=..
 *   first S s: answered=A p99=.. max=..
 * errors are requests with no whole answer (refused, reset, closed, or none 10 s after the
 * last was due). Exit status 0 if every request was answered 2xx, else 1; 2 on bad use.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/hmac.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_TARGETS 8
#define REQ_MAX 16384
#define IN_MAX 65536

struct target {
    const char *name;
    int weight;
    char *text;
    long sent, ok, non2xx, errors;
    double *lat;
    long nlat, cap;
};

struct conn {
    int fd, busy, connecting;
    int target;
    double due;
    char out[REQ_MAX];
    size_t outlen, outoff;
    char in[IN_MAX];
    size_t inlen;
};

struct pending {
    int target;
    double due;
};

static struct {
    struct sockaddr_in to;
    double rate, seconds, first;
    int max_conns;
    struct target t[MAX_TARGETS];
    int nt, total_weight;
    char **tokens;
    long ntokens;
    const char *hmac_key, *hmac_header;
} opt = {.max_conns = 256, .first = 1};

static int ep;
static struct conn *conns;
static int nconns;
static struct pending *queue;
static long qhead, qtail, qcap;
static long seq, errors_total, answered;
static double start;
static double *first_lat;
static long nfirst, first_cap;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char *what)
{
    fprintf(stderr, "mixed: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void usage(void)
{
    fprintf(stderr, "usage: mixed --connect HOST:PORT --rate R --seconds S [--conns MAX] "
                    "--target NAME=WEIGHT:FILE ... [--tokens FILE] [--hmac-key K "
                    "--hmac-header H] [--first S]\n");
    exit(2);
}

/* realloc, or the end of the run (a load tool has nothing to save). */
static void *grow(void *old, size_t size)
{
    void *p = realloc(old, size);
    if (!p) {
        fail("realloc");
    }
    return p;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n, cap = 65536;

    if (!f) {
        fail(path);
    }
    buf = grow(NULL, cap);
    n = 0;
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n < cap - 1) {
            break;
        }
        cap *= 2;
        buf = grow(buf, cap);
    }
    fclose(f);
    buf[n] = '\0';
    if (len) {
        *len = n;
    }
    return buf;
}

static void load_tokens(const char *path)
{
    char *all = slurp(path, NULL), *line, *save = NULL;
    long cap = 1024;

    opt.tokens = grow(NULL, cap * sizeof(char *));
    for (line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (opt.ntokens == cap) {
            cap *= 2;
            opt.tokens = grow(opt.tokens, cap * sizeof(char *));
        }
        opt.tokens[opt.ntokens++] = line;
    }
}

static void add_target(const char *spec)
{
    const char *eq = strchr(spec, '='), *colon = eq ? strchr(eq, ':') : NULL;
    struct target *t;

    if (!eq || !colon || opt.nt == MAX_TARGETS) {
        usage();
    }
    t = &opt.t[opt.nt++];
    t->name = strndup(spec, eq - spec);
    t->weight = atoi(eq + 1);
    t->text = slurp(colon + 1, NULL);
    if (t->weight <= 0) {
        usage();
    }
    opt.total_weight += t->weight;
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            usage();
        }
        i++;
        if (!strcmp(a, "--connect")) {
            char host[64];
            const char *c = strrchr(v, ':');
            if (!c || c - v >= (long)sizeof(host)) {
                usage();
            }
            memcpy(host, v, c - v);
            host[c - v] = '\0';
            opt.to.sin_family = AF_INET;
            opt.to.sin_port = htons(atoi(c + 1));
            if (inet_pton(AF_INET, host, &opt.to.sin_addr) != 1) {
                usage();
            }
        } else if (!strcmp(a, "--rate")) {
            opt.rate = atof(v);
        } else if (!strcmp(a, "--seconds")) {
            opt.seconds = atof(v);
        } else if (!strcmp(a, "--first")) {
            opt.first = atof(v);
        } else if (!strcmp(a, "--conns")) {
            opt.max_conns = atoi(v);
        } else if (!strcmp(a, "--target")) {
            add_target(v);
        } else if (!strcmp(a, "--tokens")) {
            load_tokens(v);
        } else if (!strcmp(a, "--hmac-key")) {
            opt.hmac_key = v;
        } else if (!strcmp(a, "--hmac-header")) {
            opt.hmac_header = v;
        } else {
            usage();
        }
    }
    if (opt.rate <= 0 || opt.seconds <= 0 || opt.nt == 0 || opt.max_conns <= 0 ||
        !opt.to.sin_port || (opt.hmac_key && !opt.hmac_header)) {
        usage();
    }
}

/* text with every "@U@" and "@T@" replaced, into out (at most cap bytes, NUL-ended). */
static size_t expand(const char *text, char *out, size_t cap)
{
    char unique[32];
    size_t n = 0;
    const char *p = text;

    snprintf(unique, sizeof(unique), "mx%d-%ld", (int)getpid(), ++seq);
    while (*p && n + 1 < cap) {
        const char *with = NULL;
        if (!strncmp(p, "@U@", 3)) {
            with = unique;
        } else if (!strncmp(p, "@T@", 3) && opt.ntokens) {
            with = opt.tokens[random() % opt.ntokens];
        }
        if (with) {
            size_t w = strlen(with);
            if (n + w + 1 >= cap) {
                break;
            }
            memcpy(out + n, with, w);
            n += w;
            p += 3;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    return n;
}

/* The request of target t into c->out: its lines, Host, Content-Length, the signature. */
static void build(struct conn *c, int t)
{
    static char text[REQ_MAX];
    char sig[2 * EVP_MAX_MD_SIZE + 1] = "";
    char *body, *line_end;
    size_t n = expand(opt.t[t].text, text, sizeof(text)), blen = 0;
    int len;

    body = strstr(text, "\n\n");
    if (body) {
        *body = '\0';
        body += 2;
        blen = n - (size_t)(body - text);
    }
    if (opt.hmac_key && blen) {
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int mlen = 0;
        HMAC(EVP_sha512(), opt.hmac_key, (int)strlen(opt.hmac_key), (unsigned char *)body, blen,
             mac, &mlen);
        for (unsigned int i = 0; i < mlen; i++) {
            sprintf(sig + 2 * i, "%02x", mac[i]);
        }
    }
    /* the first line, then the headers as written, one per line */
    line_end = strchr(text, '\n');
    if (line_end) {
        *line_end = '\0';
    }
    len = snprintf(c->out, sizeof(c->out), "%s HTTP/1.1\r\nHost: %s\r\n", text,
                   inet_ntoa(opt.to.sin_addr));
    for (char *h = line_end ? line_end + 1 : NULL; h && *h;) {
        char *e = strchr(h, '\n');
        if (e) {
            *e = '\0';
        }
        len += snprintf(c->out + len, sizeof(c->out) - len, "%s\r\n", h);
        h = e ? e + 1 : NULL;
    }
    if (*sig) {
        len += snprintf(c->out + len, sizeof(c->out) - len, "%s: %s\r\n", opt.hmac_header, sig);
    }
    len += snprintf(c->out + len, sizeof(c->out) - len, "Content-Length: %zu\r\n\r\n", blen);
    if (blen && (size_t)len + blen < sizeof(c->out)) {
        memcpy(c->out + len, body, blen);
        len += (int)blen;
    }
    c->outlen = (size_t)len;
    c->outoff = 0;
}

static void record(double **arr, long *n, long *cap, double v)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 4096;
        *arr = grow(*arr, *cap * sizeof(double));
    }
    (*arr)[(*n)++] = v;
}

static void watch(struct conn *c, unsigned events, int op)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(ep, op, c->fd, &ev) != 0) {
        fail("epoll_ctl");
    }
}

/* Opens connection c (non-blocking); 0 on failure. */
static int open_conn(struct conn *c)
{
    int one = 1;

    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c->fd < 0) {
        return 0;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c->fd, (struct sockaddr *)&opt.to, sizeof(opt.to)) != 0 && errno != EINPROGRESS) {
        close(c->fd);
        c->fd = -1;
        return 0;
    }
    c->connecting = 1;
    c->inlen = 0;
    watch(c, EPOLLOUT | EPOLLIN, EPOLL_CTL_ADD);
    return 1;
}

static void close_conn(struct conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->busy = 0;
    c->connecting = 0;
}

/* Starts request (t, due) on c: opened if closed, written as soon as it can be. */
static void send_on(struct conn *c, int t, double due)
{
    c->busy = 1;
    c->target = t;
    c->due = due;
    c->inlen = 0;
    build(c, t);
    opt.t[t].sent++;
    if (c->fd < 0 && !open_conn(c)) {
        opt.t[t].errors++;
        errors_total++;
        c->busy = 0;
        return;
    }
    if (!c->connecting) {
        watch(c, EPOLLOUT | EPOLLIN, EPOLL_CTL_MOD);
    }
}

/* A free connection (an open idle one first, then a closed one), or NULL. */
static struct conn *free_conn(void)
{
    struct conn *closed = NULL;

    for (int i = 0; i < nconns; i++) {
        if (!conns[i].busy && conns[i].fd >= 0) {
            return &conns[i];
        }
        if (!conns[i].busy && !closed) {
            closed = &conns[i];
        }
    }
    return closed;
}

static void dispatch(int t, double due)
{
    struct conn *c = free_conn();

    if (c) {
        send_on(c, t, due);
        return;
    }
    if (qtail - qhead == qcap) {
        struct pending *q = grow(NULL, 2 * (qcap ? qcap : 1024) * sizeof(*q));
        for (long i = qhead; i < qtail; i++) {
            q[i - qhead] = queue[i % qcap];
        }
        free(queue);
        queue = q;
        qtail -= qhead;
        qhead = 0;
        qcap = qcap ? 2 * qcap : 2048;
    }
    queue[qtail % qcap] = (struct pending){t, due};
    qtail++;
}

/* The request on c is over: answered with status (0: not answered). */
static void finish(struct conn *c, int status)
{
    struct target *t = &opt.t[c->target];
    double lat = (now() - c->due) * 1000;

    if (!status) {
        t->errors++;
        errors_total++;
    } else {
        answered++;
        if (status >= 200 && status < 300) {
            t->ok++;
        } else {
            t->non2xx++;
        }
        record(&t->lat, &t->nlat, &t->cap, lat);
        if (c->due - start < opt.first) {
            record(&first_lat, &nfirst, &first_cap, lat);
        }
    }
    c->busy = 0;
    if (c->fd >= 0) {
        watch(c, EPOLLIN, EPOLL_CTL_MOD);
    }
    if (qhead < qtail) {
        struct pending p = queue[qhead % qcap];
        qhead++;
        send_on(c, p.target, p.due);
    }
}

/* The length of a whole answer at the start of c->in, or 0 if more is to come; *status and
 * *close (the server closes after it) set. */
static size_t whole(struct conn *c, int *status, int *close_after)
{
    char *end, *h;
    size_t head, body = 0;

    c->in[c->inlen] = '\0';
    if (!(end = strstr(c->in, "\r\n\r\n"))) {
        return 0;
    }
    head = (size_t)(end - c->in) + 4;
    *status = atoi(c->in + 9);
    *close_after = 0;
    for (h = strstr(c->in, "\r\n"); h && h < end; h = strstr(h + 2, "\r\n")) {
        if (!strncasecmp(h + 2, "Content-Length:", 15)) {
            body = strtoul(h + 17, NULL, 10);
        } else if (!strncasecmp(h + 2, "Connection: close", 17)) {
            *close_after = 1;
        } else if (!strncasecmp(h + 2, "Transfer-Encoding: chunked", 26)) {
            char *z = strstr(end + 4, "\r\n0\r\n\r\n");
            return z ? (size_t)(z - c->in) + 7 : 0;
        }
    }
    return c->inlen >= head + body ? head + body : 0;
}

static void on_event(struct conn *c, unsigned events)
{
    if (c->connecting && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
        int err = 0;
        socklen_t l = sizeof(err);
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
        if (err) {
            close_conn(c);
            c->busy = 1; /* finish() counts it */
            finish(c, 0);
            return;
        }
        c->connecting = 0;
    }
    if (c->busy && c->outoff < c->outlen && (events & EPOLLOUT)) {
        ssize_t w = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);
        if (w > 0) {
            c->outoff += (size_t)w;
        }
        if (c->outoff == c->outlen) {
            watch(c, EPOLLIN, EPOLL_CTL_MOD);
        }
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        ssize_t r = read(c->fd, c->in + c->inlen, sizeof(c->in) - 1 - c->inlen);
        int status = 0, close_after = 0;
        if (r <= 0 && !(r < 0 && errno == EAGAIN)) {
            int was = c->busy;
            close_conn(c);
            if (was) {
                c->busy = 1;
                finish(c, 0);
            }
            return;
        }
        if (r > 0) {
            c->inlen += (size_t)r;
        }
        if (c->busy && whole(c, &status, &close_after)) {
            if (close_after) {
                close_conn(c);
                c->busy = 1;
            }
            finish(c, status);
        }
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, long n, double q)
{
    long i = (long)(q * (double)n);
    return n ? v[i >= n ? n - 1 : i] : 0;
}

static void report(long sent)
{
    printf("mixed rate=%.0f seconds=%.0f sent=%ld answered=%ld errors=%ld conns=%d\n", opt.rate,
           opt.seconds, sent, answered, errors_total, nconns);
    for (int i = 0; i < opt.nt; i++) {
        struct target *t = &opt.t[i];
        qsort(t->lat, t->nlat, sizeof(double), cmp);
        printf("target %s sent=%ld 2xx=%ld non2xx=%ld errors=%ld p50=%.2f p99=%.2f p999=%.2f "
               "max=%.2f\n",
               t->name, t->sent, t->ok, t->non2xx, t->errors, pct(t->lat, t->nlat, 0.5),
               pct(t->lat, t->nlat, 0.99), pct(t->lat, t->nlat, 0.999),
               t->nlat ? t->lat[t->nlat - 1] : 0);
    }
    qsort(first_lat, nfirst, sizeof(double), cmp);
    printf("first %.0f s: answered=%ld p99=%.2f max=%.2f\n", opt.first, nfirst,
           pct(first_lat, nfirst, 0.99), nfirst ? first_lat[nfirst - 1] : 0);
}

static int pick(void)
{
    int w = (int)(random() % opt.total_weight);
    for (int i = 0; i < opt.nt; i++) {
        if ((w -= opt.t[i].weight) < 0) {
            return i;
        }
    }
    return opt.nt - 1;
}

int main(int argc, char **argv)
{
    struct epoll_event evs[256];
    long k = 0, total;
    double end, give_up;
    int bad = 0;

    signal(SIGPIPE, SIG_IGN);
    parse_args(argc, argv);
    srandom((unsigned)getpid());
    if ((ep = epoll_create1(0)) < 0) {
        fail("epoll_create1");
    }
    nconns = opt.max_conns;
    conns = grow(NULL, (size_t)nconns * sizeof(*conns));
    memset(conns, 0, (size_t)nconns * sizeof(*conns));
    for (int i = 0; i < nconns; i++) {
        conns[i].fd = -1;
    }
    total = (long)(opt.rate * opt.seconds);
    start = now();
    end = start + opt.seconds;
    give_up = end + 10;
    for (;;) {
        double t = now(), wait;
        struct timespec ts;
        int n;
        while (k < total && start + (double)k / opt.rate <= t) {
            dispatch(pick(), start + (double)k / opt.rate);
            k++;
        }
        if (k == total && answered + errors_total >= total) {
            break;
        }
        if (t > give_up) {
            break;
        }
        /* until the next request is due, to the nanosecond: a wait in whole milliseconds
         * would either spin (a core taken from the server) or send late */
        wait = k < total ? start + (double)k / opt.rate - t : 0.1;
        if (wait < 0) {
            wait = 0;
        }
        ts.tv_sec = (time_t)wait;
        ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
        n = epoll_pwait2(ep, evs, 256, &ts, NULL);
        for (int i = 0; i < n; i++) {
            on_event(evs[i].data.ptr, evs[i].events);
        }
    }
    /* what is still out after the wait: no answer */
    for (int i = 0; i < nconns; i++) {
        if (conns[i].busy) {
            opt.t[conns[i].target].errors++;
            errors_total++;
        }
    }
    for (long i = qhead; i < qtail; i++) {
        opt.t[queue[i % qcap].target].errors++;
        errors_total++;
    }
    report(total);
    for (int i = 0; i < opt.nt; i++) {
        bad |= opt.t[i].ok != opt.t[i].sent;
    }
    return bad ? 1 : 0;
}
