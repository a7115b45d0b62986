#!/bin/sh
# The whole suite: install what is missing, type-check, run mocha. Extra arguments go to mocha.
set -e
cd "$(dirname "$0")/.."
sh test/ensure-deps.sh
npx tsc --noEmit -p .
npx mocha "$@"
