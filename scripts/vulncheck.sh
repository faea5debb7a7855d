#!/usr/bin/env bash
# Runs govulncheck on the module against an offline copy of the Go
# vulnerability database. The public service (vuln.go.dev) is not
# reachable from every build machine, but the module proxy is: the
# database's source, golang.org/x/vulndb, is a module whose data/osv holds
# every report as OSV JSON. Its own indexdb command turns that into the
# database layout govulncheck reads, once per vulndb version (cached
# under $XDG_CACHE_HOME or ~/.cache). TAGS are the build tags (the
# Makefile's; sqlite_fts5 when run alone).
set -euo pipefail
GO="${GO:-go}"
TAGS="${TAGS:-sqlite_fts5}"
GOVULNCHECK="golang.org/x/vuln/cmd/govulncheck@${GOVULNCHECK_VERSION:-v1.9.0}"
VULNDB="golang.org/x/vulndb@${VULNDB_VERSION:-latest}"

# Resolved outside this module so that go.mod stays as it is.
info=$(cd "$(mktemp -d)" && "$GO" mod download -json "$VULNDB")
version=$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Version": "\(.*\)",$/\1/p')
src=$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$version" ] || [ -z "$src" ]; then
  echo "vulncheck: cannot download $VULNDB:" >&2
  printf '%s\n' "$info" >&2
  exit 1
fi

db="${XDG_CACHE_HOME:-$HOME/.cache}/switchboard/vulndb/$version"
if [ ! -f "$db/index/db.json" ]; then
  echo "vulncheck: indexing the vulnerability database at golang.org/x/vulndb@$version (once)" >&2
  rm -rf "$db.tmp"
  mkdir -p "$(dirname "$db")"
  "$GO" run "golang.org/x/vulndb/cmd/indexdb@$version" -vulns "$src/data/osv" -out "$db.tmp"
  rm -rf "$db"
  mv "$db.tmp" "$db"
fi
echo "vulncheck: database golang.org/x/vulndb@$version" >&2
exec "$GO" run "$GOVULNCHECK" -tags "$TAGS" -db "file://$db" ./...
