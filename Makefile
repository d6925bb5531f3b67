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

$(BUILD)/mod_bank.so: $(MOD_SRC) $(CORE_SRC) $(HEADERS)
	@mkdir -p $(BUILD)
	@echo "APXS mod_bank.so"; $(APXS) -c -o $(BUILD)/mod_bank.la -Iinclude -Wc,"$(WARN)" $(MOD_SRC) \
	    $(CORE_SRC) $(LIBS) >$(BUILD)/apxs.log 2>&1 || { grep -v '^libtool\|^/usr/share' \
	    $(BUILD)/apxs.log; exit 1; }
	@cp $(BUILD)/.libs/mod_bank.so $@.tmp && mv -f $@.tmp $@ && echo "built $@"

# The Debian package's bankctl (make deb) is the same program with the package's SQL
# directory compiled in.
$(BUILD)/deb/bankctl: SQLDIR := $(DEB_SQLDIR)
$(BUILD)/bankctl $(BUILD)/deb/bankctl: $(CTL_SRC) $(CORE_SRC) $(HEADERS)
	@mkdir -p $(@D)
	@echo "CC $@"; $(CC) -O2 -g $(WARN) -Iinclude $(APR_INC) -DBANK_SQL_DIR='"$(SQLDIR)"' \
	    -o $@ $(CTL_SRC) $(CORE_SRC) \
	    -lapr-1 -laprutil-1 $(LIBS)

$(BUILD)/unit/%: t/unit/%.c t/unit/unit.h t/unit/db_fixture.h $(CORE_SRC) $(HEADERS)
	@mkdir -p $(BUILD)/unit
	$(CC) -O1 -g $(WARN) -fsanitize=address,undefined -fno-omit-frame-pointer -Iinclude -It/unit \
	    $(APR_INC) -o $@ $< $(CORE_SRC) -lapr-1 -laprutil-1 $(LIBS)

$(BUILD)/unit/test_scrypt_portable: t/unit/test_scrypt.c t/unit/unit.h $(CORE_SRC) $(HEADERS)
	@mkdir -p $(BUILD)/unit
	$(CC) -O2 -g $(WARN) -fsanitize=address,undefined -fno-omit-frame-pointer -Iinclude -It/unit \
	    -DBANK_SCRYPT_PORTABLE $(APR_INC) -o $@ $< $(CORE_SRC) -lapr-1 -laprutil-1 $(LIBS)

$(BUILD)/bench/%: t/bench/%.c $(CORE_SRC) $(HEADERS)
	@mkdir -p $(BUILD)/bench
	@echo "CC bench/$*"; $(CC) -O2 -g $(WARN) -Iinclude $(APR_INC) -o $@ $< $(CORE_SRC) \
	    -lapr-1 -laprutil-1 $(LIBS)

# The connection flood and its probes (t/flood/flood.c): scripts/bench flood and t/api/flood.t.
$(BUILD)/flood: t/flood/flood.c
	@mkdir -p $(BUILD)
	@echo "CC flood"; $(CC) -O2 -g $(WARN) -o $@ $< -lssl -lcrypto

# C unit tests of the pure code, under AddressSanitizer and UBSan.
unit: $(UNIT_BIN)
	@./scripts/run-unit $(UNIT_BIN)

# UB aborts (no recovery) so that libFuzzer keeps the input; the fuzz build mode lowers the
# password cost ceilings (mod_bank/bank_password.c).
$(BUILD)/fuzz/%: t/fuzz/%.c t/fuzz/fuzz.h $(CORE_SRC) $(HEADERS)
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) -O1 -g $(WARN) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    -fno-omit-frame-pointer -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -Iinclude -It/fuzz \
	    $(APR_INC) -o $@ $< $(CORE_SRC) -lapr-1 -laprutil-1 $(LIBS)

# Each harness for FUZZ_SECONDS from the committed seeds (t/fuzz/corpus, read-only); fails on
# any crash, leak, UB or timeout. Findings go to build/fuzz/crashes/ (docs/operations.md).
fuzz: $(FUZZ_BIN)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) ./scripts/run-fuzz $(FUZZ_BIN)

# The Apache::Test suite against a real httpd with the built module.
itest: build $(BUILD)/unit/test_db_pg $(BUILD)/unit/test_onboard $(BUILD)/unit/test_sign_in \
	    $(BUILD)/unit/test_notice_store $(BUILD)/unit/test_group_commit $(BUILD)/unit/test_token_cache \
	    $(BUILD)/unit/test_push_store $(BUILD)/unit/test_token_feed $(BUILD)/unit/test_token_uses \
	    $(BUILD)/unit/test_privileges $(BUILD)/flood
	@DB=$(DB) APACHE_TEST_HTTPD=$(HTTPD) ./scripts/run-tests

test: deps build unit itest

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

# cppcheck, clang-format and shellcheck (every script, warnings and notes alike).
lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	    --inline-suppr --suppress=missingIncludeSystem -Iinclude -It/fuzz -DLINUX -D_REENTRANT \
	    -D_GNU_SOURCE mod_bank/ t/fuzz/ t/flood/
	clang-format --dry-run --Werror mod_bank/*.c mod_bank/*.h mod_bank/bankctl/*.[ch] include/*.h t/unit/*.c \
	    t/unit/*.h t/fuzz/*.c t/fuzz/*.h t/bench/*.c t/flood/*.c
	shellcheck scripts/* .ci/run packaging/deb/maint/*
	./scripts/check-tags
	./scripts/check-layers

clean:
	rm -rf $(BUILD) mod_bank/.libs mod_bank/*.lo mod_bank/*.slo mod_bank/*.o mod_bank.la \
	    mod_bank/*.la .libs t/logs t/htdocs t/conf/extra.conf t/conf/httpd.conf \
	    t/conf/apache_test_config.pm t/TEST
