/* The core's log: one function the host installs (httpd's error log in the module, stderr in
 * bankctl, a capture in the C tests), so the core says what happened where it happens and
 * returns verdicts, never log fields. No httpd dependency.
 *
 * Each message starts with its tag, BANKLOGNO(n): mod_bank's own numbers (httpd's APLOGNO
 * numbers belong to httpd), each at one call site (make lint checks it). */
#ifndef BANK_LOG_H
#define BANK_LOG_H

#include <stdarg.h>

#define BANKLOGNO(n) "BANK" #n ": "

/* Levels, numbered as syslog and httpd number them. */
enum {
    BANK_LOG_CRIT = 2,
    BANK_LOG_ERR = 3,
    BANK_LOG_WARNING = 4,
    BANK_LOG_NOTICE = 5,
    BANK_LOG_INFO = 6,
    BANK_LOG_DEBUG = 7
};

/* Where a message belongs, as the host reads it (the module: the request, else the server);
 * the core passes on what its caller gave it and never looks inside. May be NULL. */
typedef const void *bank_log_where;

/* The host's log function: msg is formatted, without a newline. */
typedef void (*bank_log_fn)(bank_log_where where, const char *file, int line, int level,
                            const char *msg);

/* The host's answer to "would a message at level be written here?", asked before the core
 * formats one: nothing is formatted for a level the host drops. */
typedef int (*bank_log_wants_fn)(bank_log_where where, int level);

/* Installs fn for the whole process (NULL: messages are dropped). Set once, at start. */
void bank_log_set(bank_log_fn fn);

/* Installs the host's level check (NULL, the default: every message is formatted). */
void bank_log_set_wants(bank_log_wants_fn wants);

#define BANK_LOG_MARK __FILE__, __LINE__
/* Formats and hands a message to the host's function, if the host wants its level. Longer
 * than 1 KiB: cut there. */
void bank_log(bank_log_where where, const char *file, int line, int level, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
