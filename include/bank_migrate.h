/* The schema migration engine (bankctl migrate, the C tests): applies the versioned files
 * sql/<driver>/NNN_*.sql not yet recorded in schema_version, each in one transaction, then
 * the seeds, and checks that every statement of the store prepares. No httpd dependency. */
#ifndef BANK_MIGRATE_H
#define BANK_MIGRATE_H

#include "bank_db.h"

/* Told each step done ("applied DIR/FILE", "loaded ...", "schema up to date ..."). */
typedef void (*bank_migrate_say_fn)(void *baton, const char *line);

typedef struct {
    const char *error; /* what failed, or NULL */
    int sql_dir;       /* the failure is about the SQL directory (missing, unreadable, empty) */
} bank_migrate_result_t;

/* sql_root holds sqlite/, postgresql/ and seed/. demo: also the seed files demo*.sql.
 * 0 on success; -1 with *res saying why. */
int bank_migrate(bank_db_t *db, const char *sql_root, int demo, bank_migrate_say_fn say,
                 void *baton, bank_migrate_result_t *res);

/* The database's schema version (0: none) and the lowest schema a module must know to serve
 * on it (schema_version.requires, 011; 0: any module whose migrations it holds). Plain
 * queries, not prepared statements: a schema newer than the caller's may not let those
 * prepare. */
void bank_schema_state(bank_db_t *db, int *version, int *requires);

#endif
