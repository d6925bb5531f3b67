/* A payment notice as one line of an archive (bankctl notices archive and restore,
 * docs/operations.md, "A year of operation"): a JSON object of the notice's columns by their
 * names in the table (bank_notice_column_names), every value a string or null, received_at
 * in the API's form (bank_time_iso: a file from one driver restores into the other). No
 * httpd dependency. */
#ifndef BANK_NOTICE_LINE_H
#define BANK_NOTICE_LINE_H

#include <apr_pools.h>
#include "bank_store.h"

/* r as a line, its newline included, in p. */
const char *bank_notice_line(apr_pool_t *p, const bank_notice_record_t *r);
/* The line line[0..len) (without its newline) back into r, values in p: NULL, or why it is
 * no notice (a sentence that never quotes the line): not one JSON object of exactly the 23
 * columns, a value neither a string nor null, a key column (id, partner, reference, status
 * code) null, received_at not a time (it comes back in bank_time_iso's form), amount not a
 * whole number of at most 19 digits. */
const char *bank_notice_unline(apr_pool_t *p, const char *line, apr_size_t len,
                               bank_notice_record_t *r);

#endif
