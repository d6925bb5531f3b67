/* Unit tests for BVN verification by an identity provider (bank_idp.c): base URLs and
 * credentials as the directives check them, each dialect's request, the answers judged into
 * verdicts, the providers' dates, the circuit breaker's numbers, and the client keeping
 * one connection per thread. */
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <apr_strings.h>
#include <apr_network_io.h>
#include <apr_thread_proc.h>
#include <apr_atomic.h>

#include "bank_idp.h"

static const bank_idp_query_t ada = {"22212345678", "1990-08-02", "Ada", "Obi"};

static bank_idp_verdict judge(apr_pool_t *p, bank_idp_kind kind, long status, const char *body,
                              bank_idp_result_t *out)
{
    bank_idp_judge(p, kind, status, body, strlen(body), &ada, out);
    return out->verdict;
}

static void test_urls(apr_pool_t *p)
{
    const char *n = NULL;
    CHECK(!bank_idp_url_check(p, "https://api.dojah.io/", &n));
    CHECK_STR(n, "https://api.dojah.io");
    CHECK(!bank_idp_url_check(p, "https://api.prembly.com/identitypass", &n));
    CHECK_STR(n, "https://api.prembly.com/identitypass");
    CHECK(!bank_idp_url_check(p, "http://127.0.0.1:8529/fake/ok", &n));
    CHECK(!bank_idp_url_check(p, "http://[::1]:80", &n));
    CHECK(!bank_idp_url_check(p, "http://localhost", &n));
    CHECK(bank_idp_url_check(p, "http://api.dojah.io", &n)); /* plain HTTP off loopback */
    CHECK(bank_idp_url_check(p, "http://127.0.0.1.evil.example", &n));
    CHECK(bank_idp_url_check(p, "ftp://api.dojah.io", &n));
    CHECK(bank_idp_url_check(p, "api.dojah.io", &n));
    CHECK(bank_idp_url_check(p, "https://user:pw@api.dojah.io", &n));
    CHECK(bank_idp_url_check(p, "https://api.dojah.io/?x=1", &n));
    CHECK_STR(bank_idp_default_url(BANK_IDP_DOJAH), "https://api.dojah.io");
    CHECK(bank_idp_default_url(BANK_IDP_TABLE) == NULL);
}

static void test_credentials(apr_pool_t *p)
{
    char path[] = "/tmp/bank-idp-unit-XXXXXX";
    const char *a = NULL, *s = NULL;
    int fd = mkstemp(path);

    CHECK(!bank_idp_credential_check("prod_sk_1T1eSavlZ"));
    CHECK(bank_idp_credential_check(""));
    CHECK(bank_idp_credential_check("two words"));
    CHECK(bank_idp_credential_check("tab\there"));

    CHECK(fd >= 0);
    CHECK(write(fd, "app-1  secret-2\n", 16) == 16);
    close(fd);
    CHECK(!bank_idp_credentials_file(p, path, &a, &s)); /* mkstemp: 0600 */
    CHECK_STR(a, "app-1");
    CHECK_STR(s, "secret-2");
    chmod(path, 0640);
    CHECK(bank_idp_credentials_file(p, path, &a, &s) != NULL); /* the group may read it */
    chmod(path, 0604);
    CHECK(bank_idp_credentials_file(p, path, &a, &s) != NULL);
    chmod(path, 0600);
    fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(write(fd, "only-one\n", 9) == 9);
    close(fd);
    CHECK(bank_idp_credentials_file(p, path, &a, &s) != NULL);
    unlink(path);
    CHECK(bank_idp_credentials_file(p, path, &a, &s) != NULL); /* gone */
}

static void test_requests(apr_pool_t *p)
{
    bank_idp_conf_t c = {BANK_IDP_DOJAH, "https://api.dojah.io", "app", "key", 10};
    bank_idp_query_t q = {"22212345678", "1990-08-02", "Mary Jane", "O'Neil&Co"};
    CHECK_STR(bank_idp_dojah_url(p, &c, &q),
              "https://api.dojah.io/api/v1/kyc/bvn/full?bvn=22212345678&first_name=Mary%20Jane"
              "&last_name=O%27Neil%26Co&dob=1990-08-02");
    CHECK_STR(bank_idp_prembly_body(p, &q), "{\"number\":\"22212345678\"}");
}

static void test_dates(apr_pool_t *p)
{
    CHECK_STR(bank_idp_date(p, "2-Aug-1990"), "1990-08-02");
    CHECK_STR(bank_idp_date(p, "02-aug-1990"), "1990-08-02");
    CHECK_STR(bank_idp_date(p, "01-January-1907"), "1907-01-01");
    CHECK_STR(bank_idp_date(p, "1990-08-02"), "1990-08-02");
    CHECK(bank_idp_date(p, "32-Aug-1990") == NULL);
    CHECK(bank_idp_date(p, "2-Augu-1990") == NULL);
    CHECK(bank_idp_date(p, "2-Aug-90") == NULL);
    CHECK(bank_idp_date(p, "Aug 2, 1990") == NULL);
    CHECK(bank_idp_date(p, "1990-13-02") == NULL);
    CHECK(bank_idp_date(p, "") == NULL);
    /* found by t/fuzz/fuzz_idp.c: sscanf's %d took a sign */
    CHECK(bank_idp_date(p, "1990-08-+9") == NULL);
    CHECK(bank_idp_date(p, "2-Aug-1+90") == NULL);
    CHECK(bank_idp_date(p, "+2-Aug-1990") == NULL);
}

static void test_dojah(apr_pool_t *p)
{
    bank_idp_result_t r;
    CHECK(judge(p, BANK_IDP_DOJAH, 200,
                "{\"entity\":{\"bvn\":{\"value\":\"22212345678\",\"status\":true},"
                "\"first_name\":{\"confidence_value\":100,\"status\":true},"
                "\"last_name\":{\"confidence_value\":100,\"status\":true},"
                "\"date_of_birth\":{\"status\":true}}}",
                &r) == BANK_IDP_MATCH);
    CHECK_STR(r.first, "Ada");
    CHECK_STR(r.last, "Obi");
    /* the documented answer has no last_name */
    CHECK(judge(p, BANK_IDP_DOJAH, 200,
                "{\"entity\":{\"bvn\":{\"status\":true},\"first_name\":{\"status\":true},"
                "\"date_of_birth\":{\"status\":true}}}",
                &r) == BANK_IDP_MATCH);
    CHECK(judge(p, BANK_IDP_DOJAH, 200,
                "{\"entity\":{\"bvn\":{\"status\":false},\"first_name\":{\"status\":false},"
                "\"date_of_birth\":{\"status\":false}}}",
                &r) == BANK_IDP_MISMATCH);
    CHECK(judge(p, BANK_IDP_DOJAH, 200,
                "{\"entity\":{\"bvn\":{\"status\":true},\"first_name\":{\"status\":true},"
                "\"date_of_birth\":{\"status\":false}}}",
                &r) == BANK_IDP_MISMATCH);
    CHECK(judge(p, BANK_IDP_DOJAH, 200,
                "{\"entity\":{\"bvn\":{\"status\":true},\"first_name\":{\"status\":true},"
                "\"last_name\":{\"status\":false},\"date_of_birth\":{\"status\":true}}}",
                &r) == BANK_IDP_MISMATCH);
    CHECK(judge(p, BANK_IDP_DOJAH, 404, "{\"error\":\"BVN not found\"}", &r) == BANK_IDP_MISMATCH);
    CHECK(r.diff == BANK_IDP_DIFF_UNKNOWN);
    CHECK(judge(p, BANK_IDP_DOJAH, 400, "{\"error\":\"Bvn Not Found\"}", &r) == BANK_IDP_MISMATCH);
    /* a 400 or 404 that does not say "BVN not found": a malformed request or a wrong path,
     * which must not cost the customer an attempt */
    CHECK(judge(p, BANK_IDP_DOJAH, 400, "", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 404, "<html>Not Found</html>", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 404, "{\"error\":\"Not Found\"}", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 400, "{\"error\":\"invalid query parameters\"}", &r) ==
          BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 404, "{\"error\":[\"BVN not found\"]}", &r) ==
          BANK_IDP_UNAVAILABLE);
    CHECK(strstr(r.why, "HTTP 404") != NULL);
    /* a status that is not a boolean, a missing field: malformed, not a mismatch */
    CHECK(judge(p, BANK_IDP_DOJAH, 200,
                "{\"entity\":{\"bvn\":{\"status\":\"true\"},\"first_name\":{\"status\":true},"
                "\"date_of_birth\":{\"status\":true}}}",
                &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 200,
                "{\"entity\":{\"bvn\":{\"status\":true},\"first_name\":{\"status\":true}}}",
                &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 200, "{\"entity\":", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 200, "[]", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 500, "{}", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 503, "", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 429, "", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_DOJAH, 401, "{}", &r) == BANK_IDP_REFUSED);
    CHECK(judge(p, BANK_IDP_DOJAH, 403, "", &r) == BANK_IDP_REFUSED);
    CHECK(r.http_status == 403);
}

static void test_prembly(apr_pool_t *p)
{
    bank_idp_result_t r;
    CHECK(judge(p, BANK_IDP_PREMBLY, 200,
                "{\"status\":true,\"response_code\":\"00\",\"data\":{\"firstName\":\"OBI\","
                "\"middleName\":\"Ngozi\",\"lastName\":\"ada\",\"dateOfBirth\":\"2-Aug-1990\"}}",
                &r) == BANK_IDP_MATCH);
    CHECK_STR(r.first, "OBI"); /* the provider's names, in its order */
    CHECK_STR(r.last, "ada");
    CHECK(judge(p, BANK_IDP_PREMBLY, 200,
                "{\"status\":true,\"response_code\":\"00\",\"data\":{\"firstName\":\"Ada\","
                "\"lastName\":\"Obi\",\"dateOfBirth\":\"3-Aug-1990\"}}",
                &r) == BANK_IDP_MISMATCH);
    CHECK(r.diff == BANK_IDP_DIFF_DATE);
    CHECK(judge(p, BANK_IDP_PREMBLY, 200,
                "{\"status\":true,\"response_code\":\"00\",\"data\":{\"firstName\":\"Ada\","
                "\"lastName\":\"Okafor\",\"dateOfBirth\":\"2-Aug-1990\"}}",
                &r) == BANK_IDP_MISMATCH);
    CHECK(r.diff == BANK_IDP_DIFF_NAMES);
    CHECK(judge(p, BANK_IDP_PREMBLY, 200, "{\"status\":false,\"response_code\":\"01\"}", &r) ==
          BANK_IDP_MISMATCH);
    CHECK(judge(p, BANK_IDP_PREMBLY, 404, "{\"status\":false,\"response_code\":\"01\"}", &r) ==
          BANK_IDP_MISMATCH);
    CHECK(judge(p, BANK_IDP_PREMBLY, 200, "{\"status\":false,\"response_code\":\"07\"}", &r) ==
          BANK_IDP_MISMATCH);
    CHECK(judge(p, BANK_IDP_PREMBLY, 200, "{\"status\":false,\"response_code\":\"02\"}", &r) ==
          BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_PREMBLY, 200, "{\"status\":false,\"response_code\":\"03\"}", &r) ==
          BANK_IDP_REFUSED);
    CHECK(judge(p, BANK_IDP_PREMBLY, 200, "{\"status\":true,\"response_code\":\"00\"}", &r) ==
          BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_PREMBLY, 200,
                "{\"status\":true,\"response_code\":\"00\",\"data\":{\"firstName\":\"Ada\","
                "\"lastName\":\"Obi\",\"dateOfBirth\":\"yesterday\"}}",
                &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_PREMBLY, 200, "{\"status\":true}", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_PREMBLY, 200, "not json", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_PREMBLY, 502, "{}", &r) == BANK_IDP_UNAVAILABLE);
    CHECK(judge(p, BANK_IDP_PREMBLY, 401, "{}", &r) == BANK_IDP_REFUSED);
}

/* The latest answer times per base URL: none yet, then the recorded ones only, the ring
 * keeping the newest BANK_IDP_LATENCY_SAMPLES. */
static void test_latency(bank_idp_breaker_t *b, const char *u, const char *v)
{
    apr_uint32_t r;
    int i, seen_101 = 0, seen_103 = 0;

    CHECK(bank_idp_latency_draw(b, u, 7) == -1);
    CHECK(bank_idp_latency_draw(NULL, u, 7) == -1);
    bank_idp_latency_record(b, u, 101000);
    for (r = 0; r < 10; r++) {
        CHECK(bank_idp_latency_draw(b, u, r) == 101000);
    }
    bank_idp_latency_record(b, u, 103000);
    for (r = 0; r < 10; r++) {
        apr_interval_time_t w = bank_idp_latency_draw(b, u, r);
        CHECK(w == 101000 || w == 103000);
        seen_101 |= w == 101000;
        seen_103 |= w == 103000;
    }
    CHECK(seen_101 && seen_103);
    CHECK(bank_idp_latency_draw(b, v, 7) == -1); /* another URL has its own */
    for (i = 0; i < BANK_IDP_LATENCY_SAMPLES; i++) {
        bank_idp_latency_record(b, u, 50000 + i);
    }
    for (r = 0; r < 2 * BANK_IDP_LATENCY_SAMPLES; r++) {
        apr_interval_time_t w = bank_idp_latency_draw(b, u, r);
        CHECK(w >= 50000 && w < 50000 + BANK_IDP_LATENCY_SAMPLES);
    }
    /* a time past the longest timeout is kept as that */
    for (i = 0; i < BANK_IDP_LATENCY_SAMPLES; i++) {
        bank_idp_latency_record(b, v, apr_time_from_sec(100000));
    }
    CHECK(bank_idp_latency_draw(b, v, 3) == apr_time_from_sec(BANK_IDP_TIMEOUT_MAX));
}

static void test_breaker(apr_pool_t *p)
{
    bank_idp_breaker_t *b = bank_idp_breaker_at(apr_palloc(p, bank_idp_breaker_size()));
    apr_time_t t = apr_time_from_sec(1000000);
    const char *u = "https://api.dojah.io", *v = "https://api.prembly.com/identitypass";
    int i;

    CHECK(b != NULL);
    for (i = 1; i < BANK_IDP_BREAKER_FAILURES; i++) {
        CHECK(bank_idp_breaker_allow(b, u, t) == 0);
        CHECK(bank_idp_breaker_record(b, u, 0, t) == 0);
    }
    bank_idp_breaker_record(b, u, 1, t); /* a success in between starts the run again */
    for (i = 1; i < BANK_IDP_BREAKER_FAILURES; i++) {
        CHECK(bank_idp_breaker_record(b, u, 0, t) == 0);
    }
    CHECK(bank_idp_breaker_record(b, u, 0, t) == 1); /* the 5th in a row opens it */
    CHECK(bank_idp_breaker_allow(b, u, t) == BANK_IDP_BREAKER_OPEN);
    CHECK(bank_idp_breaker_allow(b, u, t + apr_time_from_sec(29) + 1) == 1);
    CHECK(bank_idp_breaker_allow(b, v, t) == 0); /* another URL has its own */
    test_latency(b, u, v);
    /* after 30 s one trial goes ahead, the others wait for it */
    t += apr_time_from_sec(BANK_IDP_BREAKER_OPEN);
    CHECK(bank_idp_breaker_allow(b, u, t) == 0);
    CHECK(bank_idp_breaker_allow(b, u, t) == BANK_IDP_BREAKER_OPEN);
    CHECK(bank_idp_breaker_record(b, u, 0, t) == 1); /* the trial failed: open again */
    CHECK(bank_idp_breaker_allow(b, u, t + apr_time_from_sec(10)) == 20);
    t += apr_time_from_sec(BANK_IDP_BREAKER_OPEN);
    CHECK(bank_idp_breaker_allow(b, u, t) == 0);
    bank_idp_breaker_record(b, u, 1, t); /* the trial succeeded: closed */
    CHECK(bank_idp_breaker_allow(b, u, t) == 0);
    CHECK(bank_idp_breaker_allow(b, u, t) == 0);
}

/* ---- the client against a local HTTP/1.1 server: connections kept per handle ---- */

typedef struct {
    apr_socket_t *listener;
    volatile apr_uint32_t accepted, served;
    const char *answer; /* a whole HTTP response */
} fake_server;

/* Serves connections one after another; a connection idle for 300 ms is closed. */
static void *APR_THREAD_FUNC serve(apr_thread_t *t, void *baton)
{
    fake_server *f = baton;
    apr_pool_t *p;
    apr_socket_t *c;

    apr_pool_create(&p, NULL);
    while (apr_socket_accept(&c, f->listener, p) == APR_SUCCESS) {
        char buf[4096];
        apr_size_t have = 0;
        apr_atomic_inc32(&f->accepted);
        apr_socket_timeout_set(c, apr_time_from_msec(300));
        for (;;) {
            apr_size_t n = sizeof(buf) - 1 - have;
            if (apr_socket_recv(c, buf + have, &n) != APR_SUCCESS || n == 0) {
                break;
            }
            have += n;
            buf[have] = '\0';
            if (strstr(buf, "\r\n\r\n")) { /* a GET: the request ends with its headers */
                apr_size_t len = strlen(f->answer);
                apr_socket_send(c, f->answer, &len);
                apr_atomic_inc32(&f->served);
                have = 0;
            }
        }
        apr_socket_close(c);
        if (apr_atomic_read32(&f->served) >= 4) {
            break;
        }
    }
    apr_pool_destroy(p);
    (void)t; /* no apr_thread_exit: under ASan its pthread_exit trips the sanitizer */
    return NULL;
}

static void test_client(apr_pool_t *p)
{
    static const char body[] = "{\"entity\":{\"bvn\":{\"status\":true},\"first_name\":{\"status\":"
                               "true},\"date_of_birth\":{\"status\":true}}}";
    fake_server f;
    apr_sockaddr_t *sa;
    apr_thread_t *thread;
    apr_status_t rv;
    apr_pool_t *keep1, *keep2;
    bank_idp_conf_t c = {BANK_IDP_DOJAH, NULL, "app", "key", 5};
    bank_idp_result_t r;

    memset(&f, 0, sizeof(f));
    f.answer = apr_psprintf(p,
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                            "Content-Length: %d\r\n\r\n%s",
                            (int)strlen(body), body);
    CHECK(bank_idp_global_init() == 0);
    CHECK(apr_sockaddr_info_get(&sa, "127.0.0.1", APR_INET, 0, 0, p) == APR_SUCCESS);
    CHECK(apr_socket_create(&f.listener, APR_INET, SOCK_STREAM, APR_PROTO_TCP, p) == APR_SUCCESS);
    CHECK(apr_socket_bind(f.listener, sa) == APR_SUCCESS);
    CHECK(apr_socket_listen(f.listener, 8) == APR_SUCCESS);
    apr_socket_addr_get(&sa, APR_LOCAL, f.listener);
    c.base_url = apr_psprintf(p, "http://127.0.0.1:%d", (int)sa->port);
    CHECK(apr_thread_create(&thread, NULL, serve, &f, p) == APR_SUCCESS);

    apr_pool_create(&keep1, p);
    apr_pool_create(&keep2, p);
    bank_idp_check(p, keep1, &c, &ada, &r);
    CHECK(r.verdict == BANK_IDP_MATCH && !r.reused);
    bank_idp_check(p, keep1, &c, &ada, &r); /* the same thread's handle: its connection */
    CHECK(r.verdict == BANK_IDP_MATCH && r.reused);
    CHECK(apr_atomic_read32(&f.accepted) == 1);
    bank_idp_check(p, keep2, &c, &ada, &r); /* another thread's handle: its own */
    CHECK(r.verdict == BANK_IDP_MATCH && !r.reused);
    CHECK(apr_atomic_read32(&f.accepted) == 2);
    apr_pool_destroy(keep1); /* the handle goes with its pool */
    bank_idp_check(p, keep2, &c, &ada, &r);
    CHECK(r.verdict == BANK_IDP_MATCH && r.reused);
    apr_thread_join(&rv, thread);
    apr_pool_destroy(keep2);
    apr_socket_close(f.listener);

    /* nobody listens any more: unavailable, with libcurl's reason */
    apr_pool_create(&keep1, p);
    bank_idp_check(p, keep1, &c, &ada, &r);
    CHECK(r.verdict == BANK_IDP_UNAVAILABLE && r.why && strstr(r.why, "no answer: "));
    apr_pool_destroy(keep1);
}

static void run_tests(apr_pool_t *p)
{
    test_urls(p);
    test_credentials(p);
    test_requests(p);
    test_dates(p);
    test_dojah(p);
    test_prembly(p);
    test_breaker(p);
    test_client(p);
}
