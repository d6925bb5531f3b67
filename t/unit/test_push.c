/* FCM HTTP v1's pure side (bank_push.c): the service account file, the RS256 JWT (verified
 * here with the public key by OpenSSL), the token exchange's answer, the message, the judging
 * of FCM's answers and the retry schedule; then the client (bank_push_client.c) against the
 * fake FCM and OAuth server t/fake/fcm.py, which checks the JWT as Google does. */
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <apr_strings.h>
#include <apr_file_io.h>
#include <apr_thread_proc.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include "unit.h"
#include "bank_push.h"
#include "bank_encoding.h"
#include "bank_json.h"

#define KEY "t/fake/push_test_key.pem"
#define PUB "t/fake/push_test_key.pub"
#define EMAIL "push@test-project.iam.gserviceaccount.com"

static char *slurp(apr_pool_t *p, const char *path)
{
    apr_file_t *f;
    apr_finfo_t fi;
    char *buf;
    apr_size_t n;

    if (apr_file_open(&f, path, APR_FOPEN_READ, 0, p) != APR_SUCCESS ||
        apr_file_info_get(&fi, APR_FINFO_SIZE, f) != APR_SUCCESS) {
        return NULL;
    }
    n = (apr_size_t)fi.size;
    buf = apr_pcalloc(p, n + 1);
    apr_file_read_full(f, buf, n, &n);
    apr_file_close(f);
    return buf;
}

static const char *account_json(apr_pool_t *p, const char *token_uri)
{
    json_object *o = bank_json_own(p, json_object_new_object());
    json_object_object_add(o, "type", json_object_new_string("service_account"));
    json_object_object_add(o, "client_email", json_object_new_string(EMAIL));
    json_object_object_add(o, "private_key", json_object_new_string(slurp(p, KEY)));
    json_object_object_add(o, "token_uri", json_object_new_string(token_uri));
    return bank_json_text(p, o);
}

/* The JWT's signature checks out with the public key, and its claims are Google's. */
static void test_jwt(apr_pool_t *p)
{
    const char *text = account_json(p, "https://oauth2.googleapis.com/token"), *jwt, *dot1, *dot2;
    bank_push_account_t a;
    unsigned char *sig, *claims_raw;
    apr_size_t siglen, clen;
    BIO *bio;
    EVP_PKEY *pub;
    EVP_MD_CTX *md;
    json_object *claims, *v;
    const char *why;

    CHECK(bank_push_account_parse(p, text, strlen(text), &a) == NULL);
    jwt = bank_push_jwt(p, &a, 1700000000);
    CHECK(jwt != NULL);
    if (!jwt) {
        return;
    }
    dot1 = strchr(jwt, '.');
    dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    CHECK(dot1 && dot2);
    if (!dot2) {
        return;
    }
    CHECK_STR(
        apr_pstrndup(p, jwt, (apr_size_t)(dot1 - jwt)),
        bank_b64url_encode(p, (const unsigned char *)"{\"alg\":\"RS256\",\"typ\":\"JWT\"}", 27));
    CHECK(bank_b64url_decode(p, dot2 + 1, &sig, &siglen) == 0 && siglen == 256);
    bio = BIO_new_mem_buf(slurp(p, PUB), -1);
    pub = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    CHECK(pub != NULL);
    md = EVP_MD_CTX_new();
    CHECK(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pub) == 1);
    CHECK(EVP_DigestVerify(md, sig, siglen, (const unsigned char *)jwt, (size_t)(dot2 - jwt)) == 1);
    /* one flipped bit of the signed text: refused */
    EVP_MD_CTX_free(md);
    md = EVP_MD_CTX_new();
    EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pub);
    {
        char *bad = apr_pstrndup(p, jwt, (apr_size_t)(dot2 - jwt));
        bad[dot1 - jwt + 3] ^= 1;
        CHECK(EVP_DigestVerify(md, sig, siglen, (const unsigned char *)bad, strlen(bad)) != 1);
    }
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pub);
    CHECK(bank_b64url_decode(p, apr_pstrndup(p, dot1 + 1, (apr_size_t)(dot2 - dot1 - 1)),
                             &claims_raw, &clen) == 0);
    claims = bank_json_parse_object(p, (const char *)claims_raw, clen, &why);
    CHECK(claims != NULL);
    if (!claims) {
        return;
    }
    CHECK(json_object_object_get_ex(claims, "iss", &v) &&
          strcmp(json_object_get_string(v), EMAIL) == 0);
    CHECK(json_object_object_get_ex(claims, "scope", &v) &&
          strcmp(json_object_get_string(v), BANK_PUSH_SCOPE) == 0);
    CHECK(json_object_object_get_ex(claims, "aud", &v) &&
          strcmp(json_object_get_string(v), "https://oauth2.googleapis.com/token") == 0);
    CHECK(json_object_object_get_ex(claims, "iat", &v) && json_object_get_int64(v) == 1700000000);
    CHECK(json_object_object_get_ex(claims, "exp", &v) && json_object_get_int64(v) == 1700003600);
    /* the key's id, when the file gives it, as the header's kid */
    a.key_id = "k-123";
    jwt = bank_push_jwt(p, &a, 1700000000);
    {
        const char *h = "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"k-123\"}";
        const char *want = bank_b64url_encode(p, (const unsigned char *)h, strlen(h));
        CHECK(jwt && strncmp(jwt, want, strlen(want)) == 0 && jwt[strlen(want)] == '.');
    }
    CHECK(
        strncmp(bank_push_token_body(p, "a.b.c"),
                "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b.c",
                200) == 0);
}

static void test_account_refused(apr_pool_t *p)
{
    bank_push_account_t a;
    const char *t;

    CHECK(bank_push_account_parse(p, "[]", 2, &a) != NULL);
    t = "{\"client_email\":\"x@y\",\"token_uri\":\"https://o/t\"}";
    CHECK(strstr(bank_push_account_parse(p, t, strlen(t), &a), "private_key") != NULL);
    t = "{\"client_email\":\"x@y\",\"token_uri\":\"https://o/t\",\"private_key\":\"nope\"}";
    CHECK(strstr(bank_push_account_parse(p, t, strlen(t), &a), "PEM RSA") != NULL);
    t = account_json(p, "http://oauth.example.com/token"); /* http:// only to loopback */
    CHECK(strstr(bank_push_account_parse(p, t, strlen(t), &a), "token_uri") != NULL);
    t = account_json(p, "http://127.0.0.1:9/token");
    CHECK(bank_push_account_parse(p, t, strlen(t), &a) == NULL);
}

static void test_token_answer(apr_pool_t *p)
{
    const char *bearer = NULL, *ok = "{\"access_token\":\"ya29.abc-_\",\"expires_in\":1800}";
    apr_int64_t exp = 0;

    CHECK(bank_push_token_answer(p, 200, ok, strlen(ok), &bearer, &exp) == NULL);
    CHECK_STR(bearer, "ya29.abc-_");
    CHECK(exp == 1800);
    CHECK(bank_push_token_answer(p, 400, ok, strlen(ok), &bearer, &exp) != NULL);
    CHECK(bank_push_token_answer(p, 200, "{}", 2, &bearer, &exp) != NULL);
    /* a bearer that could forge a header line is refused */
    ok = "{\"access_token\":\"a\\r\\nX: y\"}";
    CHECK(bank_push_token_answer(p, 200, ok, strlen(ok), &bearer, &exp) != NULL);
}

static void test_body(apr_pool_t *p)
{
    bank_push_msg_t m = {
        7, "dev-1", 1, "5000", "NGN", "ADA OBI", "T100", "Transaction successful", "TRF-1"};
    const char *why, *body = bank_push_body(p, &m);
    json_object *o = bank_json_parse_object(p, body, strlen(body), &why), *msg, *x;

    CHECK(o && json_object_object_get_ex(o, "message", &msg));
    if (!o || !msg) {
        return;
    }
    CHECK(json_object_object_get_ex(msg, "token", &x) &&
          strcmp(json_object_get_string(x), "dev-1") == 0);
    CHECK(json_object_object_get_ex(msg, "notification", &x));
    CHECK(strstr(body, "\"title\":\"Transfer successful\"") != NULL);
    CHECK(strstr(body, "\"body\":\"NGN 5000 to ADA OBI: Transaction successful\"") != NULL);
    CHECK(strstr(body, "\"amount\":\"5000\"") && strstr(body, "\"currency\":\"NGN\"") &&
          strstr(body, "\"receiverAccountName\":\"ADA OBI\"") &&
          strstr(body, "\"transactionReference\":\"TRF-1\""));
    m.status_code = "T999";
    CHECK(strstr(bank_push_body(p, &m), "Transfer not completed") != NULL);
}

static void test_judge(apr_pool_t *p)
{
    const char *unreg = "{\"error\":{\"code\":404,\"status\":\"NOT_FOUND\",\"details\":[{"
                        "\"errorCode\":\"UNREGISTERED\"}]}}",
               *bad_token = "{\"error\":{\"code\":400,\"status\":\"INVALID_ARGUMENT\",\"message\":"
                            "\"x\",\"details\":[{\"fieldViolations\":[{\"field\":\"message.token\"}"
                            "]}]}}",
               *bad_other = "{\"error\":{\"code\":400,\"status\":\"INVALID_ARGUMENT\",\"message\":"
                            "\"Invalid JSON payload\"}}";

    CHECK(bank_push_judge(p, 200, "{}", 2) == BANK_PUSH_SENT);
    CHECK(bank_push_judge(p, 0, NULL, 0) == BANK_PUSH_RETRY);
    CHECK(bank_push_judge(p, 429, "", 0) == BANK_PUSH_RETRY);
    CHECK(bank_push_judge(p, 503, "", 0) == BANK_PUSH_RETRY);
    CHECK(bank_push_judge(p, 500, "", 0) == BANK_PUSH_RETRY);
    CHECK(bank_push_judge(p, 401, "", 0) == BANK_PUSH_AUTH);
    CHECK(bank_push_judge(p, 404, unreg, strlen(unreg)) == BANK_PUSH_UNREGISTERED);
    CHECK(bank_push_judge(p, 400, bad_token, strlen(bad_token)) == BANK_PUSH_UNREGISTERED);
    CHECK(bank_push_judge(p, 400, bad_other, strlen(bad_other)) == BANK_PUSH_REJECTED);
    CHECK(bank_push_judge(p, 403, "", 0) == BANK_PUSH_REJECTED);
}

static void test_backoff(void)
{
    apr_interval_time_t d;

    CHECK(bank_push_backoff(1, 0, 0.0) == apr_time_from_sec(1));
    CHECK(bank_push_backoff(1, 0, 0.999999) <= apr_time_from_sec(2));
    CHECK(bank_push_backoff(3, 0, 0.0) == apr_time_from_sec(4)); /* 8 s, half of it at least */
    d = bank_push_backoff(40, 0, 0.999999);
    CHECK(d <= apr_time_from_sec(BANK_PUSH_BACKOFF_MAX) &&
          d > apr_time_from_sec(BANK_PUSH_BACKOFF_MAX - 1));
    CHECK(bank_push_backoff(1, 30, 0.5) == apr_time_from_sec(30)); /* Retry-After wins */
    CHECK(bank_push_backoff(1, 99999, 0.5) == apr_time_from_sec(BANK_PUSH_RETRY_AFTER_MAX));
    CHECK(bank_push_retry_after("120", 0) == 120);
    CHECK(bank_push_retry_after("99999999999", 0) == BANK_PUSH_RETRY_AFTER_MAX);
    CHECK(bank_push_retry_after("soon", 0) == 0);
    CHECK(bank_push_retry_after(NULL, 0) == 0);
    CHECK(bank_push_retry_after("Wed, 25 Nov 2026 10:00:10 GMT", apr_time_from_sec(1795600800)) ==
          11);
}

/* BankPush's arguments: the kind, the project id, the base URL (loopback only over http). */
static void test_fcm_check(apr_pool_t *p)
{
    const char *base = NULL;

    CHECK(bank_push_fcm_check(p, "FCM", "my-project-1", NULL, &base) == NULL);
    CHECK_STR(base, BANK_PUSH_BASE_DEFAULT);
    CHECK(bank_push_fcm_check(p, "fcm", "p", "http://127.0.0.1:8080/", &base) == NULL);
    CHECK_STR(base, "http://127.0.0.1:8080");
    CHECK_STR(bank_push_fcm_check(p, "apns", "p", NULL, &base), "expected fcm, got 'apns'");
    CHECK_STR(bank_push_fcm_check(p, "fcm", "My_Project", NULL, &base),
              "the project id holds lower-case letters, digits and hyphens only (1 to 64), "
              "got 'My_Project'");
    CHECK(bank_push_fcm_check(p, "fcm", "", NULL, &base) != NULL);
    CHECK(bank_push_fcm_check(p, "fcm", apr_psprintf(p, "%065d", 0), NULL, &base) != NULL);
    CHECK(bank_push_fcm_check(p, "fcm", "p", "http://fcm.example.com", &base) != NULL);
    CHECK(strstr(bank_push_fcm_check(p, "fcm", "p", "ftp://x", &base), ", got 'ftp://x'"));
}

static void test_cpu(void)
{
    apr_uint64_t t = 0, i = 0;

    /* user nice system idle iowait irq softirq steal guest guest_nice */
    CHECK(bank_push_cpu_ticks("cpu  100 5 50 800 40 3 2 0 7 0\ncpu0 50 2 25 400 20 1 1 0 3 0\n", &t,
                              &i));
    CHECK(t == 1000 && i == 840);
    CHECK(bank_push_cpu_ticks("cpu 10 0 10 80\n", &t, &i)); /* a kernel without iowait */
    CHECK(t == 100 && i == 80);
    CHECK(!bank_push_cpu_ticks("cpu0 10 0 10 80\n", &t, &i)); /* one CPU's line, not all */
    CHECK(!bank_push_cpu_ticks("cpu 10 0\n", &t, &i));        /* too short */
    CHECK(!bank_push_cpu_ticks("intr 1 2 3\n", &t, &i));
    CHECK(!bank_push_cpu_ticks("", &t, &i));
    CHECK(!bank_push_cpu_ticks("cpu  99999999999999999999999 0 0 0\n", &t, &i)); /* overflow */

    CHECK(bank_push_cpu_spare(1000, 800, 2000, 1300, 10));   /* 50% idle */
    CHECK(bank_push_cpu_spare(1000, 800, 2000, 900, 10));    /* 10% idle: the bound itself */
    CHECK(!bank_push_cpu_spare(1000, 800, 2000, 899, 10));   /* 9.9% */
    CHECK(!bank_push_cpu_spare(1000, 800, 2000, 800, 1));    /* none idle */
    CHECK(bank_push_cpu_spare(1000, 800, 2000, 800, 0));     /* 0: always room */
    CHECK(!bank_push_cpu_spare(1000, 800, 2000, 1799, 100)); /* 100: only all idle */
    CHECK(bank_push_cpu_spare(1000, 800, 2000, 1800, 100));
    CHECK(bank_push_cpu_spare(1000, 800, 1000, 800, 10)); /* no tick passed: no reading */
    CHECK(bank_push_cpu_spare(1000, 800, 900, 700, 10));  /* counters went back */
    CHECK(bank_push_cpu_spare(1000, 800, 1100, 950, 10)); /* idle beyond all: no reading */
}

/* ---- the client against t/fake/fcm.py ---- */

typedef struct {
    pid_t pid;
    int port;
} fake_t;

static int fake_start(apr_pool_t *p, fake_t *f)
{
    const char *dir = apr_psprintf(p, "/tmp/mod_bank-push-unit.%d", getpid());
    const char *port_file = apr_pstrcat(p, dir, "/port", (char *)NULL);
    char *port;
    int i;

    mkdir(dir, 0700);
    unlink(port_file);
    if ((f->pid = fork()) == 0) {
        execlp("python3", "python3", "t/fake/fcm.py", "--port-file", port_file, "--pubkey", PUB,
               "--email", EMAIL, "--project", "test-project", (char *)NULL);
        _exit(127);
    }
    for (i = 0; i < 100; i++) {
        if ((port = slurp(p, port_file)) != NULL && *port) {
            f->port = atoi(port);
            unlink(port_file);
            rmdir(dir);
            return 0;
        }
        usleep(50000);
    }
    return -1;
}

static void fake_stop(fake_t *f)
{
    kill(f->pid, SIGTERM);
    waitpid(f->pid, NULL, 0);
}

/* A control message to the fake, through the client's own HTTP stack would be circular:
 * curl(1) does it. */
static void control(apr_pool_t *p, const fake_t *f, const char *json)
{
    const char *cmd = apr_psprintf(p,
                                   "curl -s -o /dev/null -X POST -H 'Content-Type: "
                                   "application/json' -d '%s' http://127.0.0.1:%d/control",
                                   json, f->port);
    CHECK(system(cmd) == 0);
}

static void test_client(apr_pool_t *p)
{
    fake_t f;
    bank_push_account_t a;
    bank_push_client_t *cl;
    bank_push_conf_t c;
    bank_push_msg_t m[3] = {{1, "tok-ok", 1, "5000", "NGN", "ADA OBI", "T100", "ok", "R1"},
                            {2, "tok-gone", 1, "5000", "NGN", "ADA OBI", "T100", "ok", "R2"},
                            {3, "tok-busy", 1, "5000", "NGN", "ADA OBI", "T100", "ok", "R3"}};
    bank_push_result_t out[3];
    const char *text;

    if (fake_start(p, &f) != 0) {
        CHECK(!"the fake FCM server did not start");
        return;
    }
    text = account_json(p, apr_psprintf(p, "http://127.0.0.1:%d/token", f.port));
    CHECK(bank_push_account_parse(p, text, strlen(text), &a) == NULL);
    c.project = "test-project";
    c.base_url = apr_psprintf(p, "http://127.0.0.1:%d", f.port);
    c.timeout = 2;
    c.account = &a;
    cl = bank_push_client_create(p, &c);
    CHECK(cl != NULL);
    control(p, &f, "{\"token\":\"tok-gone\",\"answers\":[{\"status\":404}]}");
    control(p, &f, "{\"token\":\"tok-busy\",\"answers\":[{\"status\":503,\"retryAfter\":\"7\"}]}");
    CHECK(bank_push_send(cl, p, m, 3, out) == NULL);
    CHECK(out[0].verdict == BANK_PUSH_SENT && out[0].status == 200);
    CHECK(out[1].verdict == BANK_PUSH_UNREGISTERED && out[1].status == 404);
    CHECK(out[2].verdict == BANK_PUSH_RETRY && out[2].status == 503 && out[2].retry_after == 7);
    /* every bearer refused: one new bearer, the call made again */
    control(p, &f, "{\"revoke\":true}");
    CHECK(bank_push_send(cl, p, m, 1, out) == NULL && out[0].verdict == BANK_PUSH_SENT);
    /* a call past the timeout: retried later */
    control(p, &f, "{\"token\":\"tok-ok\",\"answers\":[{\"status\":200,\"delay\":4}]}");
    CHECK(bank_push_send(cl, p, m, 1, out) == NULL && out[0].verdict == BANK_PUSH_RETRY &&
          strstr(out[0].why, "BankPushTimeout") != NULL);
    /* the token endpoint down: no call, every message retried */
    control(p, &f, "{\"revoke\":true,\"tokenStatus\":503}");
    CHECK(bank_push_send(cl, p, m, 2, out) != NULL && out[0].verdict == BANK_PUSH_RETRY &&
          out[1].verdict == BANK_PUSH_RETRY);
    fake_stop(&f);
}

static void run_tests(apr_pool_t *p)
{
    test_jwt(p);
    test_account_refused(p);
    test_token_answer(p);
    test_body(p);
    test_judge(p);
    test_backoff();
    test_fcm_check(p);
    test_cpu();
    test_client(p);
}
