#!/usr/bin/env bash
# Builds the local stack's binary for `make dev`, saying what it does: on a
# fresh machine the first build compiles every function's code, the AWS SDK
# and the emulators (some 460 packages, minutes on 2 cores), which `go run`
# did in silence; later builds come from Go's build cache in seconds.
#
#   scripts/dev-build.sh [output]     (default bin/evp-dev)
set -euo pipefail
GO="${GO:-go}"
out="${1:-bin/evp-dev}"
total="$("$GO" list -deps ./cmd/evp-dev | wc -l | tr -d ' ')"
echo "make dev: building the local stack ($out, up to $total packages; the first build takes minutes, later ones seconds)"
start=$SECONDS
n=0
last=$SECONDS
# go build -v names each package as it compiles it (cached ones are not
# compiled); anything else it prints (an error) is passed on as is.
while IFS= read -r line; do
	if [[ "$line" =~ ^[A-Za-z0-9_./~-]+$ ]]; then
		n=$((n + 1))
		if [ $((SECONDS - last)) -ge 10 ] || [ "$n" -eq 1 ]; then
			echo "  compiling: $n of up to $total packages after $((SECONDS - start))s ($line)"
			last=$SECONDS
		fi
		continue
	fi
	if [[ "$line" =~ ^__exit\ ([0-9]+)$ ]]; then
		rc="${BASH_REMATCH[1]}"
		continue
	fi
	echo "$line"
done < <("$GO" build -v -o "$out" ./cmd/evp-dev 2>&1; echo "__exit $?")
if [ "${rc:-1}" -ne 0 ]; then
	echo "make dev: the build failed" >&2
	exit "${rc:-1}"
fi
if [ "$n" -eq 0 ]; then
	echo "make dev: $out is up to date"
else
	echo "make dev: built $out in $((SECONDS - start))s (packages compiled: $n)"
fi
