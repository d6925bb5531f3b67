/* UTC time: the API's timestamp form, what either database hands back, and the calendar. */
#include <apr_strings.h>
#include <apr_lib.h>

#include "bank_time.h"

/* Proleptic Gregorian calendar <-> days since 1970-01-01 (H. Hinnant's algorithms), so
 * neither TZ nor the C library's mktime/timegm is involved. */
static apr_int64_t days_from_civil(apr_int64_t y, int m, int d)
{
    apr_int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(apr_int64_t z, apr_int64_t *y, int *m, int *d)
{
    apr_int64_t era, doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* Floor division, so instants before 1970 land on the right day and millisecond. */
static apr_int64_t floor_div(apr_int64_t a, apr_int64_t b)
{
    apr_int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

char *bank_time_iso(apr_pool_t *p, apr_time_t t)
{
    apr_int64_t ms = floor_div(t, 1000);
    apr_int64_t secs = floor_div(ms, 1000);
    apr_int64_t days = floor_div(secs, 86400);
    apr_int64_t sod = secs - days * 86400, y;
    int m, d;

    civil_from_days(days, &y, &m, &d);
    return apr_psprintf(p, "%04" APR_INT64_T_FMT "-%02d-%02dT%02d:%02d:%02d.%03dZ", y, m, d,
                        (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60),
                        (int)(ms - secs * 1000));
}

/* Reads exactly n digits at *s into *v and advances; -1 if any is not a digit. */
static int take_digits(const char **s, int n, int *v)
{
    int i;

    *v = 0;
    for (i = 0; i < n; i++) {
        if (!apr_isdigit((*s)[i])) {
            return -1;
        }
        *v = *v * 10 + ((*s)[i] - '0');
    }
    *s += n;
    return 0;
}

static int take_char(const char **s, char c)
{
    if (**s != c) {
        return -1;
    }
    (*s)++;
    return 0;
}

int bank_days_in_month(int year, int month)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

    if (month < 1 || month > 12) {
        return 0;
    }
    return month == 2 ? 28 + leap : mdays[month - 1];
}

/* Fraction: 1..9 digits, kept to the microsecond. */
static int take_fraction(const char **s, apr_int64_t *usec)
{
    int n = 0;

    *usec = 0;
    if (**s != '.') {
        return 0;
    }
    (*s)++;
    while (apr_isdigit(**s) && n < 9) {
        if (n < 6) {
            *usec = *usec * 10 + (**s - '0');
        }
        (*s)++;
        n++;
    }
    if (n == 0 || apr_isdigit(**s)) {
        return -1;
    }
    for (; n < 6; n++) {
        *usec *= 10;
    }
    return 0;
}

/* Zone: nothing (UTC), Z, +HH, +HH:MM, +HHMM or +HH:MM:SS (and '-'); offset in seconds
 * east. PostgreSQL prints the seconds for zones whose offset had them (local mean time
 * before 1900-ish in many TimeZone settings). */
static int take_zone(const char **s, int *offset)
{
    int sign, hh, mm = 0, ss = 0;

    *offset = 0;
    if (**s == '\0') {
        return 0;
    }
    if (**s == 'Z') {
        (*s)++;
        return 0;
    }
    if (**s != '+' && **s != '-') {
        return -1;
    }
    sign = **s == '-' ? -1 : 1;
    (*s)++;
    if (take_digits(s, 2, &hh) != 0) {
        return -1;
    }
    if (**s == ':') {
        (*s)++;
        if (take_digits(s, 2, &mm) != 0 ||
            (**s == ':' && (take_char(s, ':') != 0 || take_digits(s, 2, &ss) != 0))) {
            return -1;
        }
    } else if (**s != '\0' && take_digits(s, 2, &mm) != 0) {
        return -1;
    }
    if (hh > 23 || mm > 59 || ss > 59) {
        return -1;
    }
    *offset = sign * (hh * 3600 + mm * 60 + ss);
    return 0;
}

int bank_time_parse(const char *s, apr_time_t *out)
{
    int y, mo, d, h, mi, se, offset;
    apr_int64_t usec, secs;

    if (!s || !out) {
        return -1;
    }
    if (take_digits(&s, 4, &y) || take_char(&s, '-') || take_digits(&s, 2, &mo) ||
        take_char(&s, '-') || take_digits(&s, 2, &d)) {
        return -1;
    }
    if (*s != 'T' && *s != ' ') {
        return -1;
    }
    s++;
    if (take_digits(&s, 2, &h) || take_char(&s, ':') || take_digits(&s, 2, &mi) ||
        take_char(&s, ':') || take_digits(&s, 2, &se) || take_fraction(&s, &usec) ||
        take_zone(&s, &offset) || *s != '\0') {
        return -1;
    }
    if (d < 1 || d > bank_days_in_month(y, mo) || h > 23 || mi > 59 || se > 59) {
        return -1;
    }
    secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset;
    *out = (apr_time_t)(secs * APR_USEC_PER_SEC + usec);
    return 0;
}

const char *bank_time_api(apr_pool_t *p, const char *db_text)
{
    apr_time_t t;
    return db_text && bank_time_parse(db_text, &t) == 0 ? bank_time_iso(p, t) : db_text;
}
