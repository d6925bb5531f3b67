/* The core's log (bank_log.h): formats into a buffer of its own and calls the host. */
#include <apr_strings.h>
#include "bank_log.h"

static bank_log_fn host_log = NULL;

void bank_log_set(bank_log_fn fn)
{
    host_log = fn;
}

void bank_log(bank_log_where where, const char *file, int line, int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (!host_log) {
        return;
    }
    va_start(ap, fmt);
    apr_vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    host_log(where, file, line, level, msg);
}
