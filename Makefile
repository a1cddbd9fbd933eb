# vtfifo: Vitess v24 binaries with the fifo backup engine and the split backup storage.
#
#   make demo       - set up everything that is missing, then run the disaster-recovery demo
#   make test       - set up everything that is missing, then run every test (end to end included)
#   make test-unit  - the quick tier: Go only (no MariaDB, servers or Vitess binaries)
#   make check      - gofmt, go vet, staticcheck (pinned in tools/go.mod)
#
# Everything is built under build/ (gitignored). Binaries are cached by the Vitess version
# pinned in go.mod and rebuilt only when a Go source, go.mod or go.sum changes.

SHELL := /bin/bash
.DEFAULT_GOAL := help

GO ?= go
# Static binaries, as Vitess builds its own release binaries (its Makefile: CGO_ENABLED=0):
# nothing links against the host's C library, no C toolchain is needed, and linking is
# internal, which makes every build and test binary quicker to link. `go test -race` needs
# cgo: CGO_ENABLED=1 make test TEST_FLAGS=-race.
export CGO_ENABLED ?= 0
# The Vitess version pinned in go.mod ("require vitess.io/vitess vX.Y.Z").
VITESS_VERSION := $(shell awk '$$1=="vitess.io/vitess" && $$2 ~ /^v/ {print $$2; exit} $$1=="require" && $$2=="vitess.io/vitess" {print $$3; exit}' go.mod)
BUILD_DIR      := $(CURDIR)/build
BIN_DIR        := $(BUILD_DIR)/vitess-$(VITESS_VERSION)/bin
TOOLS_DIR      := $(BUILD_DIR)/tools
STAMP_DIR      := $(BUILD_DIR)/stamps

VERSITYGW_VERSION      ?= v1.8.0
FAKE_GCS_SERVER_VERSION ?= v1.56.1
AZURITE_VERSION        ?= 3.35.0
# Prometheus's promtool (its module versions are v0.<minor>): checks config/prometheus and config/grafana.
PROMTOOL_VERSION       ?= v0.316.0

TEST_TIMEOUT ?= 75m
TEST_FLAGS   ?=
FUZZTIME     ?= 60s

# Every non-test Go source of this module: a change to any of them rebuilds the plugin mains.
GO_SOURCES := $(shell find go -name '*.go' -not -name '*_test.go' 2>/dev/null) go.mod go.sum
# The plugin's version stamped into the binaries (vtfifo --version): the
# commit (and tag) they are built from; "devel" outside a git checkout.
PLUGIN_VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
PLUGIN_BINS := $(BIN_DIR)/vttablet $(BIN_DIR)/vtbackup $(BIN_DIR)/vtctld
STOCK_BINS  := $(BIN_DIR)/mysqlctl $(BIN_DIR)/vtctldclient $(BIN_DIR)/stock/vttablet
INIT_DB_SQL := $(BUILD_DIR)/vitess-$(VITESS_VERSION)/init_db_mariadb.sql

# Exported to tests and the demo so they find what the Makefile built.
export VTFIFO_BIN_DIR    := $(BIN_DIR)
export VTFIFO_TOOLS_DIR  := $(TOOLS_DIR)
export VTFIFO_INIT_DB_SQL := $(INIT_DB_SQL)
export VERSITYGW_BIN     := $(TOOLS_DIR)/versitygw
export FAKE_GCS_BIN      := $(TOOLS_DIR)/fake-gcs-server
export AZURITE_BLOB_BIN  := $(TOOLS_DIR)/azurite/node_modules/.bin/azurite-blob
export PROMTOOL_BIN      := $(TOOLS_DIR)/promtool

.PHONY: help setup system-packages go-modules build tools demo test test-unit check test-e2e test-reliability fuzz bench clean flags-doc

help:
	@echo "make demo   set up, build, run the backup/disaster-recovery demo (needs root or sudo for apt)"
	@echo "make test   set up, build, run all tests including end to end (what .ci/run calls)"
	@echo "make test-unit  the quick tier after every edit: Go only, no MariaDB/servers (go test -short)"
	@echo "make check  gofmt, go vet and staticcheck (pinned in tools/go.mod)"
	@echo "make setup  only install missing Debian packages, Go modules and build the binaries"
	@echo "make build  only build $(BIN_DIR)/{vttablet,vtbackup,vtctld,mysqlctl,vtctldclient,vtfifo,stock/vttablet}"
	@echo "make tools  only build the S3/GCS/Azure test servers into $(TOOLS_DIR)"
	@echo "make fuzz   run the fuzz targets for FUZZTIME=$(FUZZTIME) each"
	@echo "make bench  side-by-side benchmarks (BENCH_PROFILE=standard|quick|full) -> docs/benchmarks/side-by-side.md"

setup: system-packages go-modules build

# Idempotent: re-checks cheaply (dpkg-query) and installs only what is missing.
system-packages:
	@scripts/setup.sh

go-modules: $(STAMP_DIR)/go-mod-download

$(STAMP_DIR)/go-mod-download: go.mod go.sum
	$(GO) mod download
	@mkdir -p $(@D) && touch $@

# Operator tools of the project (vtfifo: verify and export backups where they are stored;
# fifoverify: vtfifo verify under its first name).
TOOL_BINS := $(BIN_DIR)/vtfifo $(BIN_DIR)/fifoverify

build: $(PLUGIN_BINS) $(STOCK_BINS) $(INIT_DB_SQL) $(TOOL_BINS)

$(BIN_DIR)/%: $(GO_SOURCES)
	@mkdir -p $(@D)
	$(GO) build -ldflags "-X github.com/vtfifo/vtfifo/go/vt/vtversion.plugin=$(PLUGIN_VERSION)" -o $@ ./go/cmd/$*

# Stock binaries from the pinned module (go.mod "tool" directives); only go.mod/go.sum matter.
$(BIN_DIR)/mysqlctl: go.mod go.sum
	@mkdir -p $(@D)
	$(GO) build -o $@ vitess.io/vitess/go/cmd/mysqlctl

$(BIN_DIR)/vtctldclient: go.mod go.sum
	@mkdir -p $(@D)
	$(GO) build -o $@ vitess.io/vitess/go/cmd/vtctldclient

# Vitess's own vttablet, without our plugin: the adoption test's way back to stock binaries.
$(BIN_DIR)/stock/vttablet: go.mod go.sum
	@mkdir -p $(@D)
	$(GO) build -o $@ vitess.io/vitess/go/cmd/vttablet

# Vitess's config/init_db.sql from the pinned module, without the super_read_only lines
# that MariaDB does not know (mysqlctl init fails on them otherwise).
$(INIT_DB_SQL): go.mod go.sum scripts/gen-init-db-sql.sh
	@mkdir -p $(@D)
	scripts/gen-init-db-sql.sh $(VITESS_VERSION) $@

AZURITE_BLOB := $(TOOLS_DIR)/azurite/node_modules/.bin/azurite-blob

tools: $(TOOLS_DIR)/versitygw $(TOOLS_DIR)/fake-gcs-server $(AZURITE_BLOB) $(TOOLS_DIR)/promtool

# Installed on their own (never added to go.mod). A stamp per version forces a rebuild
# when the version changes.
$(TOOLS_DIR)/versitygw: $(STAMP_DIR)/versitygw-$(VERSITYGW_VERSION)
$(STAMP_DIR)/versitygw-$(VERSITYGW_VERSION):
	@mkdir -p $(TOOLS_DIR) $(@D)
	GOBIN=$(TOOLS_DIR) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
	@touch $@

$(TOOLS_DIR)/fake-gcs-server: $(STAMP_DIR)/fake-gcs-server-$(FAKE_GCS_SERVER_VERSION)
$(STAMP_DIR)/fake-gcs-server-$(FAKE_GCS_SERVER_VERSION):
	@mkdir -p $(TOOLS_DIR) $(@D)
	GOBIN=$(TOOLS_DIR) $(GO) install github.com/fsouza/fake-gcs-server@$(FAKE_GCS_SERVER_VERSION)
	@touch $@

$(TOOLS_DIR)/promtool: $(STAMP_DIR)/promtool-$(PROMTOOL_VERSION)
$(STAMP_DIR)/promtool-$(PROMTOOL_VERSION):
	@mkdir -p $(TOOLS_DIR) $(@D)
	GOBIN=$(TOOLS_DIR) $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)
	@touch $@

# Azurite (Azure Blob Storage emulator) from the npm registry, pinned, into its own prefix.
$(AZURITE_BLOB): $(STAMP_DIR)/azurite-$(AZURITE_VERSION)
$(STAMP_DIR)/azurite-$(AZURITE_VERSION): | system-packages
	@mkdir -p $(TOOLS_DIR)/azurite $(@D)
	npm install --prefix $(TOOLS_DIR)/azurite --no-audit --no-fund azurite@$(AZURITE_VERSION)
	@touch $@

demo: setup
	$(GO) run ./test/endtoend/cmd/demo

# VTFIFO_E2E=require turns "prerequisite missing" into a failure instead of a skip.
test: setup tools check
	VTFIFO_E2E=require GO=$(GO) scripts/gotest.sh -timeout $(TEST_TIMEOUT) -count=1 $(TEST_FLAGS)

# The quick tier: every test that needs MariaDB, a storage server or a Vitess binary is
# skipped by the helper that would start it (go/testutil/tier). Needs Go only.
test-unit:
	$(GO) test -short -count=1 $(TEST_FLAGS) ./...

STATICCHECK := $(TOOLS_DIR)/staticcheck

# Developer tools live in their own module (tools/go.mod) so they never move the
# versions Vitess's build uses.
$(STATICCHECK): tools/go.mod tools/go.sum
	@mkdir -p $(@D)
	cd tools && $(GO) build -o $@ honnef.co/go/tools/cmd/staticcheck

check: $(STATICCHECK)
	@unformatted=$$(gofmt -l go test tools); \
	  if [ -n "$$unformatted" ]; then echo "gofmt -w needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

test-reliability: setup tools
	$(GO) test -timeout 30m -count=1 -v $(TEST_FLAGS) ./test/reliability/

test-e2e: setup tools
	VTFIFO_E2E=require $(GO) test -timeout $(TEST_TIMEOUT) -count=1 -v $(TEST_FLAGS) ./test/endtoend/...

# Fuzz targets: one "package:FuzzName" per entry. Go runs one fuzz target per invocation.
# >>> FUZZ TARGETS (owners of go/xbstream and the plugins: add yours here) <<<
FUZZ_TARGETS ?= \
	./go/xbstream:FuzzReader \
	./go/xbstream:FuzzExtract \
	./go/xbstream:FuzzVerify \
	./go/vt/mysqlctl/splitstorage:FuzzIndex \
	./go/vt/mysqlctl/splitstorage:FuzzComplete \
	./go/vt/mysqlctl/fifobackupengine:FuzzManifest
# <<< FUZZ TARGETS >>>
fuzz:
	@set -e; if [ -z "$(strip $(FUZZ_TARGETS))" ]; then echo "no fuzz targets listed in the Makefile yet"; fi; \
	for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; \
	  echo "== fuzz $$name in $$pkg for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# Side-by-side benchmarks (fifo+split vs Vitess's xtrabackup engine, and the machine's
# ceilings) -> build/bench/results.json, docs/benchmarks/side-by-side.md, docs/benchmarks/img/side-by-side-time.svg.
# BENCH_PROFILE=standard (the default) covers every axis of the issue in ~75 min on 2 cores;
# quick is a 10-minute smoke run, full every combination (for bigger machines).
BENCH_PROFILE ?= standard
bench: setup tools
	BENCH_PROFILE=$(BENCH_PROFILE) scripts/bench.sh

flags-doc: build
	scripts/gen-flags-doc.sh $(BIN_DIR) > docs/flags.md

clean:
	rm -rf $(BUILD_DIR)
