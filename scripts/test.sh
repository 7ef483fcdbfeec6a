#!/usr/bin/env bash
# Runs the whole test suite. Node 20's runner needs explicit files: given a directory it finds nothing and
# still exits 0, so the list is built here and an empty list is an error.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t files < <(find dist/test -name '*.test.js' | sort)
if [ "${#files[@]}" -eq 0 ]; then echo "test.sh: no compiled tests under dist/test (did the build run?)" >&2; exit 1; fi
node --test --test-reporter=spec --test-concurrency=2 "${files[@]}"
