/*
 * A connection flood and a legitimate client, from one process (epoll, no thread per
 * connection): the attacks of docs/deployment.md's "Holding connections" table, and probes
 * that open a fresh connection each second and time the whole answer.
 *
 *   flood --connect 127.0.0.1:8080 [--tls [--sni NAME]] --attack idle|slowbody|slowheader|silent
 *         --conns N [--sources FIRST-LAST] [--seconds S] [--warmup S]
 *         [--attack-path PATH] [--probe NAME=FILE ...] [--hmac-key K --hmac-header H]
 *         [--probe-timeout S] [--log FILE]
 *
 * Attacks (each connection reopened as soon as the server closes it):
 *   idle        a cheap GET of a missing page every 4 s on a keep-alive connection
 *   slowbody    a POST whose body arrives at 1 byte every 2 s
 *   slowheader  a request line, then one header line every 4 s
 *   silent      the connection opened (TLS: the TCP connection) and never written to
 * --sources 2-101 spreads the connections over the source addresses 127.0.0.2-127.0.0.101.
 *
 * A probe file holds "METHOD PATH", header lines and, after an empty line, the body; every
 * "@U@" in it becomes a value unique to the probe. The tool adds Host, Content-Length,
 * Connection: close and, with --hmac-key, header H with the body's hex HMAC-SHA512.
 *
 * Output (standard output): one line per probe name,
 *   probe NAME sent=N ok2s=M slowest=S.SSS failed=F
 * where ok2s counts answers with status 200 within 2 s, and one attack line,
 *   attack MODE wanted=N opened=O peak=P open_avg=A closed_by_server=C
 * With --log, every probe as "SECONDS_SINCE_START NAME STATUS SECONDS UNIQUE".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum mode { IDLE, SLOWBODY, SLOWHEADER, SILENT, NONE };
enum state { FREE, CONNECTING, HANDSHAKE, OPEN };

#define MAX_PROBES 8
#define PROBE_IN 65536

struct conn {
    int fd;
    SSL *ssl;
    enum state state;
    int probe; /* -1: an attack connection; else the probe's index */
    int src;
    double t0, next;
    char out[4096];
    size_t outlen, outoff;
    char *in;
    size_t inlen;
    char unique[40];
};

struct probe {
    const char *name;
    char *text;
    int sent, ok, failed;
    double slowest;
};

static struct {
    struct sockaddr_in to;
    int tls;
    const char *sni;
    enum mode mode;
    int conns, src_first, src_last;
    double seconds, warmup, probe_timeout;
    const char *attack_path, *hmac_key, *hmac_header;
    struct probe probes[MAX_PROBES];
    int nprobes;
    FILE *log;
} opt = {
    .conns = 0, .seconds = 60, .warmup = 3, .probe_timeout = 10, .attack_path = "/auth/sign_in"};

static SSL_CTX *ctx;
static int ep;
static struct conn *conns;
static int nconns;
static double start;
static long opened, closed_by_server, open_now, peak, unique_seq;
static double open_sum;
static long open_samples;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "flood: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: flood --connect HOST:PORT --attack idle|slowbody|slowheader|silent|none "
            "--conns N [--tls] [--sni NAME] [--sources A-B] [--seconds S] [--warmup S] "
            "[--attack-path P] [--probe NAME=FILE] [--hmac-key K --hmac-header H] "
            "[--probe-timeout S] [--log FILE]\n");
    exit(2);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path);
    char *buf = malloc(65536);
    size_t n = fread(buf, 1, 65535, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--tls")) {
            opt.tls = 1;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--connect")) {
            char host[64];
            int port;
            if (sscanf(v, "%63[^:]:%d", host, &port) != 2)
                usage();
            opt.to.sin_family = AF_INET;
            opt.to.sin_port = htons(port);
            if (inet_pton(AF_INET, host, &opt.to.sin_addr) != 1)
                usage();
        } else if (!strcmp(a, "--sni")) {
            opt.sni = v;
        } else if (!strcmp(a, "--attack")) {
            opt.mode = !strcmp(v, "idle")         ? IDLE
                       : !strcmp(v, "slowbody")   ? SLOWBODY
                       : !strcmp(v, "slowheader") ? SLOWHEADER
                       : !strcmp(v, "silent")     ? SILENT
                       : !strcmp(v, "none")       ? NONE
                                                  : (usage(), NONE);
        } else if (!strcmp(a, "--conns")) {
            opt.conns = atoi(v);
        } else if (!strcmp(a, "--sources")) {
            if (sscanf(v, "%d-%d", &opt.src_first, &opt.src_last) != 2 || opt.src_first < 1 ||
                opt.src_last > 254 || opt.src_last < opt.src_first)
                usage();
        } else if (!strcmp(a, "--seconds")) {
            opt.seconds = atof(v);
        } else if (!strcmp(a, "--warmup")) {
            opt.warmup = atof(v);
        } else if (!strcmp(a, "--probe-timeout")) {
            opt.probe_timeout = atof(v);
        } else if (!strcmp(a, "--attack-path")) {
            opt.attack_path = v;
        } else if (!strcmp(a, "--hmac-key")) {
            opt.hmac_key = v;
        } else if (!strcmp(a, "--hmac-header")) {
            opt.hmac_header = v;
        } else if (!strcmp(a, "--log")) {
            opt.log = fopen(v, "w");
            if (!opt.log)
                die(v);
        } else if (!strcmp(a, "--probe")) {
            const char *eq = strchr(v, '=');
            if (!eq || opt.nprobes == MAX_PROBES)
                usage();
            struct probe *p = &opt.probes[opt.nprobes++];
            p->name = strndup(v, eq - v);
            p->text = slurp(eq + 1);
        } else {
            usage();
        }
    }
    if (!opt.to.sin_port || (opt.hmac_key && !opt.hmac_header))
        usage();
}

/* Every "@U@" of the template replaced by u. */
static size_t expand(const char *t, const char *u, char *out, size_t cap)
{
    size_t n = 0, ul = strlen(u);
    while (*t && n + ul + 1 < cap) {
        if (!strncmp(t, "@U@", 3)) {
            memcpy(out + n, u, ul);
            n += ul;
            t += 3;
        } else {
            out[n++] = *t++;
        }
    }
    out[n] = '\0';
    return n;
}

static void probe_request(struct conn *c, const struct probe *p)
{
    char text[8192], head[4096], sig[200] = "";
    expand(p->text, c->unique, text, sizeof text);
    char *body = strstr(text, "\n\n");
    if (body) {
        *body = '\0';
        body += 2;
    } else {
        body = text + strlen(text);
    }
    char *nl = strchr(text, '\n');
    if (nl)
        *nl++ = '\0';
    head[0] = '\0';
    for (char *line = nl; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        strncat(head, line, sizeof head - strlen(head) - 3);
        strcat(head, "\r\n");
        line = end ? end + 1 : NULL;
    }
    size_t blen = strlen(body);
    if (opt.hmac_key && blen) {
        unsigned char mac[64];
        unsigned int mlen = 0;
        HMAC(EVP_sha512(), opt.hmac_key, (int)strlen(opt.hmac_key), (unsigned char *)body, blen,
             mac, &mlen);
        int n = snprintf(sig, sizeof sig, "%s: ", opt.hmac_header);
        for (unsigned i = 0; i < mlen; i++)
            n += snprintf(sig + n, sizeof sig - n, "%02x", mac[i]);
        snprintf(sig + n, sizeof sig - n, "\r\n");
    }
    int n = snprintf(c->out, sizeof c->out,
                     "%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s%sContent-Length: "
                     "%zu\r\n\r\n%s",
                     text, opt.sni ? opt.sni : "127.0.0.1", head, sig, blen, body);
    c->outlen = n < (int)sizeof c->out ? (size_t)n : sizeof c->out - 1;
    c->outoff = 0;
}

static void attack_request(struct conn *c)
{
    int n = 0;
    switch (opt.mode) {
    case IDLE:
        n = snprintf(c->out, sizeof c->out, "GET /nonexistent HTTP/1.1\r\nHost: %s\r\n\r\n",
                     opt.sni ? opt.sni : "127.0.0.1");
        break;
    case SLOWBODY:
        n = snprintf(c->out, sizeof c->out,
                     "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: 1000\r\n\r\n{",
                     opt.attack_path, opt.sni ? opt.sni : "127.0.0.1");
        break;
    case SLOWHEADER:
        n = snprintf(c->out, sizeof c->out, "GET /health HTTP/1.1\r\n");
        break;
    default:
        break;
    }
    c->outlen = (size_t)n;
    c->outoff = 0;
}

static void watch(struct conn *c, unsigned events)
{
    struct epoll_event e = {.events = events, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e) < 0)
        die("epoll_ctl");
}

static void close_conn(struct conn *c, int by_server)
{
    if (c->ssl)
        SSL_free(c->ssl);
    c->ssl = NULL;
    close(c->fd);
    if (c->state == OPEN && c->probe < 0)
        open_now--;
    if (by_server && c->probe < 0)
        closed_by_server++;
    free(c->in);
    c->in = NULL;
    c->state = FREE;
}

static int open_conn(struct conn *c, int probe)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (opt.src_first && probe < 0) {
        struct sockaddr_in from = {.sin_family = AF_INET};
        from.sin_addr.s_addr = htonl(0x7f000000u | (unsigned)c->src);
        setsockopt(c->fd, SOL_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        if (bind(c->fd, (struct sockaddr *)&from, sizeof from) < 0) {
            close(c->fd);
            return -1;
        }
    }
    c->probe = probe;
    c->t0 = now();
    c->next = 0;
    c->inlen = 0;
    c->in = probe >= 0 ? malloc(PROBE_IN) : NULL;
    if (connect(c->fd, (struct sockaddr *)&opt.to, sizeof opt.to) < 0 && errno != EINPROGRESS) {
        close(c->fd);
        free(c->in);
        c->in = NULL;
        return -1;
    }
    c->state = CONNECTING;
    struct epoll_event e = {.events = EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e) < 0)
        die("epoll_ctl");
    if (probe < 0)
        opened++;
    return 0;
}

/* >0 bytes, 0 would block, -1 closed or failed */
static long io(struct conn *c, int writing, void *buf, size_t len)
{
    if (c->ssl) {
        int n = writing ? SSL_write(c->ssl, buf, (int)len) : SSL_read(c->ssl, buf, (int)len);
        if (n > 0)
            return n;
        int err = SSL_get_error(c->ssl, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
            return 0;
        return -1;
    }
    ssize_t n = writing ? write(c->fd, buf, len) : read(c->fd, buf, len);
    if (n > 0)
        return n;
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    return -1;
}

static void probe_done(struct conn *c)
{
    struct probe *p = &opt.probes[c->probe];
    double secs = now() - c->t0;
    int status = 0;
    if (c->in && c->inlen > 12 && !strncmp(c->in, "HTTP/1.", 7))
        status = atoi(c->in + 9);
    if (status == 200 && secs <= 2.0)
        p->ok++;
    else
        p->failed++;
    if (secs > p->slowest)
        p->slowest = secs;
    if (opt.log)
        fprintf(opt.log, "%.3f %s %d %.3f %s\n", c->t0 - start, p->name, status, secs, c->unique);
    close_conn(c, 0);
}

/* The connection ended (closed, refused, failed): a probe is recorded, an attack connection
 * counted as closed by the server. */
static void ended(struct conn *c)
{
    if (c->probe >= 0)
        probe_done(c);
    else
        close_conn(c, 1);
}

static void send_some(struct conn *c)
{
    while (c->outoff < c->outlen) {
        long n = io(c, 1, c->out + c->outoff, c->outlen - c->outoff);
        if (n < 0) {
            ended(c);
            return;
        }
        if (n == 0)
            return;
        c->outoff += (size_t)n;
    }
}

static void established(struct conn *c)
{
    c->state = OPEN;
    if (c->probe >= 0) {
        probe_request(c, &opt.probes[c->probe]);
        watch(c, EPOLLIN | EPOLLOUT);
        send_some(c);
        return;
    }
    open_now++;
    if (open_now > peak)
        peak = open_now;
    attack_request(c);
    c->next = now() + (opt.mode == SLOWBODY ? 2 : 4);
    watch(c, EPOLLIN | (c->outlen ? EPOLLOUT : 0));
    if (c->outlen)
        send_some(c);
}

static void handshake(struct conn *c)
{
    int r = SSL_connect(c->ssl);
    if (r == 1) {
        established(c);
        return;
    }
    int err = SSL_get_error(c->ssl, r);
    if (err == SSL_ERROR_WANT_READ)
        watch(c, EPOLLIN);
    else if (err == SSL_ERROR_WANT_WRITE)
        watch(c, EPOLLOUT);
    else
        ended(c);
}

static void on_event(struct conn *c, unsigned ev)
{
    if (c->state == CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            ended(c);
            return;
        }
        if (opt.tls && (c->probe >= 0 || opt.mode != SILENT)) {
            c->ssl = SSL_new(ctx);
            SSL_set_fd(c->ssl, c->fd);
            if (opt.sni)
                SSL_set_tlsext_host_name(c->ssl, opt.sni);
            c->state = HANDSHAKE;
            handshake(c);
        } else {
            established(c);
        }
        return;
    }
    if (c->state == HANDSHAKE) {
        handshake(c);
        return;
    }
    if ((ev & EPOLLOUT) && c->outoff < c->outlen) {
        send_some(c);
        if (c->state == FREE)
            return;
    }
    if (c->outoff >= c->outlen)
        watch(c, EPOLLIN);
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        char sink[16384];
        for (;;) {
            char *buf = sink;
            size_t cap = sizeof sink;
            if (c->probe >= 0) {
                buf = c->in + c->inlen;
                cap = PROBE_IN - 1 - c->inlen;
                if (!cap)
                    buf = sink, cap = sizeof sink;
            }
            long n = io(c, 0, buf, cap);
            if (n == 0)
                return;
            if (n < 0) {
                ended(c);
                return;
            }
            if (c->probe >= 0 && buf != sink)
                c->inlen += (size_t)n;
        }
    }
}

/* Each attack connection's next piece, when due. */
static void tick(double t)
{
    for (int i = 0; i < nconns; i++) {
        struct conn *c = &conns[i];
        if (c->state == OPEN && c->probe < 0 && c->next && t >= c->next && c->outoff >= c->outlen) {
            if (opt.mode == IDLE) {
                attack_request(c);
            } else if (opt.mode == SLOWBODY) {
                c->out[0] = ' ';
                c->outlen = 1;
                c->outoff = 0;
            } else if (opt.mode == SLOWHEADER) {
                c->outlen = (size_t)snprintf(c->out, sizeof c->out, "X-Slow-%d: x\r\n", i);
                c->outoff = 0;
            }
            c->next = t + (opt.mode == SLOWBODY ? 2 : 4);
            watch(c, EPOLLIN | EPOLLOUT);
            send_some(c);
        } else if (c->probe >= 0 && c->state != FREE && t - c->t0 > opt.probe_timeout) {
            probe_done(c);
        }
    }
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        if ((long)rl.rlim_cur < opt.conns + 200) {
            fprintf(stderr, "flood: %d connections need %d descriptors, the limit is %ld\n",
                    opt.conns, opt.conns + 200, (long)rl.rlim_cur);
            return 2;
        }
    }
    if (opt.tls) {
        ctx = SSL_CTX_new(TLS_client_method());
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
    int attack = opt.mode == NONE ? 0 : opt.conns;
    int probe_slots = opt.nprobes * ((int)opt.probe_timeout + 2);
    nconns = attack + probe_slots;
    conns = calloc((size_t)nconns, sizeof *conns);
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        die("epoll_create1");
    start = now();
    double end = start + opt.warmup + opt.seconds, next_probe = start + opt.warmup;
    double next_tick = start;
    int src = opt.src_first;
    struct epoll_event evs[512];
    while (now() < end) {
        double t = now();
        /* (Re)open attack connections, up to 1,000 per 10 ms. */
        int budget = 1000;
        for (int i = 0; i < attack && budget; i++) {
            if (conns[i].state != FREE)
                continue;
            conns[i].src = src;
            if (opt.src_first && ++src > opt.src_last)
                src = opt.src_first;
            if (open_conn(&conns[i], -1) < 0)
                break;
            budget--;
        }
        if (t >= next_probe) {
            for (int p = 0; p < opt.nprobes; p++) {
                for (int i = attack; i < nconns; i++) {
                    if (conns[i].state != FREE)
                        continue;
                    snprintf(conns[i].unique, sizeof conns[i].unique, "%ld-%ld", (long)getpid(),
                             ++unique_seq);
                    opt.probes[p].sent++;
                    if (open_conn(&conns[i], p) < 0) {
                        opt.probes[p].failed++;
                        if (opt.log)
                            fprintf(opt.log, "%.3f %s 0 0.000 %s\n", t - start, opt.probes[p].name,
                                    conns[i].unique);
                    }
                    break;
                }
            }
            next_probe += 1.0;
        }
        if (t >= next_tick) {
            tick(t);
            if (t >= start + opt.warmup) {
                open_sum += (double)open_now;
                open_samples++;
            }
            next_tick = t + 0.1;
        }
        int n = epoll_wait(ep, evs, 512, 10);
        for (int i = 0; i < n; i++)
            on_event(evs[i].data.ptr, evs[i].events);
    }
    /* Probes still waiting get their full timeout. */
    double deadline = now() + opt.probe_timeout;
    for (;;) {
        int waiting = 0;
        for (int i = attack; i < nconns; i++)
            waiting += conns[i].state != FREE;
        if (!waiting || now() > deadline)
            break;
        tick(now());
        int n = epoll_wait(ep, evs, 512, 10);
        for (int i = 0; i < n; i++)
            on_event(evs[i].data.ptr, evs[i].events);
    }
    for (int p = 0; p < opt.nprobes; p++) {
        struct probe *pr = &opt.probes[p];
        printf("probe %s sent=%d ok2s=%d slowest=%.3f failed=%d\n", pr->name, pr->sent, pr->ok,
               pr->slowest, pr->failed);
    }
    static const char *names[] = {"idle", "slowbody", "slowheader", "silent", "none"};
    printf("attack %s wanted=%d opened=%ld peak=%ld open_avg=%.0f closed_by_server=%ld\n",
           names[opt.mode], attack, opened, peak, open_samples ? open_sum / open_samples : 0.0,
           closed_by_server);
    if (opt.log)
        fclose(opt.log);
    return 0;
}
