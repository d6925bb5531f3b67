/* RFC 4122 version 4 UUIDs. */
#include <apr_strings.h>
#include <apr_lib.h>

#include "bank_encoding.h"
#include "bank_rand.h"
#include "bank_uuid.h"

char *bank_uuid4(apr_pool_t *p)
{
    unsigned char b[16];
    char *h;

    if (bank_random_bytes(b, sizeof(b)) != 0) {
        return NULL;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    h = bank_hex(p, b, sizeof(b));
    return apr_psprintf(p, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
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
