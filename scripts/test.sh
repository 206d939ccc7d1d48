#!/usr/bin/env bash
# The test command of README.md: every crate's tests against SQLite and the
# embedded Neutron. No set-up needed.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test --workspace --locked "$@"
