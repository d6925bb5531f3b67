/* mod_bank's version: the one place it is written. The module (its start-up notice, GET
 * /health, bank_build_info), bankctl --version and the Debian package (scripts/mkdeb) read
 * it from here; packaging/deb/changelog and CHANGELOG.md start with an entry for it (the
 * package build and t/package/version.t check that they do). */
#ifndef BANK_VERSION_H
#define BANK_VERSION_H

#define BANK_VERSION "0.2.1"

#endif
