/* bankctl notices archive and notices restore (docs/operations.md, "A year of operation"):
 * the payment notices received before a date moved out to a compressed file of JSON lines,
 * counted and checksummed, the file read back and checked before any row is deleted; their
 * keys kept so that a repeat is still answered as a duplicate; and such a file put back.
 *
 * The file: gzip, one line a notice (bank_notice_line.h). The checksum printed is the SHA-256
 * of the uncompressed lines: `zcat FILE | sha256sum` gives it again. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <zlib.h>
#include <openssl/evp.h>
#include <apr_strings.h>
#include <apr_file_info.h>
#include "bankctl.h"
#include "bank_notice_line.h"
#include "bank_store.h"
#include "bank_time.h"
#include "bank_version.h"

#define BATCH_DEFAULT 1000
#define BATCH_MAX 10000
/* The schema that keeps archived notices' keys (014_retention.sql). */
#define SCHEMA_ARCHIVE 14
/* The longest line read back: a notice's body is at most BankWebhookMaxBody (1 MiB at most),
 * written as a JSON string (each byte at most 6) beside its parsed fields. */
#define LINE_MAX_BYTES (16 * 1024 * 1024)

typedef struct {
    EVP_MD_CTX *md;
    apr_int64_t lines;
} sum_t;

static void sum_start(sum_t *s)
{
    s->md = EVP_MD_CTX_new();
    s->lines = 0;
    if (!s->md || EVP_DigestInit_ex(s->md, EVP_sha256(), NULL) != 1) {
        die(1, "notices: no SHA-256 from OpenSSL");
    }
}

static void sum_add(sum_t *s, const char *buf, apr_size_t len)
{
    apr_size_t i;

    EVP_DigestUpdate(s->md, buf, len);
    for (i = 0; i < len; i++) {
        s->lines += buf[i] == '\n';
    }
}

static const char *sum_end(apr_pool_t *p, sum_t *s)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0, i;
    char *hex;

    EVP_DigestFinal_ex(s->md, d, &n);
    EVP_MD_CTX_free(s->md);
    s->md = NULL;
    hex = apr_palloc(p, (apr_size_t)n * 2 + 1);
    for (i = 0; i < n; i++) {
        apr_snprintf(hex + i * 2, 3, "%02x", d[i]);
    }
    hex[n * 2] = '\0';
    return hex;
}

/* 1 if the schema keeps archived notices' keys (an older one is migrated first). */
static int archive_ready(ctl_t *c)
{
    apr_int64_t v = 0;

    return bank_store_schema_version(c->db, &v) == BANK_DB_OK && v >= SCHEMA_ARCHIVE;
}

/* --before YYYY-MM-DD: midnight UTC of that day, which must not be in the future. */
static const char *parse_before(ctl_t *c, const char *cmd, const char *day)
{
    apr_time_t t;

    if (strlen(day) != 10 || day[4] != '-' || day[7] != '-' ||
        bank_time_parse(apr_pstrcat(c->pool, day, "T00:00:00Z", (char *)NULL), &t) != 0 ||
        strcmp(bank_time_iso(c->pool, t),
               apr_pstrcat(c->pool, day, "T00:00:00.000Z", (char *)NULL)) != 0) {
        die(EXIT_USAGE, "%s: --before is a date, YYYY-MM-DD", cmd);
    }
    if (t > apr_time_now() - apr_time_from_sec(86400)) {
        die(EXIT_USAGE,
            "%s: --before is less than a day ago (notices of the last day may still be on their "
            "way to the table)",
            cmd);
    }
    return bank_time_iso(c->pool, t);
}

/* A gzip stream over fd from its start (fd stays open). */
static gzFile gz_at_start(int fd, const char *mode)
{
    int d;
    gzFile f;

    if (lseek(fd, 0, SEEK_SET) != 0 || (d = dup(fd)) < 0) {
        return NULL;
    }
    if (!(f = gzdopen(d, mode))) {
        close(d);
    }
    return f;
}

/* Reads the gzip file of lines open on fd from its start: calls fn on each (without its
 * newline) unless fn is NULL, and sums them. NULL, or why the file is refused (in c->pool). */
typedef const char *(*line_fn)(void *baton, const char *line, apr_size_t len);
static const char *read_lines(ctl_t *c, const char *path, int fd, sum_t *sum, line_fn fn,
                              void *baton)
{
    static char *buf;
    gzFile f = gz_at_start(fd, "rb");
    apr_int64_t line = 0;
    const char *why = NULL;
    int err = Z_OK;

    if (!f) {
        return apr_psprintf(c->pool, "cannot read %s", path);
    }
    if (!buf) {
        buf = apr_palloc(c->pool, LINE_MAX_BYTES);
    }
    gzbuffer(f, 256 * 1024);
    sum_start(sum);
    while (!why && gzgets(f, buf, LINE_MAX_BYTES)) {
        apr_size_t len = strlen(buf);

        line++;
        if (len == 0 || buf[len - 1] != '\n') {
            why = len + 1 >= LINE_MAX_BYTES ? "is too long" : "has no end (the file is cut short)";
        } else {
            sum_add(sum, buf, len);
            why = fn ? fn(baton, buf, len - 1) : NULL;
        }
        why = why ? apr_psprintf(c->pool, "%s: line %" APR_INT64_T_FMT ": %s", path, line, why)
                  : NULL;
    }
    gzerror(f, &err);
    if (!why && (err != Z_OK || !gzeof(f))) {
        why = apr_psprintf(c->pool, "%s is not a whole gzip file (cut short or damaged)", path);
    }
    gzclose(f);
    return why;
}

/* Opens path as the user bankctl was started as (root, before it becomes an SQLite file's
 * owner: ctl_open_db), so that the archive can sit in a directory only root may enter: a new
 * file (never one there already) for writing and reading back, or one to read. */
static int open_file(const char *cmd, const char *path, int create)
{
    int fd = create ? open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)
                    : open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 && create && errno == EEXIST) {
        die(1, "%s: %s exists: an archive is never written over", cmd, path);
    }
    if (fd < 0) {
        die(1, "%s: cannot %s %s: %s", cmd, create ? "write" : "read", path, strerror(errno));
    }
    return fd;
}

/* A failure before any row went: the file is emptied (bankctl may no longer remove it from
 * a directory only root may write to) and the run ends. */
static void give_up(int fd, const char *cmd, const char *path, const char *why)
{
    if (ftruncate(fd, 0) != 0 || fsync(fd) != 0) {
        die(1, "%s: %s; %s could not be emptied: remove it", cmd, why, path);
    }
    die(1, "%s: %s; no notice was removed (%s is left empty: remove it)", cmd, why, path);
}

/* One window of the archive at a time (ctl_batches). */
typedef bank_db_rc (*window_fn)(bank_db_t *db, const char *now, const bank_notice_window_t *w,
                                int *n);
typedef struct {
    const apr_array_header_t *windows;
    const char *now;
    window_fn fn;
} windows_t;

static bank_db_rc window_batch(ctl_t *c, void *baton, long i, int *done, int *more)
{
    windows_t *ws = baton;

    *done = 0;
    *more = i + 1 < ws->windows->nelts;
    return i < ws->windows->nelts
               ? ws->fn(c->db, ws->now, &APR_ARRAY_IDX(ws->windows, i, bank_notice_window_t), done)
               : BANK_DB_OK;
}

static apr_int64_t each_window(ctl_t *c, const apr_array_header_t *windows, const char *now,
                               window_fn fn, const char *what)
{
    windows_t ws = {windows, now, fn};
    return ctl_batches(c, window_batch, &ws, what);
}

/* The keys of a window kept; on PostgreSQL the table of kept keys analysed after batches 1,
 * 2, 4, 8, ... and after the last: the webhook's inserts look each notice up there, in plans
 * PostgreSQL made once for the table as it was (empty, read whole); new statistics make
 * every server plan again, an index lookup once the table is large. Its owner may analyse
 * it (docs/operations.md: archive as the owner); for another role PostgreSQL only warns. */
static bank_db_rc keep_keys(ctl_t *c, void *baton, long i, int *done, int *more)
{
    bank_db_rc rc = window_batch(c, baton, i, done, more);

    if (rc == BANK_DB_OK && bank_db_is_pgsql(c->db) && (((i + 1) & i) == 0 || !*more)) {
        if (bank_db_query(c->db, "ANALYZE payment_notices_archived") != 0) {
            fprintf(stderr, "bankctl: notices archive: ANALYZE payment_notices_archived failed\n");
        }
    }
    return rc;
}

static bank_db_rc remove_rows(bank_db_t *db, const char *now, const bank_notice_window_t *w, int *n)
{
    (void)now;
    return bank_store_notices_remove(db, w, n);
}

/* Writes every notice before cut to path (gzip), page by page in pool bp; their windows
 * into *windows; the count and checksum of what was written into *sum. */
static void write_archive(ctl_t *c, const char *cmd, apr_pool_t *bp, const char *cut, int batch,
                          const char *path, int fd, apr_int64_t expected,
                          apr_array_header_t **windows, sum_t *sum)
{
    gzFile f = gz_at_start(fd, "wb6");
    bank_notice_window_t w = {NULL, NULL, NULL, NULL};
    int tty = isatty(STDERR_FILENO);
    apr_array_header_t *rows;

    if (!f) {
        give_up(fd, cmd, path, "cannot write it");
    }
    gzbuffer(f, 256 * 1024);
    *windows = apr_array_make(c->pool, 64, sizeof(bank_notice_window_t));
    sum_start(sum);
    for (;;) {
        const bank_notice_record_t *last;
        int i;

        if (bank_store_notices_page(c->db, cut, &w, batch, &rows) != BANK_DB_OK) {
            gzclose(f);
            give_up(fd, cmd, path,
                    apr_psprintf(c->pool, "cannot read the notices: %s",
                                 bank_db_error(c->db) ? bank_db_error(c->db) : "database error"));
        }
        if (rows->nelts == 0) {
            break;
        }
        for (i = 0; i < rows->nelts; i++) {
            const char *line = bank_notice_line(bp, &APR_ARRAY_IDX(rows, i, bank_notice_record_t));
            apr_size_t len = strlen(line);
            if (gzwrite(f, line, (unsigned)len) != (int)len) {
                gzclose(f);
                give_up(fd, cmd, path, "cannot write it (disk full?)");
            }
            sum_add(sum, line, len);
        }
        last = &APR_ARRAY_IDX(rows, rows->nelts - 1, bank_notice_record_t);
        w.upto_at = apr_pstrdup(c->pool, last->v[BANK_NOTICE_RECEIVED_AT]);
        w.upto_id = apr_pstrdup(c->pool, last->v[BANK_NOTICE_ID]);
        APR_ARRAY_PUSH(*windows, bank_notice_window_t) = w;
        w.after_at = w.upto_at;
        w.after_id = w.upto_id;
        apr_pool_clear(bp);
        if (tty) {
            fprintf(stderr, "\r\033[K%s: %" APR_INT64_T_FMT " of %" APR_INT64_T_FMT " written", cmd,
                    sum->lines, expected);
        }
    }
    if (tty) {
        fputc('\n', stderr);
    }
    if (gzclose(f) != Z_OK || fsync(fd) != 0) {
        give_up(fd, cmd, path, "cannot write it (disk full?)");
    }
}

/* ---- restore ---- */

typedef struct {
    ctl_t *c;
    apr_pool_t *bp;
    apr_array_header_t *batch;
    int size;
    apr_int64_t added, seen;
} restore_t;

static const char *check_line(void *baton, const char *line, apr_size_t len)
{
    restore_t *r = baton;
    bank_notice_record_t rec;
    const char *why = bank_notice_unline(r->bp, line, len, &rec);

    why = why ? apr_pstrdup(r->c->pool, why) : NULL; /* the line's pool goes now */
    apr_pool_clear(r->bp);
    return why;
}

/* bank_store_notices_settle, tried for up to a minute (a transaction that holds the table
 * long); the keys stay kept if it fails, and nothing is removed. */
static void settle(ctl_t *c, const char *cmd)
{
    int tries = 0;

    while (bank_store_notices_settle(c->db) != BANK_DB_OK) {
        if (++tries >= 30) {
            die(1,
                "%s: the notices table stayed locked by another transaction; no notice was "
                "removed (the file is whole: run again with another file name)",
                cmd);
        }
        apr_sleep(apr_time_from_sec(1));
    }
}

/* Steps 1 to 3 of docs/operations.md: every notice before cut written to the file open on
 * fd (to), read back from the disk and checked; the count and the checksum printed. The
 * windows the pages made, for the keys and the deletions. */
static apr_array_header_t *export_checked(ctl_t *c, const char *cmd, const char *cut, int batch,
                                          const char *to, int fd, apr_int64_t *count)
{
    const char *wrote, *read, *why;
    apr_array_header_t *windows;
    apr_pool_t *bp, *before;
    sum_t out, back;
    restore_t check = {c, NULL, NULL, 0, 0, 0};

    if (bank_store_notices_before(c->db, cut, count) != BANK_DB_OK) {
        give_up(fd, cmd, to, "cannot count the notices");
    }
    apr_pool_create(&bp, c->pool);
    apr_pool_create(&check.bp, c->pool);
    if (!(before = bank_db_use_pool(c->db, bp))) {
        give_up(fd, cmd, to, "a transaction was left open");
    }
    write_archive(c, cmd, bp, cut, batch, to, fd, *count, &windows, &out);
    bank_db_use_pool(c->db, before);
    wrote = sum_end(c->pool, &out);
    /* the file as it is on the disk, before any row goes */
    if ((why = read_lines(c, to, fd, &back, check_line, &check)) != NULL) {
        give_up(fd, cmd, to, why);
    }
    read = sum_end(c->pool, &back);
    if (out.lines != *count || back.lines != *count || strcmp(wrote, read) != 0) {
        give_up(fd, cmd, to,
                apr_psprintf(c->pool,
                             "it does not hold what was read (%" APR_INT64_T_FMT
                             " notices before the day, %" APR_INT64_T_FMT
                             " written, %" APR_INT64_T_FMT " read back)",
                             *count, out.lines, back.lines));
    }
    close(fd);
    apr_pool_destroy(bp);
    apr_pool_destroy(check.bp);
    printf("%" APR_INT64_T_FMT " notices received before %s written to %s\n", *count, cut, to);
    printf("sha256 %s of its lines (zcat %s | sha256sum), read back and checked\n", read, to);
    fflush(stdout);
    return windows;
}

int cmd_notices_archive(ctl_t *c, apr_table_t *o)
{
    const char *cmd = "notices archive", *b = apr_table_get(o, "batch");
    const char *cut = parse_before(c, cmd, ctl_need(o, "before", cmd));
    const char *to = ctl_need(o, "to", cmd);
    const char *now = bank_time_iso(c->pool, apr_time_now());
    long batch = b ? ctl_parse_range(cmd, "batch", b, 1, BATCH_MAX) : BATCH_DEFAULT;
    apr_int64_t count = 0, kept, removed;
    apr_array_header_t *windows;
    windows_t keys = {NULL, now, bank_store_notices_keep_keys};
    int fd = open_file(cmd, to, 1);

    ctl_open_db(c); /* notices hold no identity data */
    if (!archive_ready(c)) {
        give_up(fd, cmd, to,
                apr_psprintf(c->pool,
                             "the database's schema is older than %d "
                             "(archived notices): run bankctl migrate first",
                             SCHEMA_ARCHIVE));
    }
    /* PostgreSQL: each page and window planned for its own bounds. A plan made once for any
     * bounds guesses a third of the table and reads it whole, every batch. */
    if (bank_db_is_pgsql(c->db) &&
        bank_db_query(c->db, "SET plan_cache_mode = force_custom_plan")) {
        give_up(fd, cmd, to, "cannot set plan_cache_mode");
    }
    windows = export_checked(c, cmd, cut, (int)batch, to, fd, &count);
    keys.windows = windows;
    /* every key first, committed, then the rows: a repeat meets the row or the key */
    kept = ctl_batches(c, keep_keys, &keys, "cannot keep the notices' keys");
    settle(c, cmd);
    removed = each_window(c, windows, now, remove_rows, "cannot remove the notices");
    printf("%" APR_INT64_T_FMT " notices removed; their %" APR_INT64_T_FMT
           " keys kept (a repeat is answered as a duplicate)\n",
           removed, kept);
    if (removed != count) {
        die(1,
            "%s: %" APR_INT64_T_FMT " notices were archived but %" APR_INT64_T_FMT
            " removed: another writer changed them meanwhile, or a batch was tried again after "
            "its commit (bankctl notices shows what is left)",
            cmd, count, removed);
    }
    return 0;
}

static void flush(restore_t *r)
{
    int added = 0;

    if (r->batch->nelts == 0) {
        return;
    }
    if (bank_store_notices_restore(r->c->db, (const bank_notice_record_t *)r->batch->elts,
                                   r->batch->nelts, &added) != BANK_DB_OK) {
        fprintf(stderr, "bankctl: notices restore: %" APR_INT64_T_FMT " restored before\n",
                r->added);
        ctl_db_fail(r->c, "cannot restore the notices (the batch was rolled back)");
    }
    r->added += added;
    r->seen += r->batch->nelts;
    apr_pool_clear(r->bp);
    r->batch = apr_array_make(r->bp, r->size, sizeof(bank_notice_record_t));
}

static const char *restore_line(void *baton, const char *line, apr_size_t len)
{
    restore_t *r = baton;
    bank_notice_record_t *rec = apr_array_push(r->batch);
    const char *why = bank_notice_unline(r->bp, line, len, rec);

    if (!why && r->batch->nelts >= r->size) {
        flush(r);
    }
    return why;
}

int cmd_notices_restore(ctl_t *c, apr_table_t *o)
{
    const char *cmd = "notices restore", *b = apr_table_get(o, "batch");
    const char *file = ctl_need(o, "file", cmd), *first, *second, *why;
    long batch = b ? ctl_parse_range(cmd, "batch", b, 1, BATCH_MAX) : BATCH_DEFAULT;
    restore_t r = {c, NULL, NULL, (int)batch, 0, 0};
    apr_pool_t *before;
    sum_t sum;
    int fd = open_file(cmd, file, 0);

    ctl_open_db(c);
    if (!archive_ready(c)) {
        die(1,
            "%s: the database's schema is older than %d (archived notices): run bankctl "
            "migrate first",
            cmd, SCHEMA_ARCHIVE);
    }
    apr_pool_create(&r.bp, c->pool);
    /* the whole file checked before any row is written */
    if ((why = read_lines(c, file, fd, &sum, check_line, &r)) != NULL) {
        die(1, "%s: %s: nothing was restored", cmd, why);
    }
    first = sum_end(c->pool, &sum);
    printf("%" APR_INT64_T_FMT " notices in %s, sha256 %s of its lines\n", sum.lines, file, first);
    fflush(stdout);
    if (!(before = bank_db_use_pool(c->db, r.bp))) {
        die(1, "%s: a transaction was left open", cmd);
    }
    r.batch = apr_array_make(r.bp, r.size, sizeof(bank_notice_record_t));
    if ((why = read_lines(c, file, fd, &sum, restore_line, &r)) != NULL) {
        die(1, "%s: %s (%" APR_INT64_T_FMT " restored before)", cmd, why, r.added);
    }
    flush(&r);
    second = sum_end(c->pool, &sum);
    bank_db_use_pool(c->db, before);
    if (strcmp(first, second) != 0) {
        die(1, "%s: %s changed while it was read", cmd, file);
    }
    printf("%" APR_INT64_T_FMT " restored, %" APR_INT64_T_FMT
           " there already; their keys no longer kept\n",
           r.added, r.seen - r.added);
    return 0;
}
