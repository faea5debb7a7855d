# Switchboard's build. One fixed build-tag set (TAGS) so the cgo build of
# go-sqlite3 is compiled once per mode (plain and -race) and cached.
# sqlite_fts5 compiles SQLite's full-text search (FTS5), which the
# insights of SPEC §10.4 are searched with; a build without it refuses to
# open a SQLite database.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN         := bin/switchboard
FUZZTIME    ?= 5s
TAGS        := sqlite_fts5
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
export CGO_ENABLED := 1
# go.mod names the Go release to build with (the newest patch of its
# minor version, for its security fixes); an older local Go downloads it
# from the module proxy once.
export GOTOOLCHAIN := auto

.PHONY: all build run test test-postgres lint fuzz bench bench-go deps browser postgres screenshots clean

all: build

deps:
	$(GO) mod download

build: deps
	$(GO) build -tags '$(TAGS)' -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/switchboard

# Starts the gateway on the example configuration in this directory; the
# web widget is at http://127.0.0.1:8080. No secrets needed.
run: build
	./$(BIN) serve --config .

# Every test, with the race detector. Browser tests need Debian's chromium,
# which scripts/ensure-chromium.sh installs when it is missing; PostgreSQL
# tests need a server, which scripts/ensure-postgres.sh installs and starts
# (a throwaway cluster, left running for the next run; stop it with
# `scripts/ensure-postgres.sh stop`).
test: deps browser postgres
	$(GO) test -tags '$(TAGS)' -race -count=1 -timeout 14m ./...

# The gateway's end-to-end tests again, each on a PostgreSQL database of
# its own instead of its SQLite file (`make test` runs the PostgreSQL
# store's own tests and a few end-to-end ones on PostgreSQL).
test-postgres: deps browser postgres
	SWITCHBOARD_TEST_STORE=postgres $(GO) test -tags '$(TAGS)' -race -count=1 -timeout 14m ./cmd/switchboard

browser:
	@scripts/ensure-chromium.sh

# Without a server the PostgreSQL tests are skipped, except under CI=true,
# where this target fails the run. SWITCHBOARD_TEST_POSTGRES, a URL, names
# a server of your own instead.
postgres:
	@[ -n "$${SWITCHBOARD_TEST_POSTGRES:-}" ] || scripts/ensure-postgres.sh >/dev/null || \
		{ [ "$${CI:-}" != true ] && echo "make: PostgreSQL tests will be skipped" >&2; }

lint: deps
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags '$(TAGS)' ./...
	$(GO) run $(STATICCHECK) -tags '$(TAGS)' ./...
	GO=$(GO) TAGS='$(TAGS)' scripts/vulncheck.sh

# Every fuzz target for a short time (FUZZTIME each, default 5s); CI runs
# it after the tests.
fuzz: deps
	GO=$(GO) FUZZTIME=$(FUZZTIME) TAGS='$(TAGS)' scripts/fuzz.sh

# One table from one run (about 90 seconds): the gateway binary against a
# bare WebSocket echo server and a fake model server on this machine; see
# docs/performance.md. BENCHFLAGS=-quick for a smoke run.
bench: deps
	$(GO) run -tags '$(TAGS)' ./internal/bench $(BENCHFLAGS)

# The Go micro-benchmarks (the in-process pipeline and others).
bench-go: deps
	$(GO) test -tags '$(TAGS)' -run '^$$' -bench . -benchmem ./...

# The README's screenshots (docs/img/widget.png, widget-mobile.png,
# dashboard.png): the gateway on the example configuration with a little
# traffic, photographed by chromium at fixed sizes.
screenshots: deps browser
	SCREENSHOTS=docs/img $(GO) test -tags '$(TAGS)' -count=1 -run '^TestScreenshots$$' ./cmd/switchboard

clean:
	rm -rf bin
