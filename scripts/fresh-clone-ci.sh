#!/usr/bin/env bash
# Runs CI (.ci/run) on a fresh clone of HEAD in a temporary directory, the
# way CI sees the repository: only committed files, nothing installed yet.
# Usage: scripts/fresh-clone-ci.sh   (or: make fresh)
set -euo pipefail
root="$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)"
dir="$(mktemp -d "${TMPDIR:-/tmp}/evp-fresh.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
git clone --quiet "$root" "$dir/repo"
echo "fresh clone of $(git -C "$root" rev-parse --short HEAD) in $dir/repo"
cd "$dir/repo"
.ci/run
