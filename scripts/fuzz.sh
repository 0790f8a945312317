#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 30s), one
# after the other, and keeps what it found in the targets' seed corpora.
# `make test` runs the committed corpora (testdata/fuzz/<Target>) as plain
# tests; this is the exploratory run.
# Usage: scripts/fuzz.sh   (or: make fuzz FUZZTIME=2m)
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-30s}"
# keep is how many newly found inputs per target are copied into its
# committed corpus (the rest stay in the Go build cache).
keep="${FUZZ_KEEP:-0}"
cache="$(go env GOCACHE)/fuzz/$(go list -m)"
status=0
while IFS= read -r line; do
	file="${line%%:*}"
	target="$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"${line#*:}")"
	pkg="./$(dirname "$file")"
	echo "== $target ($pkg, $fuzztime)"
	if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" </dev/null; then
		status=1
	fi
	if [ "$keep" -gt 0 ]; then
		src="$cache/$(go list "$pkg" | sed "s|^$(go list -m)/||")/$target"
		dst="$(dirname "$file")/testdata/fuzz/$target"
		if [ -d "$src" ]; then
			mkdir -p "$dst"
			ls "$src" | head -n "$keep" | while read -r f; do cp -n "$src/$f" "$dst/$f"; done
		fi
	fi
done < <(grep -rE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' cmd internal | sort)
exit $status
