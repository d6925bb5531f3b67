/* mod_bank's version: the one place it is written. The module (its start-up notice, GET
 * /health, bank_build_info), bankctl --version and the Debian package (scripts/mkdeb) read
 * it from here; packaging/deb/changelog and CHANGELOG.md start with an entry for it (the
 * package build and t/package/version.t check that they do). */
#ifndef BANK_VERSION_H
#define BANK_VERSION_H

#define BANK_VERSION "0.2.1"
/* The newest schema (sql/<driver>/NNN_*.sql) this build knows: it serves on it, on an older
 * one that bankctl migrate brings up to it, and on a newer one whose migrations only added
 * (schema_version.requires, 011). t/api/operations/version.t checks it against the files. */
#define BANK_SCHEMA_VERSION 14
/* The oldest SQLite schema this build serves on: the previous release's (0.2.0's, 9), with
 * the older form of each statement written for a later one (bank_stmt_older, bank_sql.h).
 * The package's reload then brings this module before bankctl migrate runs: a migration
 * makes every open SQLite connection's statements fail once, which this module recovers
 * from and 0.2.0 does not (docs/deployment.md, "Upgrades"). PostgreSQL keeps an old
 * module's statements through a migration that only adds: there an older schema is
 * refused (BANK1710) and the old module serves until the migration. */
#define BANK_SCHEMA_SQLITE_OLDEST 9

#endif
