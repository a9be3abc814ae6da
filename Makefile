# Callsign: `make run` serves on the embedded defaults, `make test` runs every test.
GO       ?= go
# gin's msgpack codec is unused; leaving it out saves a fifth of the build.
TAGS     := nomsgpack
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/callsign/callsign/internal/cli.Version=$(VERSION)
BIN      := bin/callsign
# The AWS SDK (SES) must never ask the EC2 instance metadata service for
# credentials from a test or benchmark: everything they reach is on
# loopback. (Not for run: a deployment on EC2 may take its role's.)
test test-faults bench bench-long bench-compare: export AWS_EC2_METADATA_DISABLED := true
# The OpenAPI linter's npm package, pinned in its package-lock.json.
OPENAPI_LINT := scripts/openapi-lint

.PHONY: run build test test-faults bench bench-long bench-compare lint tidy settings-doc sdk sdk-deps sdk-check test-sdk

run: build
	./$(BIN) serve

build:
	@echo "Building $(BIN) (the first build downloads and compiles the dependencies: a minute or two)…"
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/callsign

# Every package runs under the race detector but the end-to-end tests in
# e2e/, which run beside them without it (E2E_RACE=-race adds it; CI does):
# under -race the whole service costs 2.5 times the CPU, 452 s of a 579 s
# make test on this 2-core machine. They start many real instances side by
# side (t.Parallel), mostly waiting on sockets, timers and the browser, so
# eight at a time keep the cores busy.
E2E_RACE ?=
UNIT_PKGS = $(shell $(GO) list ./... | grep -v '/e2e$$')
test:
	$(GO) vet -tags $(TAGS) ./...
	@$(GO) test -tags $(TAGS) -race -count=1 -parallel 8 -timeout 30m $(UNIT_PKGS) & unit=$$!; \
	$(MAKE) -s test-sdk & sdk=$$!; \
	$(GO) test -tags $(TAGS) $(E2E_RACE) -count=1 -parallel 8 -timeout 30m ./e2e/; e2e=$$?; \
	wait $$unit; unit=$$?; wait $$sdk; sdk=$$?; \
	if [ $$unit -ne 0 ] || [ $$e2e -ne 0 ] || [ $$sdk -ne 0 ]; then echo "make test: FAILED"; exit 1; fi

# The SDKs (docs: sdk/typescript/README.md, sdk/python/README.md) take their
# types from the OpenAPI document: openapi-typescript writes
# sdk/typescript/src/schema.ts, sdk/python/gen.py writes
# sdk/python/callsign/models.py. `make sdk` regenerates both (commit the
# result); sdk-check fails when they differ from what the document gives.
SDK_TS  := sdk/typescript
SDK_GEN := node $(SDK_TS)/scripts/openapi-json.mjs adapters/httpapi/openapi.yaml | python3 sdk/python/gen.py
sdk-deps:
	@[ -d $(SDK_TS)/node_modules ] || npm ci --prefix $(SDK_TS) --no-audit --no-fund --silent
sdk: sdk-deps
	cd $(SDK_TS) && npm run --silent generate
	$(SDK_GEN) > sdk/python/callsign/models.py
sdk-check: sdk-deps
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	(cd $(SDK_TS) && npx openapi-typescript ../../adapters/httpapi/openapi.yaml --root-types --root-types-no-schema-prefix \
		--output $$tmp/schema.ts >/dev/null) && $(SDK_GEN) > $$tmp/models.py && \
	diff -q $$tmp/schema.ts $(SDK_TS)/src/schema.ts && diff -q $$tmp/models.py sdk/python/callsign/models.py || \
		{ echo "the SDKs' generated types are stale: run make sdk and commit the result"; exit 1; }

# Both SDKs' tests, each against a real `callsign serve` it starts (SQLite,
# simulated telephony), their example agents, `npm pack` into an empty
# project type-checked under tsc --strict, and pip install.
SDK_TEST_BIN := $(CURDIR)/bin/callsign-sdk-test
test-sdk: sdk-check
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -o $(SDK_TEST_BIN) ./cmd/callsign
	cd $(SDK_TS) && npm run --silent build && CALLSIGN_TEST_BINARY=$(SDK_TEST_BIN) node --test test/
	cd sdk/python && CALLSIGN_TEST_BINARY=$(SDK_TEST_BIN) python3 -m unittest

# Fault tests (issue 11): the real binary killed with SIGKILL during SMTP
# ingest (5 cycles, SQLite and PostgreSQL, counted by Message-ID) and cut off
# from PostgreSQL for 10 s by a TCP proxy under load; then each fuzz target
# (corpora in testdata/fuzz/ beside each). Loopback only, a few minutes;
# needs CALLSIGN_TEST_POSTGRES_URL. Each target's budget is a count of runs
# (10-20 s each on a quiet 2-core machine; the SMTP and IMAP targets open
# loopback connections per run, and more than about 10,000 of those within a
# minute run out of ephemeral ports), not a duration: Go 1.26's fuzz
# coordinator can fail a duration budget as it ends with a bare "context
# deadline exceeded" and no input found (go.dev/issue/75804, fixed in Go
# 1.27; CI met it once). FUZZTIME=30s or FUZZTIME=5000x sets one budget for all.
FUZZTIME ?=
FUZZ_TARGETS := ./adapters/mailmime:FuzzParse:150000x ./adapters/smtpin:FuzzSession:6000x \
	./adapters/httpapi:FuzzReadInput:100000x ./adapters/imap:FuzzServerCommands:5000x
test-faults:
	$(GO) test -tags '$(TAGS) faults' -count=1 -timeout 15m -run '^TestFault' -v ./e2e/
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; fn=$${rest%%:*}; budget=$${rest#*:}; \
		[ -n "$(FUZZTIME)" ] && budget=$(FUZZTIME); \
		echo "fuzzing $$fn in $$pkg for $$budget"; \
		$(GO) test -tags $(TAGS) -run '^$$' -fuzz "^$$fn\$$" -fuzztime $$budget $$pkg || exit 1; \
	done

# Benchmarks: Go benchmarks over real sockets and both databases (PostgreSQL
# when CALLSIGN_TEST_POSTGRES_URL is set; BENCH narrows them, e.g.
# BENCH=Identity), then SMTP ingest and cursor polling measured with the
# team's load generator against the real binary (scripts/bench-smtp.sh).
BENCH ?= .
bench:
	$(GO) test -tags $(TAGS) -run '^$$' -bench '$(BENCH)' -count=1 ./...
	scripts/bench-smtp.sh

# This checkout against REF, side by side on SQLite and (with
# CALLSIGN_TEST_POSTGRES_URL) PostgreSQL: interleaved rounds with the null
# sink, ratios with min/median/max (scripts/bench-compare.sh; ROUNDS, N, C).
bench-compare:
	REF=$(REF) scripts/bench-compare.sh

# The long SQLite cases (tens of minutes; not in CI): the WAL over a
# 200,000-message run, and ingest and list pages with 1,000,000 messages
# stored (scripts/bench-long.sh); with CALLSIGN_TEST_POSTGRES_URL set, list
# pages and searches at 100,000 and 1,000,000 messages on PostgreSQL too
# (scripts/bench-long-pg.sh).
bench-long:
	scripts/bench-long.sh
	if [ -n "$$CALLSIGN_TEST_POSTGRES_URL" ]; then scripts/bench-long-pg.sh; fi

# staticcheck at a pinned version, built from the module proxy like any
# module (`go run pkg@version` keeps it out of go.mod).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags $(TAGS) ./...
	$(GO) run $(STATICCHECK) -tags $(TAGS) ./...
	@echo "Linting the OpenAPI document with Redocly CLI (installed from npm into $(OPENAPI_LINT)/node_modules)"
	npm ci --prefix $(OPENAPI_LINT) --no-audit --no-fund --silent
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(OPENAPI_LINT)/node_modules/.bin/redocly lint \
		--config $(OPENAPI_LINT)/redocly.yaml adapters/httpapi/openapi.yaml

# The README's settings table is made from config/settings.go.
settings-doc:
	CALLSIGN_UPDATE_README=1 $(GO) test -tags $(TAGS) -count=1 -run TestReadmeSettingsTable ./config/

# modernc.org/sqlite's test-only dependencies are not all on the proxy, so
# tidy must tolerate them (see docs/design.md).
tidy:
	$(GO) mod tidy -e
