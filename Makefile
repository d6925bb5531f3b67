# mod_bank: build, run and test. `make run` and `make test` are the two commands.
APXS      ?= apxs
HTTPD     ?= /usr/sbin/apache2
CC        ?= cc
DB        ?= sqlite3
BUILD     := build
WARN      := -Wall -Wextra -Werror -Wno-missing-field-initializers
# Evaluated by the shell when a recipe runs, not when make reads this file: on a new machine
# `make deps` installs apr-1-config and apxs only after make has read the Makefile.
APR_INC    = $$(apr-1-config --includes) $$(apr-1-config --cppflags)
LIBS      := -ljson-c -lcrypto -lcrypt -lcurl -largon2

# Pure code: no httpd dependency; linked by the module, bankctl and the C unit tests.
CORE_SRC  := $(filter-out mod_bank/bankctl/%,$(wildcard mod_bank/bank_*.c))
# httpd glue.
MOD_SRC   := $(wildcard mod_bank/mod_bank*.c)
CTL_SRC   := $(wildcard mod_bank/bankctl/*.c)
HEADERS   := $(wildcard include/*.h mod_bank/*.h mod_bank/bankctl/*.h)
# Where make install puts things; bankctl finds its SQL files there unless BANK_SQL_DIR says.
PREFIX    ?= /usr/local
SQLDIR    := $(PREFIX)/share/mod_bank/sql
# Where the Debian package (make deb) puts the SQL files; its bankctl looks there.
DEB_SQLDIR := /usr/share/mod_bank/sql
UNIT_SRC  := $(wildcard t/unit/test_*.c)
# test_scrypt twice: the second with scrypt's plain C lanes (mod_bank/bank_scrypt.c).
UNIT_BIN  := $(patsubst t/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRC)) $(BUILD)/unit/test_scrypt_portable
# The ceilings scripts/bench measures beside the endpoints (raw KDF, raw SQLite INSERT).
BENCH_BIN := $(patsubst t/bench/%.c,$(BUILD)/bench/%,$(wildcard t/bench/*.c))
# libFuzzer harnesses (t/fuzz/fuzz_*.c), each run for FUZZ_SECONDS by `make fuzz`.
FUZZ_CC   ?= clang
FUZZ_SECONDS ?= 30
FUZZ_SRC  := $(wildcard t/fuzz/fuzz_*.c)
FUZZ_BIN  := $(patsubst t/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))

.PHONY: all deps build run start stop test unit itest fuzz format lint clean bench memcheck install \
        uninstall deb
all: build

deps:
	@./scripts/deps

build: $(BUILD)/mod_bank.so $(BUILD)/bankctl

# The core is compiled once per flavour into a static library that everything links: the
# module, bankctl and the bench tools (libbank.a, position-independent, httpd's own CFLAGS),
# the C unit tests (libbank-san.a, AddressSanitizer and UBSan) and the fuzzers (libbank-fuzz.a,
# clang, fuzz build mode). Each object depends on every header and on this
# file: coarse, never stale.
CORE_NAMES := $(notdir $(CORE_SRC:.c=.o))
MOD_NAMES  := $(notdir $(MOD_SRC:.c=.o))
# apxs's flags, asked once per make run when first needed (after make deps has installed apxs).
HTTPD_CFLAGS = $(eval HTTPD_CFLAGS := $(shell for v in CFLAGS CPPFLAGS EXTRA_CPPFLAGS EXTRA_CFLAGS; \
               do $(APXS) -q $$v; done) -I$(shell $(APXS) -q INCLUDEDIR))$(HTTPD_CFLAGS)
SAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
              -fno-omit-frame-pointer -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION

$(BUILD)/obj/pic/%.o: mod_bank/%.c $(HEADERS) Makefile
	@mkdir -p $(@D)
	@echo "CC $*"; $(CC) $(HTTPD_CFLAGS) -fPIC -pthread $(WARN) -Iinclude $(APR_INC) -c -o $@ $<

$(BUILD)/obj/san/%.o: mod_bank/%.c $(HEADERS) Makefile
	@mkdir -p $(@D)
	@echo "CC san/$*"; $(CC) -O1 -g $(WARN) $(SAN_FLAGS) -Iinclude $(APR_INC) -c -o $@ $<

# scrypt's plain C lanes (mod_bank/bank_scrypt.c), linked ahead of libbank-san.a's own.
$(BUILD)/obj/san/bank_scrypt_portable.o: mod_bank/bank_scrypt.c $(HEADERS) Makefile
	@mkdir -p $(@D)
	@echo "CC san/bank_scrypt_portable"; $(CC) -O2 -g $(WARN) $(SAN_FLAGS) -DBANK_SCRYPT_PORTABLE \
	    -Iinclude $(APR_INC) -c -o $@ $<

$(BUILD)/obj/fuzz/%.o: mod_bank/%.c $(HEADERS) Makefile
	@mkdir -p $(@D)
	@echo "CC fuzz/$*"; $(FUZZ_CC) -O1 -g $(WARN) $(FUZZ_FLAGS) -Iinclude $(APR_INC) -c -o $@ $<

$(BUILD)/libbank.a: $(addprefix $(BUILD)/obj/pic/,$(CORE_NAMES))
$(BUILD)/libbank-san.a: $(addprefix $(BUILD)/obj/san/,$(CORE_NAMES))
$(BUILD)/libbank-fuzz.a: $(addprefix $(BUILD)/obj/fuzz/,$(CORE_NAMES))
$(BUILD)/libbank.a $(BUILD)/libbank-san.a $(BUILD)/libbank-fuzz.a:
	@rm -f $@; echo "AR $(@F)"; ar rcs $@ $^

# The httpd glue and the core library, linked by apxs into the module.
$(BUILD)/mod_bank.so: $(addprefix $(BUILD)/obj/pic/,$(MOD_NAMES)) $(BUILD)/libbank.a
	@echo "APXS mod_bank.so"; $(APXS) -c -o $(BUILD)/mod_bank.la $(filter %.o,$^) $(BUILD)/libbank.a \
	    $(LIBS) >$(BUILD)/apxs.log 2>&1 || { grep -v '^libtool\|^/usr/share' $(BUILD)/apxs.log; exit 1; }
	@cp $(BUILD)/.libs/mod_bank.so $@.tmp && mv -f $@.tmp $@ && echo "built $@"

# The Debian package's bankctl (make deb) is the same program with the package's SQL
# directory compiled in.
$(BUILD)/deb/bankctl: SQLDIR := $(DEB_SQLDIR)
$(BUILD)/bankctl $(BUILD)/deb/bankctl: $(CTL_SRC) $(HEADERS) $(BUILD)/libbank.a
	@mkdir -p $(@D)
	@echo "CC $@"; $(CC) -O2 -g $(WARN) -Iinclude $(APR_INC) -DBANK_SQL_DIR='"$(SQLDIR)"' \
	    -o $@ $(CTL_SRC) $(BUILD)/libbank.a -lapr-1 -laprutil-1 $(LIBS) -lz

$(BUILD)/unit/%: t/unit/%.c t/unit/unit.h t/unit/db_fixture.h $(HEADERS) $(BUILD)/libbank-san.a
	@mkdir -p $(BUILD)/unit
	@echo "CC unit/$*"; $(CC) -O1 -g $(WARN) $(SAN_FLAGS) -Iinclude -It/unit $(APR_INC) -o $@ $< \
	    $(BUILD)/libbank-san.a -lapr-1 -laprutil-1 $(LIBS)

$(BUILD)/unit/test_scrypt_portable: t/unit/test_scrypt.c t/unit/unit.h $(HEADERS) \
	    $(BUILD)/obj/san/bank_scrypt_portable.o $(BUILD)/libbank-san.a
	@mkdir -p $(BUILD)/unit
	@echo "CC unit/test_scrypt_portable"; $(CC) -O2 -g $(WARN) $(SAN_FLAGS) -DBANK_SCRYPT_PORTABLE \
	    -Iinclude -It/unit $(APR_INC) -o $@ $< $(BUILD)/obj/san/bank_scrypt_portable.o \
	    $(BUILD)/libbank-san.a -lapr-1 -laprutil-1 $(LIBS)

$(BUILD)/bench/%: t/bench/%.c $(HEADERS) $(BUILD)/libbank.a
	@mkdir -p $(BUILD)/bench
	@echo "CC bench/$*"; $(CC) -O2 -g $(WARN) -Iinclude $(APR_INC) -o $@ $< $(BUILD)/libbank.a \
	    -lapr-1 -laprutil-1 $(LIBS)

# The connection flood and its probes (t/flood/flood.c): scripts/bench flood and t/api/load/flood.t.
$(BUILD)/flood: t/flood/flood.c
	@mkdir -p $(BUILD)
	@echo "CC flood"; $(CC) -O2 -g $(WARN) -o $@ $< -lssl -lcrypto

# C unit tests of the pure code, under AddressSanitizer and UBSan.
unit: $(UNIT_BIN)
	@./scripts/run-unit $(UNIT_BIN)

# UB aborts (no recovery) so that libFuzzer keeps the input; the fuzz build mode lowers the
# password cost ceilings (mod_bank/bank_password.c, bank_password_argon2.c).
$(BUILD)/fuzz/%: t/fuzz/%.c t/fuzz/fuzz.h $(HEADERS) $(BUILD)/libbank-fuzz.a
	@mkdir -p $(BUILD)/fuzz
	@echo "CC fuzz/$*"; $(FUZZ_CC) -O1 -g $(WARN) $(FUZZ_FLAGS) -fsanitize=fuzzer -Iinclude -It/fuzz \
	    $(APR_INC) -o $@ $< $(BUILD)/libbank-fuzz.a -lapr-1 -laprutil-1 $(LIBS)

# Each harness for FUZZ_SECONDS from the committed seeds (t/fuzz/corpus, read-only); fails on
# any crash, leak, UB or timeout. Findings go to build/fuzz/crashes/ (docs/operations.md).
fuzz: $(FUZZ_BIN)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) ./scripts/run-fuzz $(FUZZ_BIN)

# The Apache::Test suite against a real httpd with the built module; the unit binaries it
# runs against the test database, and the connection flood.
ITEST_BIN := $(addprefix $(BUILD)/unit/,test_db_pg test_onboard test_sign_in test_notice_store \
	test_group_commit test_kept test_push_store test_change_feed test_token_uses \
	test_privileges) $(BUILD)/flood
itest: build $(ITEST_BIN)
	@DB=$(DB) APACHE_TEST_HTTPD=$(HTTPD) ./scripts/run-tests

# Everything is built first, JOBS at a time (make -j is safe throughout), then run.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory -j$(JOBS) build $(sort $(UNIT_BIN) $(ITEST_BIN))
	@$(MAKE) --no-print-directory unit itest

run: deps build
	@./scripts/devserver run

start: deps build
	@./scripts/devserver start

stop:
	@./scripts/devserver stop

# Each endpoint against its ceiling, in one run (docs/benchmarks.md); never part of make test.
bench: deps build $(BENCH_BIN)
	@DB=$(DB) ./scripts/bench

# httpd with the module under valgrind, every endpoint's success and error paths.
memcheck: deps build
	@./scripts/memcheck

# Installs the module where httpd's other modules live, bankctl, the SQL files it applies and
# the Location examples (DESTDIR for packaging).
LIBEXECDIR = $$($(APXS) -q LIBEXECDIR)
install: build
	install -d $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/mod_bank \
	    $(DESTDIR)/etc/apache2/mod_bank
	install -m 644 $(BUILD)/mod_bank.so $(DESTDIR)$(LIBEXECDIR)/mod_bank.so
	install -m 755 $(BUILD)/bankctl $(DESTDIR)$(PREFIX)/bin/bankctl
	cp -r sql $(DESTDIR)$(PREFIX)/share/mod_bank/
	install -m 644 conf/bank.conf $(DESTDIR)/etc/apache2/mod_bank/bank.conf

# Removes what make install put there (the database and the operator's own files stay). It
# refuses while README's conf-available/mod_bank.conf is enabled: apache2 would no longer
# start (a2disconf mod_bank first).
uninstall:
	@if [ -e $(DESTDIR)/etc/apache2/conf-enabled/mod_bank.conf ] || \
	    [ -L $(DESTDIR)/etc/apache2/conf-enabled/mod_bank.conf ]; then \
	    echo "uninstall: mod_bank.conf is enabled: run a2disconf mod_bank first" >&2; exit 1; fi
	rm -f $(DESTDIR)$(LIBEXECDIR)/mod_bank.so $(DESTDIR)$(PREFIX)/bin/bankctl \
	    $(DESTDIR)/etc/apache2/mod_bank/bank.conf
	rm -rf $(DESTDIR)$(PREFIX)/share/mod_bank
	-rmdir $(DESTDIR)/etc/apache2/mod_bank 2>/dev/null

# The Debian package build/libapache2-mod-bank_<version>_<arch>.deb (dpkg-deb, then lintian:
# an error fails the build). Contents and use: docs/deployment.md.
deb: build $(BUILD)/deb/bankctl
	@./scripts/mkdeb $(BUILD)/deb/bankctl $(DEB_SQLDIR)

format:
	clang-format -i mod_bank/*.c mod_bank/*.h mod_bank/bankctl/*.[ch] include/*.h t/unit/*.c t/unit/*.h t/fuzz/*.c \
	    t/fuzz/*.h t/bench/*.c t/flood/*.c

# cppcheck, clang-format and shellcheck (every script, warnings and notes alike); the tags,
# the layers, the length of docs/benchmarks.md and of every source file and function, and the
# directives' defaults in their help texts and docs/configuration.md.
lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	    --inline-suppr --suppress=missingIncludeSystem -Iinclude -It/fuzz -DLINUX -D_REENTRANT \
	    -D_GNU_SOURCE mod_bank/ t/fuzz/ t/flood/ t/bench/
	clang-format --dry-run --Werror mod_bank/*.c mod_bank/*.h mod_bank/bankctl/*.[ch] include/*.h t/unit/*.c \
	    t/unit/*.h t/fuzz/*.c t/fuzz/*.h t/bench/*.c t/flood/*.c
	shellcheck scripts/* .ci/run packaging/deb/maint/*
	./scripts/check-tags
	./scripts/check-layers
	./scripts/check-docs
	./scripts/check-size
	./scripts/check-defaults

clean:
	rm -rf $(BUILD) mod_bank/.libs mod_bank/*.lo mod_bank/*.slo mod_bank/*.o mod_bank.la \
	    mod_bank/*.la .libs t/logs t/htdocs t/conf/extra.conf t/conf/httpd.conf \
	    t/conf/apache_test_config.pm t/TEST
