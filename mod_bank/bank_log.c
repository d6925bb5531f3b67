/* The core's log (bank_log.h): asks the host whether it wants the level, then formats into a
 * buffer of its own and calls the host. */
#include <apr_strings.h>
#include "bank_log.h"

static bank_log_fn host_log = NULL;
static bank_log_wants_fn host_wants = NULL;

void bank_log_set(bank_log_fn fn)
{
    host_log = fn;
}

void bank_log_set_wants(bank_log_wants_fn wants)
{
    host_wants = wants;
}

void bank_log(bank_log_where where, const char *file, int line, int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (!host_log || (host_wants && !host_wants(where, level))) {
        return;
    }
    va_start(ap, fmt);
    apr_vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    host_log(where, file, line, level, msg);
}
