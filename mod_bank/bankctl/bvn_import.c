/* bankctl bvn import: an identity provider's export loaded from a file, never through
 * arguments (which other local users see in ps). One record a line, the columns
 * bvn,date_of_birth,first_name,last_name[,phone], no quoting; each record checked as bvn add
 * checks it, a bad one reported by its line number (never its content) and skipped; the good
 * ones written --batch at a time, each batch one transaction, so that an interrupted import
 * leaves whole batches only and a second run replaces what the first loaded with the same
 * values. On a terminal, standard error shows how far it has got. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <apr_strings.h>
#include <apr_file_io.h>
#include <apr_file_info.h>
#include <apr_time.h>
#include "bankctl.h"
#include "bank_time.h"

#define BATCH_DEFAULT 1000
#define BATCH_MAX 10000
#define LINE_MAX_BYTES 2048 /* five fields well over their limits */
#define PROGRESS_EVERY apr_time_from_msec(500)

static const char cmd[] = "bvn import";
static const char *const columns[] = {"bvn", "date_of_birth", "first_name", "last_name", "phone"};

typedef struct {
    apr_file_t *in;
    apr_off_t size; /* of a regular file, else 0: no time left shown */
    apr_off_t read; /* bytes read */
    unsigned long line, loaded, replaced, refused;
    int tty;
    apr_time_t start, shown;
} import_t;

static void progress(import_t *im, int last)
{
    apr_time_t now = apr_time_now();
    double secs = (double)(now - im->start) / APR_USEC_PER_SEC;
    unsigned long done = im->loaded + im->replaced;

    if (!im->tty || (!last && now - im->shown < PROGRESS_EVERY)) {
        return;
    }
    im->shown = now;
    fprintf(stderr, "\r\033[Kbvn import: %lu records, %.0f/s", done, secs > 0 ? done / secs : 0.0);
    if (im->size > 0 && im->read > 0 && !last) {
        double left = secs * (double)(im->size - im->read) / (double)im->read;
        fprintf(stderr, ", %.0f s left", left);
    }
    fputs(last ? "\n" : "", stderr);
    fflush(stderr);
}

static void refuse(import_t *im, const char *what, const char *why)
{
    im->refused++;
    if (im->tty) {
        fputs("\r\033[K", stderr);
    }
    fprintf(stderr, "bankctl: %s: line %lu: %s%s%s\n", cmd, im->line, what, why ? " " : "",
            why ? why : "");
}

/* Splits line (its end of line removed) into rec; NULL, or what is wrong with its shape. */
static const char *split(char *line, bank_bvn_record_t *rec)
{
    char *f[5], *s = line;
    int n = 0;

    if (strchr(line, '"')) {
        return "has a double quote (fields are not quoted)";
    }
    for (;;) {
        f[n++] = s;
        if (!(s = strchr(s, ','))) {
            break;
        }
        if (n == 5) {
            return "does not have 4 or 5 fields";
        }
        *s++ = '\0';
    }
    if (n < 4) {
        return "does not have 4 or 5 fields";
    }
    rec->bvn = f[0];
    rec->date_of_birth = f[1];
    rec->first_name = f[2];
    rec->last_name = f[3];
    rec->phone = n == 5 && f[4][0] ? f[4] : NULL;
    return NULL;
}

/* What next_line found. */
enum { LINE_END, LINE_OK, LINE_LONG, LINE_NUL };

/* Reads the next line into buf (NUL-terminated, without its end of line: LF, or CR LF), at
 * most size - 1 bytes: LINE_OK; LINE_LONG if it did not fit (the rest of it is read and
 * dropped); LINE_NUL if it holds a NUL byte (a UTF-16 export, say); LINE_END at the end of
 * the input. A read error other than the end stops the import with its line number. */
static int next_line(import_t *im, char *buf, apr_size_t size)
{
    apr_size_t len = 0, all = 0;
    apr_status_t rv;
    int nul = 0;
    char ch;

    while ((rv = apr_file_getc(&ch, im->in)) == APR_SUCCESS) {
        im->read++;
        if (ch == '\n') {
            break;
        }
        nul |= ch == '\0';
        if (len < size - 1) {
            buf[len++] = ch;
        }
        all++;
    }
    if (rv != APR_SUCCESS && rv != APR_EOF) {
        die(1, "%s: cannot read line %lu of the input", cmd, im->line + 1);
    }
    if (rv == APR_EOF && all == 0) {
        return LINE_END;
    }
    im->line++;
    if (all > 0 && len == all && buf[len - 1] == '\r') {
        len--, all--;
    }
    buf[len] = '\0';
    /* a UTF-8 byte order mark (a spreadsheet's "CSV UTF-8") before the first line */
    if (im->line == 1 && len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) {
        memmove(buf, buf + 3, len - 2);
        all -= 3;
    }
    /* buf holds size - 2 bytes of a line, its CR and the NUL ending the string */
    return nul ? LINE_NUL : all > size - 2 ? LINE_LONG : LINE_OK;
}

/* PostgreSQL, after the first batch: the table analysed (its owner may; for another role
 * PostgreSQL only warns), and if its statistics now count rows, statements planned once
 * for all again, which saves a plan per statement; else they stay planned each run. */
static void plan_for_size(ctl_t *c)
{
    const char *rows = NULL;

    if (bank_db_query(c->db, "ANALYZE bvn_records") == 0 &&
        bank_db_query_value(
            c->db, "SELECT reltuples > 0 FROM pg_class WHERE oid = 'bvn_records'::regclass",
            &rows) == 0 &&
        rows && strcmp(rows, "t") == 0) {
        bank_db_query(c->db, "RESET plan_cache_mode");
    }
}

/* Writes the batch in one transaction, with its own pool for the handle's results; a batch
 * the database turned away for a passing reason (busy, the connection re-opened) is rolled
 * back, so it is tried again, twice at most, a second apart. */
static void write_batch(ctl_t *c, import_t *im, apr_pool_t *bp, const bank_bvn_record_t *recs,
                        int n)
{
    apr_pool_t *before = bank_db_use_pool(c->db, bp);
    int replaced = 0, tries = 0;
    bank_db_rc rc;

    if (!before) {
        die(1, "%s: a transaction was left open", cmd);
    }
    while ((rc = bank_store_bvn_records_load(c->db, recs, n, bank_time_iso(bp, apr_time_now()),
                                             &replaced)) != BANK_DB_OK &&
           bank_db_transient(c->db, rc) && ++tries <= 2) {
        apr_sleep(apr_time_from_sec(1));
    }
    if (rc != BANK_DB_OK) {
        if (im->tty) {
            fputs("\r\033[K", stderr);
        }
        fprintf(stderr,
                "bankctl: %s: %lu loaded, %lu replaced, %lu refused before the failure; the "
                "batch that failed (up to line %lu) was rolled back\n",
                cmd, im->loaded, im->replaced, im->refused, im->line);
        ctl_db_fail(c, "bvn import: a batch failed");
    }
    bank_db_use_pool(c->db, before);
    im->replaced += (unsigned long)replaced;
    im->loaded += (unsigned long)(n - replaced);
}

/* The record's fields copied from the line (which is read over) into the batch's pool. */
static void keep(apr_pool_t *bp, bank_bvn_record_t *rec)
{
    rec->bvn = apr_pstrdup(bp, rec->bvn);
    rec->date_of_birth = apr_pstrdup(bp, rec->date_of_birth);
    rec->first_name = apr_pstrdup(bp, rec->first_name);
    rec->last_name = apr_pstrdup(bp, rec->last_name);
    rec->phone = rec->phone ? apr_pstrdup(bp, rec->phone) : NULL;
}

/* The input, file or standard input ("-"), into im->in, and a regular file's size. */
static void open_input(ctl_t *c, import_t *im, const char *file)
{
    apr_finfo_t fi;

    if (strcmp(file, "-") == 0) {
        if (apr_file_open_flags_stdin(&im->in, APR_FOPEN_BUFFERED, c->pool) != APR_SUCCESS) {
            die(1, "%s: cannot read standard input", cmd);
        }
        return;
    }
    if (apr_file_open(&im->in, file, APR_FOPEN_READ | APR_FOPEN_BUFFERED, APR_OS_DEFAULT,
                      c->pool) != APR_SUCCESS) {
        die(1, "%s: cannot open %s", cmd, file);
    }
    if (apr_file_info_get(&fi, APR_FINFO_TYPE | APR_FINFO_SIZE, im->in) != APR_SUCCESS ||
        fi.filetype == APR_DIR) {
        die(1, "%s: %s is not a file to read", cmd, file);
    }
    im->size = fi.filetype == APR_REG ? fi.size : 0;
}

/* The line next_line read into buf (got: its verdict) as a record in rec (its fields in buf):
 * 1; 0 if it is refused (said) or is no record (a blank line, the columns' names as a
 * header). lp: the line's pool. */
static int record_of(import_t *im, apr_pool_t *lp, char *buf, int got, apr_time_t now,
                     bank_bvn_record_t *rec)
{
    const char *why;
    int field;

    if (got == LINE_LONG) {
        refuse(im, "is longer than the limit of", apr_psprintf(lp, "%d bytes", LINE_MAX_BYTES));
        return 0;
    }
    if (got == LINE_NUL) {
        refuse(im, "holds a NUL byte (not UTF-8 text)", NULL);
        return 0;
    }
    if (buf[strspn(buf, " \t")] == '\0' ||
        (im->line == 1 && (strcmp(buf, "bvn,date_of_birth,first_name,last_name,phone") == 0 ||
                           strcmp(buf, "bvn,date_of_birth,first_name,last_name") == 0))) {
        return 0;
    }
    if ((why = split(buf, rec)) != NULL) {
        refuse(im, why, NULL);
        return 0;
    }
    if ((why = ctl_bvn_record_problem(lp, rec, now, &field)) != NULL) {
        refuse(im, columns[field], why);
        return 0;
    }
    return 1;
}

/* The records of im->in, checked as of now, written batch records at a time (the last batch
 * however short). */
static void load(ctl_t *c, import_t *im, long batch, apr_time_t now)
{
    char buf[LINE_MAX_BYTES + 2];
    bank_bvn_record_t *recs;
    apr_pool_t *bp, *lp;
    int n = 0, got;

    apr_pool_create(&bp, c->pool);
    apr_pool_create(&lp, c->pool); /* a line's own: cleared for each */
    recs = apr_palloc(c->pool, sizeof(*recs) * (apr_size_t)batch);
    while ((got = next_line(im, buf, sizeof(buf))) != LINE_END) {
        apr_pool_clear(lp);
        if (!record_of(im, lp, buf, got, now, &recs[n])) {
            continue;
        }
        keep(bp, &recs[n]);
        if (++n == batch) {
            write_batch(c, im, bp, recs, n);
            if (!c->sqlite_path && im->loaded + im->replaced == (unsigned long)n) {
                plan_for_size(c);
            }
            n = 0;
            apr_pool_clear(bp);
            progress(im, 0);
        }
    }
    if (n > 0) {
        write_batch(c, im, bp, recs, n);
    }
}

int cmd_bvn_import(ctl_t *c, apr_table_t *o)
{
    const char *file = apr_table_get(o, "file"), *v;
    long batch = BATCH_DEFAULT;
    apr_time_t now = apr_time_now();
    import_t im;

    if (!file) {
        die(EXIT_USAGE, "%s: a FILE is required (- for standard input)", cmd);
    }
    if ((v = apr_table_get(o, "batch")) != NULL) {
        batch = ctl_parse_range(cmd, "batch", v, 1, BATCH_MAX);
    }
    memset(&im, 0, sizeof(im));
    /* the file first, as the user bankctl was started as (root may read it; the database's
     * owner, whom bankctl becomes on SQLite, need not) */
    open_input(c, &im, file);
    ctl_open_ready(c);
    /* PostgreSQL plans a prepared statement once for all after five runs, with the table's
     * statistics of that moment: on a table that was empty, a lookup that scans it, which
     * makes a large import slower with every row. Until the table's statistics are brought
     * up to date (after the first batch), each run is planned for its values. */
    if (!c->sqlite_path && bank_db_query(c->db, "SET plan_cache_mode = force_custom_plan") != 0) {
        ctl_db_fail(c, "bvn import: cannot set plan_cache_mode");
    }
    im.tty = isatty(STDERR_FILENO);
    im.start = apr_time_now(); /* shown 0: the first batch's progress is shown at once */
    load(c, &im, batch, now);
    /* PostgreSQL: the table's statistics brought up to its new size now, rather than by
     * autovacuum a minute or so later, so that the server's statements are planned for it
     * (a role that does not own the table is told so and nothing else happens). */
    if (!c->sqlite_path && im.loaded > 0 && bank_db_query(c->db, "ANALYZE bvn_records") != 0) {
        fprintf(stderr, "bankctl: %s: ANALYZE bvn_records failed (autovacuum will do it)\n", cmd);
    }
    progress(&im, 1);
    printf("%lu loaded, %lu replaced, %lu refused\n", im.loaded, im.replaced, im.refused);
    return im.refused ? 1 : 0;
}
