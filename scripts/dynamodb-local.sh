#!/usr/bin/env bash
# Fetches AWS's DynamoDB Local 1.25.1 into .cache/dynamodb-local (make deps).
#
# AWS publishes DynamoDB Local as a download outside the package registries
# this project may use; the npm package amplify-dynamodb-simulator ships the
# same jar (emulator/DynamoDBLocal.jar). It is not an npm dependency (its
# own dependencies are the Amplify CLI): the tarball is fetched with
# `npm pack`, checked against the pinned integrity, and only its emulator/
# directory is kept. DynamoDB Local runs on Java 17 (Debian:
# openjdk-17-jre-headless); without Java this script fetches nothing and the
# local stack and tests use the embedded emulator (they say so).
set -euo pipefail

VERSION=2.9.30
INTEGRITY='sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ=='
JAR_SHA256=454305e9bc3e6ebcca5b62569869e31563b8d7e346474e94557b2600702146c7
DIR="${DYNAMODB_LOCAL_DIR:-.cache/dynamodb-local}"

if [ -f "$DIR/DynamoDBLocal.jar" ]; then
	exit 0
fi
if ! command -v java >/dev/null 2>&1; then
	echo "note: no java on PATH: DynamoDB Local is not fetched and the embedded DynamoDB emulator is used" >&2
	echo "      (install Java 17, e.g. apt-get install openjdk-17-jre-headless, then run make deps again)" >&2
	exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetching DynamoDB Local (amplify-dynamodb-simulator@$VERSION, ~56 MB) into $DIR"
(cd "$tmp" && npm pack "amplify-dynamodb-simulator@$VERSION" --silent >/dev/null)
tgz="$tmp/amplify-dynamodb-simulator-$VERSION.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 | tr -d '\n')"
if [ "$got" != "$INTEGRITY" ]; then
	echo "error: amplify-dynamodb-simulator@$VERSION does not match its pinned integrity ($got)" >&2
	exit 1
fi
tar xzf "$tgz" -C "$tmp" package/emulator
# And the jar itself (DynamoDB Local 1.25.1).
(cd "$tmp/package/emulator" && echo "$JAR_SHA256  DynamoDBLocal.jar" | sha256sum -c --quiet -)
mkdir -p "$(dirname "$DIR")"
rm -rf "$DIR.partial"
mv "$tmp/package/emulator" "$DIR.partial"
mv "$DIR.partial" "$DIR"
echo "DynamoDB Local ready in $DIR"
