/* Unit tests for payment notices: payload validation (docs/api.md), the HMAC signature
 * check, and the constant-time secret list. */
#include "unit.h"

#include <apr_lib.h>
#include <apr_strings.h>
#include <apr_thread_proc.h>

#include "bank_json.h"
#include "bank_notice.h"
#include "bank_digest.h"
#include "bank_validate.h"

/* RFC 4231 test case 2 (also: printf %s "$DATA" | openssl dgst -sha512 -hmac Jefe). */
#define KEY "Jefe"
#define DATA "what do ya want for nothing?"
#define SHA256 "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
#define SHA512                                                                                     \
    "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0" \
    "e6fdcaeab1a34d4a6b4b636e070a38bce737"

#define DATA_FIELDS                                                                                \
    "\"currency\":\"NGN\",\"narration\":\"Rent\",\"receiverAccountName\":\"ADA OBI\","             \
    "\"receiverAccountNumber\":\"0123456789\",\"receiverBankCode\":\"999\","                       \
    "\"sessionId\":\"S1\",\"statusCode\":\"T100\",\"statusMessage\":\"Transaction successful\","   \
    "\"transactionReference\":\"TRF-1\",\"walletId\":\"W1\""
#define NOTICE(envelope, amount, charges, extra)                                                   \
    "{" envelope "\"data\":{\"amount\":" amount ",\"charges\":" charges "," DATA_FIELDS extra "}}"
#define PAYMENTS "\"service\":\"payments\",\"type\":\"fund_transfer\","

/* HMAC-SHA-256 of DATA under "Jeff", the key one letter off. */
#define SHA256_JEFF "b756ec8c1f600eb277ee3f04163f581bd1c7e361f34a0727ad79c844ffc4bb83"

static const bank_notice_key_t *k256, *k512;

static int sig(const bank_notice_key_t *k, const char *given)
{
    return bank_notice_signature_ok(k, DATA, strlen(DATA), given);
}

static void test_signature(apr_pool_t *p)
{
    char *upper = apr_pstrdup(p, SHA512), *c;

    for (c = upper; *c; c++) {
        *c = (char)apr_toupper(*c);
    }
    k256 = bank_notice_key_make(p, 256, KEY);
    k512 = bank_notice_key_make(p, 512, KEY);
    CHECK(k256 && k512);
    CHECK(sig(k256, SHA256));
    CHECK(sig(k256, SHA256)); /* the made key is copied, not used up */
    CHECK(sig(k512, SHA512));
    CHECK(sig(k512, upper));
    CHECK(sig(k512, SHA512));
    CHECK(!sig(k256, SHA512));
    CHECK(!sig(k512, SHA256));
    CHECK(!sig(k512, NULL));
    CHECK(!sig(k512, ""));
    CHECK(!sig(k512, apr_pstrndup(p, SHA512, 127)));      /* short */
    CHECK(!sig(k512, apr_pstrcat(p, SHA512, "0", NULL))); /* long */
    CHECK(!sig(k256, apr_pstrcat(p, SHA256, SHA256, NULL)));
    /* same length, one character not hex, or one digit changed */
    CHECK(!sig(k256, "zbdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    CHECK(!sig(k256, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3844"));
    CHECK(!sig(k256, " bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    CHECK(!bank_notice_signature_ok(k256, DATA, strlen(DATA) - 1, SHA256));
    CHECK(!sig(NULL, SHA256));
    /* no key for another algorithm, a NULL or an empty key */
    CHECK(!bank_notice_key_make(p, 384, KEY));
    CHECK(!bank_notice_key_make(p, 0, KEY));
    CHECK(!bank_notice_key_make(p, 256, NULL));
    CHECK(!bank_notice_key_make(p, 256, ""));
}

/* A key changed (a restart that reads a new one): the old key's signatures fail under the new
 * key and its own pass; the old key, freed with its pool, leaves the new one whole. */
static void test_signature_key_change(apr_pool_t *p)
{
    apr_pool_t *old_pool, *new_pool;
    const bank_notice_key_t *old_key, *new_key;

    apr_pool_create(&old_pool, p);
    apr_pool_create(&new_pool, p);
    old_key = bank_notice_key_make(old_pool, 256, KEY);
    new_key = bank_notice_key_make(new_pool, 256, "Jeff");
    CHECK(sig(old_key, SHA256) && !sig(old_key, SHA256_JEFF));
    CHECK(sig(new_key, SHA256_JEFF) && !sig(new_key, SHA256));
    apr_pool_destroy(old_pool);
    CHECK(sig(new_key, SHA256_JEFF) && !sig(new_key, SHA256));
    CHECK(sig(k256, SHA256)); /* the keys of another pool are untouched */
    apr_pool_destroy(new_pool);
}

/* Threads check with the same keys at once, as the worker MPM's do. */
#define SIG_THREADS 4
#define SIG_ROUNDS 500

static void *APR_THREAD_FUNC check_in_thread(apr_thread_t *t, void *data)
{
    int i, *wrong = data;

    for (i = 0; i < SIG_ROUNDS; i++) {
        *wrong += !sig(k256, SHA256) + !sig(k512, SHA512) + sig(k256, SHA256_JEFF);
    }
    apr_thread_exit(t, APR_SUCCESS);
    return NULL;
}

static void test_signature_threads(apr_pool_t *p)
{
    apr_thread_t *t[SIG_THREADS];
    int wrong[SIG_THREADS] = {0}, started = 0, i;
    apr_status_t rv;

    for (i = 0; i < SIG_THREADS; i++) {
        started += apr_thread_create(&t[i], NULL, check_in_thread, &wrong[i], p) == APR_SUCCESS;
    }
    CHECK(started == SIG_THREADS);
    for (i = 0; i < started; i++) {
        apr_thread_join(&rv, t[i]);
        CHECK(wrong[i] == 0);
    }
}

static void test_secret_in(void)
{
    static const char *const two[] = {"old-secret-1", "new-secret-22"};

    CHECK(bank_secret_in("old-secret-1", two, 2));
    CHECK(bank_secret_in("new-secret-22", two, 2));
    CHECK(!bank_secret_in("new-secret-2", two, 2));
    CHECK(!bank_secret_in("old-secret-1 ", two, 2));
    CHECK(!bank_secret_in("", two, 2));
    CHECK(!bank_secret_in(NULL, two, 2));
    CHECK(!bank_secret_in("old-secret-1", two, 0));
}

/* Parses and validates text; returns the notice or NULL, the error fields joined by ','. */
/* The cases below change a field of NOTICE by writing it again in `extra`. The parser refuses
 * a name written twice (test_duplicate); for these, the text is first rewritten with the last
 * of each name kept (json-c's own reading), then parsed for real. */
static const char *last_wins(apr_pool_t *p, const char *text)
{
    const char *why = NULL;
    json_object *o;

    if (bank_json_parse_object(p, text, strlen(text), &why) || !why ||
        !strstr(why, "same member name")) {
        return text;
    }
    o = bank_json_own(p, json_tokener_parse(text));
    return o ? bank_json_text(p, o) : text;
}

static bank_notice_t *parse(apr_pool_t *p, const char *text, const char **fields)
{
    const char *why = NULL, *once = last_wins(p, text);
    json_object *o = bank_json_parse_object(p, once, strlen(once), &why);
    apr_array_header_t *errs = bank_errors_new(p);
    bank_notice_t *n;
    int i;

    *fields = "";
    if (!o) {
        *fields = "(not JSON)";
        return NULL;
    }
    n = bank_notice_read(p, o, errs);
    for (i = 0; i < errs->nelts; i++) {
        const bank_field_error_t *e = &APR_ARRAY_IDX(errs, i, bank_field_error_t);
        *fields = apr_pstrcat(p, *fields, i ? "," : "", e->field, ":", e->rule, NULL);
    }
    return n;
}

static void test_valid(apr_pool_t *p)
{
    const char *f;
    bank_notice_t *n = parse(p, NOTICE(PAYMENTS, "5000", "12.50", ""), &f);

    CHECK_STR(f, "");
    CHECK(n != NULL);
    if (!n) {
        return;
    }
    CHECK_STR(n->status, "received");
    CHECK_STR(n->amount, "5000");
    CHECK_STR(n->charges, "12.50"); /* as sent */
    CHECK_STR(n->currency, "NGN");
    CHECK_STR(n->narration, "Rent");
    CHECK_STR(n->receiver_account_name, "ADA OBI");
    CHECK_STR(n->receiver_account_number, "0123456789");
    CHECK_STR(n->receiver_bank_code, "999");
    CHECK_STR(n->session_id, "S1");
    CHECK_STR(n->status_code, "T100");
    CHECK_STR(n->status_message, "Transaction successful");
    CHECK_STR(n->transaction_reference, "TRF-1");
    CHECK_STR(n->wallet_id, "W1");
    CHECK(n->client_ref == NULL && n->customer_reference == NULL);

    /* integer charges, the largest amount, references of any JSON type, unknown fields */
    n = parse(p,
              NOTICE(PAYMENTS, "9007199254740991", "0",
                     ",\"clientRef\":{\"a\":[1,\"x\"]},\"customerReference\":\"CR-1\",\"extra\":1"),
              &f);
    CHECK_STR(f, "");
    if (n) {
        CHECK_STR(n->amount, "9007199254740991");
        CHECK_STR(n->charges, "0");
        CHECK_STR(n->client_ref, "{\"a\":[1,\"x\"]}");
        CHECK_STR(n->customer_reference, "\"CR-1\"");
    }
    /* the largest integers json-c holds exactly, just inside its saturation points */
    n = parse(p,
              NOTICE(PAYMENTS, "0", "9007199254740992",
                     ",\"clientRef\":-9223372036854775807,"
                     "\"customerReference\":[18446744073709551614,1e30]"),
              &f);
    CHECK_STR(f, "");
    if (n) {
        CHECK_STR(n->charges, "9007199254740992");
        CHECK_STR(n->client_ref, "-9223372036854775807");
        CHECK_STR(n->customer_reference, "[18446744073709551614,1e30]");
    }
    n = parse(p, NOTICE(PAYMENTS, "0", "1E2", ",\"clientRef\":null"), &f);
    CHECK_STR(f, "");
    CHECK(n && n->client_ref == NULL && !strcmp(n->charges, "1E2"));
    /* free text may be empty */
    n = parse(p, NOTICE(PAYMENTS, "1", "1", ",\"narration\":\"\",\"statusMessage\":\"\""), &f);
    CHECK_STR(f, "");
}

static void test_types(apr_pool_t *p)
{
    static const char *const cases[][2] = {
        {NOTICE(PAYMENTS, "5000.0", "1", ""), "data.amount:withoutDecimals"},
        {NOTICE(PAYMENTS, "\"5000\"", "1", ""), "data.amount:number"},
        {NOTICE(PAYMENTS, "null", "1", ""), "data.amount:required"},
        {NOTICE(PAYMENTS, "true", "1", ""), "data.amount:number"},
        {NOTICE(PAYMENTS, "-1", "1", ""), "data.amount:min"},
        {NOTICE(PAYMENTS, "9007199254740992", "1", ""), "data.amount:max"},
        {NOTICE(PAYMENTS, "99999999999999999999999", "1", ""), "data.amount:max"},
        /* integers beyond 64 bits, which json-c saturates, in every numeric field */
        {NOTICE(PAYMENTS, "18446744073709551616", "1", ""), "data.amount:max"},
        {NOTICE(PAYMENTS, "-9223372036854775809", "1", ""), "data.amount:min"},
        {NOTICE(PAYMENTS, "1", "18446744073709551616", ""), "data.charges:range"},
        {NOTICE(PAYMENTS, "1", "99999999999999999999999", ""), "data.charges:range"},
        {NOTICE(PAYMENTS, "1", "-9223372036854775809", ""), "data.charges:range"},
        {NOTICE(PAYMENTS, "1", "1", ",\"clientRef\":18446744073709551616"), "data.clientRef:range"},
        {NOTICE(PAYMENTS, "1", "1", ",\"clientRef\":-9223372036854775809"), "data.clientRef:range"},
        {NOTICE(PAYMENTS, "1", "1", ",\"customerReference\":99999999999999999999"),
         "data.customerReference:range"},
        {NOTICE(PAYMENTS, "1", "1", ",\"customerReference\":{\"id\":[1,-99999999999999999999]}"),
         "data.customerReference:range"},
        {NOTICE(PAYMENTS, "1", "1", ",\"clientRef\":1e999999"), "(not JSON)"},
        {NOTICE(PAYMENTS, "1", "\"10.5\"", ""), "data.charges:number"},
        {NOTICE(PAYMENTS, "1", "[]", ""), "data.charges:number"},
        {NOTICE(PAYMENTS, "1", "-0.5", ""), "data.charges:min"},
        /* negative zero in every spelling, and what underflows to it */
        {NOTICE(PAYMENTS, "1", "-0", ""), "data.charges:min"},
        {NOTICE(PAYMENTS, "1", "-0.0", ""), "data.charges:min"},
        {NOTICE(PAYMENTS, "1", "-0e7", ""), "data.charges:min"},
        {NOTICE(PAYMENTS, "1", "-1e-400", ""), "data.charges:min"},
        {NOTICE(PAYMENTS, "-0", "1", ""), "data.amount:min"},
        /* numbers a double does not give back as written */
        {NOTICE(PAYMENTS, "1", "1e-400", ""), "data.charges:roundTrip"},
        {NOTICE(PAYMENTS, "1", "0.30000000000000001", ""), "data.charges:roundTrip"},
        {NOTICE(PAYMENTS, "1", "9007199254740993", ""), "data.charges:roundTrip"},
        {NOTICE(PAYMENTS, "1", "18446744073709551614", ""), "data.charges:roundTrip"},
        {NOTICE(PAYMENTS, "1", "10.000000000000000001", ""), "data.charges:roundTrip"},
        {NOTICE(PAYMENTS, "1", "1", ",\"currency\":5"), "data.currency:string"},
        {NOTICE(PAYMENTS, "1", "1", ",\"currency\":\"\""), "data.currency:required"},
        {NOTICE(PAYMENTS, "1", "1", ",\"walletId\":null"), "data.walletId:required"},
        {NOTICE(PAYMENTS, "1", "1", ",\"statusCode\":[\"T100\"]"), "data.statusCode:string"},
        {NOTICE("\"service\":\"payments\",", "1", "1", ""), "type:required"},
        {NOTICE("\"service\":1,\"type\":\"fund_transfer\",", "1", "1", ""), "service:string"},
        {"{\"service\":\"payments\",\"type\":\"fund_transfer\"}", "data:required"},
        {"{\"service\":\"payments\",\"type\":\"fund_transfer\",\"data\":[]}", "data:object"},
        {"{\"service\":\"payments\",\"type\":\"fund_transfer\",\"data\":\"x\"}", "data:object"},
        {"{\"service\":\"payments\",\"type\":\"fund_transfer\",\"data\":{\"amount\":1.5}}",
         "data.amount:withoutDecimals,data.charges:required,data.currency:required,"
         "data.narration:required,data.receiverAccountName:required,"
         "data.receiverAccountNumber:required,data.receiverBankCode:required,"
         "data.sessionId:required,data.statusCode:required,data.statusMessage:required,"
         "data.transactionReference:required,data.walletId:required"},
        {"{}", "service:required,type:required,data:required"},
    };
    const char *f;
    int i;

    for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
        bank_notice_t *n = parse(p, cases[i][0], &f);
        CHECK(n == NULL);
        CHECK_STR(f, cases[i][1]);
    }
}

/* A name written twice is refused by the parser, whichever field: nothing to store. */
static void test_duplicate(apr_pool_t *p)
{
    static const char *const texts[] = {
        NOTICE(PAYMENTS, "1", "1", ",\"amount\":777777"),
        NOTICE(PAYMENTS, "1", "1", ",\"transactionReference\":\"TRF-2\""),
        NOTICE(PAYMENTS, "1", "1", ",\"\\u0061mount\":2"),
        "{\"service\":\"payments\",\"service\":\"payments\",\"type\":\"fund_transfer\","
        "\"data\":{}}"};
    const char *why;
    int i;

    for (i = 0; i < (int)(sizeof(texts) / sizeof(texts[0])); i++) {
        why = NULL;
        CHECK(bank_json_parse_object(p, texts[i], strlen(texts[i]), &why) == NULL);
        CHECK(why && strstr(why, "same member name"));
    }
}

static void test_ignored(apr_pool_t *p)
{
    const char *f;
    bank_notice_t *n = parse(p,
                             "{\"service\":\"payments\",\"type\":\"reversal\",\"data\":{"
                             "\"transactionReference\":\"TRF-2\",\"statusCode\":\"R1\"}}",
                             &f);

    CHECK_STR(f, "");
    CHECK(n && !strcmp(n->status, "ignored") && !strcmp(n->type, "reversal"));
    CHECK(n && n->amount == NULL && n->wallet_id == NULL && n->charges == NULL);
    n = parse(p, NOTICE("\"service\":\"cards\",\"type\":\"fund_transfer\",", "7", "1", ""), &f);
    CHECK(n && !strcmp(n->status, "ignored") && !strcmp(n->amount, "7"));
    /* the key is still required, and present fields still have their types */
    parse(p, "{\"service\":\"x\",\"type\":\"y\",\"data\":{\"amount\":\"1\"}}", &f);
    CHECK_STR(f, "data.amount:number,data.statusCode:required,data.transactionReference:required");
    /* the known pair is case-sensitive */
    n = parse(p, NOTICE("\"service\":\"Payments\",\"type\":\"fund_transfer\",", "7", "1", ""), &f);
    CHECK(n && !strcmp(n->status, "ignored"));
}

static void run_tests(apr_pool_t *p)
{
    test_signature(p);
    test_signature_key_change(p);
    test_signature_threads(p);
    test_secret_in();
    test_valid(p);
    test_types(p);
    test_ignored(p);
    test_duplicate(p);
}
