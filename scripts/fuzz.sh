#!/usr/bin/env bash
# Runs every fuzz target of the module (func Fuzz… in a _test.go file) for
# FUZZTIME each (default 5s): the parsers of outside input get a short
# run of new inputs on every CI run, beyond their seed corpora, which
# `make test` already runs. A failing input is written under the
# package's testdata/fuzz/ for `go test` to replay. TAGS are the build
# tags (the Makefile's; sqlite_fts5 when run alone).
#
# Go's fuzzing coordinator sometimes ends a run with a bare "context
# deadline exceeded" when a busy worker misses the -fuzztime deadline
# (a race in the toolchain): no input failed and none is written. Such a
# run counts as passed once the target's corpus replays cleanly; a run
# that writes a failing input, or fails any other way, fails the script.
set -euo pipefail
GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-5s}"
TAGS="${TAGS:-sqlite_fts5}"
targets=0
# The number of inputs in a corpus directory (0 when there is none).
inputs() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }
for pkg in $("$GO" list -tags "$TAGS" ./...); do
  dir=$("$GO" list -tags "$TAGS" -f '{{.Dir}}' "$pkg")
  for fn in $("$GO" test -tags "$TAGS" -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "fuzz: $pkg $fn ($FUZZTIME)"
    corpus="$dir/testdata/fuzz/$fn"
    before=$(inputs "$corpus")
    if ! out=$("$GO" test -tags "$TAGS" -run '^$' -fuzz "^${fn}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1); then
      after=$(inputs "$corpus")
      bare=$(printf '%s\n' "$out" | grep -Ev '^(fuzz: elapsed|--- FAIL: |FAIL|exit status |[[:space:]]*context deadline exceeded$)' || true)
      if [ "$after" = "$before" ] && [ -z "$bare" ] &&
        printf '%s\n' "$out" | grep -q 'context deadline exceeded' &&
        "$GO" test -tags "$TAGS" -run "^${fn}\$" "$pkg" >/dev/null 2>&1; then
        echo "fuzz: $fn ended on the coordinator's deadline with no failing input; its corpus replays cleanly"
      else
        printf '%s\n' "$out" | grep -v '^fuzz: elapsed' >&2
        exit 1
      fi
    fi
    targets=$((targets + 1))
  done
done
echo "fuzz: $targets targets passed"
