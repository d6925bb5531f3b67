/* An identity provider's answer (mod_bank/bank_idp.c) on arbitrary bytes: the first byte picks
 * the dialect and the HTTP status, the rest is the body. Every answer is judged into exactly
 * one verdict with a reason; a match carries the names to keep, a mismatch what differs; a
 * refused status stays refused whatever the body; a provider's date reads as YYYY-MM-DD or not
 * at all. */
#include "fuzz.h"

#include <apr_lib.h>
#include "bank_idp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const long statuses[] = {200, 200, 200, 200, 404, 400, 401, 403, 402, 500, 503, 429};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    const bank_idp_query_t q = {"22212345678", "1990-08-02", "Ada", "Obi"};
    bank_idp_kind kind;
    bank_idp_result_t r;
    const char *date;
    long status;
    int i;

    if (size < 1) {
        apr_pool_destroy(p);
        return 0;
    }
    kind = data[0] & 1 ? BANK_IDP_PREMBLY : BANK_IDP_DOJAH;
    status = statuses[(data[0] >> 1) % (sizeof(statuses) / sizeof(statuses[0]))];
    memset(&r, 0, sizeof(r));
    bank_idp_judge(p, kind, status, (const char *)data + 1, size - 1, &q, &r);
    FUZZ_CHECK(r.why != NULL && r.http_status == status);
    FUZZ_CHECK(r.verdict >= BANK_IDP_MATCH && r.verdict <= BANK_IDP_REFUSED);
    FUZZ_CHECK((r.verdict == BANK_IDP_MATCH) == (r.first != NULL && r.last != NULL));
    FUZZ_CHECK((r.verdict == BANK_IDP_MISMATCH) == (r.diff != BANK_IDP_DIFF_NONE));
    if (status == 401 || status == 403) {
        FUZZ_CHECK(r.verdict == BANK_IDP_REFUSED);
    }
    if (status >= 500) {
        FUZZ_CHECK(r.verdict == BANK_IDP_UNAVAILABLE);
    }
    if (r.verdict == BANK_IDP_MATCH && kind == BANK_IDP_PREMBLY) {
        FUZZ_CHECK(status == 200 || status == 404);
    }

    date = bank_idp_date(p, fuzz_cstr(p, data + 1, size - 1));
    if (date) {
        FUZZ_CHECK(strlen(date) == 10 && date[4] == '-' && date[7] == '-');
        for (i = 0; i < 10; i++) {
            FUZZ_CHECK(i == 4 || i == 7 || apr_isdigit(date[i]));
        }
    }
    apr_pool_destroy(p);
    return 0;
}
