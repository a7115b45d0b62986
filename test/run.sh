#!/bin/sh
# The whole suite: install what is missing, lint and format check, type-check, run mocha.
# Extra arguments go to mocha.
set -e
cd "$(dirname "$0")/.."
sh test/ensure-deps.sh
npx biome ci .
npx tsc --noEmit -p .
npx mocha "$@"
