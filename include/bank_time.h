/* UTC time and the calendar: the API's timestamp form, what either database hands back.
 * No httpd dependency, no TZ, no mktime/timegm. */
#ifndef BANK_TIME_H
#define BANK_TIME_H

#include <apr_pools.h>
#include <apr_time.h>

/* Days in a month of the proleptic Gregorian calendar (28..31), or 0 if month is not
 * 1..12: one leap-year rule for timestamps and dates of birth. */
int bank_days_in_month(int year, int month);
/* 2026-11-22T07:40:22.123Z (UTC, millisecond precision). */
char *bank_time_iso(apr_pool_t *p, apr_time_t t);
/* Parses what either database hands back for a timestamp: ISO 8601 with 'T' or ' ',
 * optional fraction, and 'Z', '+HH', '+HH:MM', '+HHMM', '+HH:MM:SS' or no zone (taken as
 * UTC). PostgreSQL prints timestamptz in the session's TimeZone with its offset, so any
 * TimeZone reads back as the same instant.
 * Returns 0 and the instant, or -1. */
int bank_time_parse(const char *s, apr_time_t *out);
/* A timestamp as either database returns it, in the API's form (bank_time_iso); as stored
 * if bank_time_parse cannot read it, NULL for NULL. */
const char *bank_time_api(apr_pool_t *p, const char *db_text);

#endif
