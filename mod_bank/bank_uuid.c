/* RFC 9562 UUIDs: version 4 (random) and version 7 (time-ordered). */
#include <apr_strings.h>
#include <apr_lib.h>
#include <apr_atomic.h>
#include <apr_time.h>

#include "bank_encoding.h"
#include "bank_rand.h"
#include "bank_uuid.h"

/* The 16 bytes in 8-4-4-4-12 form, lower case. */
static char *uuid_text(apr_pool_t *p, const unsigned char *b)
{
    const char *h = bank_hex(p, b, 16);

    return apr_psprintf(p, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
}

char *bank_uuid4(apr_pool_t *p)
{
    unsigned char b[16];

    if (bank_random_id_bytes(b, sizeof(b)) != 0) {
        return NULL;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    return uuid_text(p, b);
}

/* The last version 7 stamp this process gave out: the Unix time in milliseconds shifted left
 * by 12, plus a 12-bit counter (RFC 9562 section 6.2, method 1). Shared by the threads. */
static volatile apr_uint64_t uuid7_last;

/* The next stamp: now's millisecond with a counter of 0, or one past the last stamp when the
 * clock has not moved past it (the same millisecond, or a clock stepped back). Strictly
 * increasing across the process's threads; a counter that overflows carries into the time. */
static apr_uint64_t uuid7_stamp(void)
{
    apr_uint64_t now = ((apr_uint64_t)apr_time_as_msec(apr_time_now())) << 12;

    for (;;) {
        apr_uint64_t last = apr_atomic_read64(&uuid7_last);
        apr_uint64_t next = now > last ? now : last + 1;

        if (apr_atomic_cas64(&uuid7_last, next, last) == last) {
            return next;
        }
    }
}

char *bank_uuid7(apr_pool_t *p)
{
    unsigned char b[16];
    apr_uint64_t stamp;
    apr_uint64_t ms;
    int i;

    if (bank_random_id_bytes(b + 8, 8) != 0) {
        return NULL;
    }
    stamp = uuid7_stamp();
    ms = stamp >> 12;
    for (i = 0; i < 6; i++) { /* unix_ts_ms, 48 bits big-endian */
        b[i] = (unsigned char)(ms >> (8 * (5 - i)));
    }
    b[6] = (unsigned char)(0x70 | ((stamp >> 8) & 0x0f)); /* version 7, counter's high bits */
    b[7] = (unsigned char)(stamp & 0xff);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    return uuid_text(p, b);
}

int bank_is_uuid(const char *s)
{
    int i;

    if (!s) {
        return 0;
    }
    for (i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') {
                return 0;
            }
        } else if (!apr_isxdigit(s[i])) {
            return 0;
        }
    }
    return s[36] == '\0';
}
