/* The password-hash parser and verifier (mod_bank/bank_password.c) on arbitrary stored hashes,
 * checked against the password "password" (the seeds' hashes are of it, so both MATCH and
 * MISMATCH paths run), and the dummy made after it (bank_password_dummy_like). Built with
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which lowers the code's cost ceilings (bank_password.c,
 * bank_password_argon2.c) so that a run is parsing, not scrypt or argon2. */
#include "fuzz.h"

#include "bank_password.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    const char *stored = fuzz_cstr(p, data, size);
    int v = bank_password_verify(p, "password", stored);

    FUZZ_CHECK(v == BANK_PW_MATCH || v == BANK_PW_MISMATCH || v == BANK_PW_MALFORMED);
    if (strncmp(stored, "$scrypt$", 8) != 0 && strncmp(stored, "$bcrypt$", 8) != 0 &&
        strncmp(stored, "$2", 2) != 0 && strncmp(stored, "$argon2", 7) != 0) {
        FUZZ_CHECK(v == BANK_PW_MALFORMED);
    }
    /* A hash read within the bounds has a dummy of its cost: well formed, matching neither
     * password, and of the same cost again. */
    {
        const char *cost = NULL, *again = NULL, *d = bank_password_dummy_like(p, stored, &cost);
        if (d) {
            FUZZ_CHECK(v != BANK_PW_MALFORMED);
            FUZZ_CHECK(bank_password_verify(p, "password", d) == BANK_PW_MISMATCH);
            FUZZ_CHECK(bank_password_dummy_like(p, d, &again) && !strcmp(cost, again));
        }
    }
    /* A hash that matches "password" matches nothing else; a readable one stays readable. */
    if (v != BANK_PW_MALFORMED) {
        int w = bank_password_verify(p, "passwore", stored);
        FUZZ_CHECK(w == BANK_PW_MISMATCH || (w == BANK_PW_MATCH && v == BANK_PW_MISMATCH));
    }
    apr_pool_destroy(p);
    return 0;
}
