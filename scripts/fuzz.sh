#!/usr/bin/env bash
# Runs every fuzz target of the module (func Fuzz… in a _test.go file) for
# FUZZTIME each (default 5s): the parsers of outside input get a short
# run of new inputs on every CI run, beyond their seed corpora, which
# `make test` already runs. A failing input is written under the
# package's testdata/fuzz/ for `go test` to replay. TAGS are the build
# tags (the Makefile's; sqlite_fts5 when run alone).
set -euo pipefail
GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-5s}"
TAGS="${TAGS:-sqlite_fts5}"
targets=0
for pkg in $("$GO" list -tags "$TAGS" ./...); do
  for fn in $("$GO" test -tags "$TAGS" -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "fuzz: $pkg $fn ($FUZZTIME)"
    if ! out=$("$GO" test -tags "$TAGS" -run '^$' -fuzz "^${fn}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1); then
      printf '%s\n' "$out" | grep -v '^fuzz: elapsed' >&2
      exit 1
    fi
    targets=$((targets + 1))
  done
done
echo "fuzz: $targets targets passed"
