#!/usr/bin/env bash
# Builds paraclick (release) and runs an example configuration.
# Usage: scripts/run-example.sh [CONFIG] [paraclick options...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release -q -p paraclick
conf=${1:-conf/fake-iprouter.click}
shift || true
if [[ $# -eq 0 ]]; then
  set -- -h out0.count -h out1.count
fi
exec "${CARGO_TARGET_DIR:-target}/release/paraclick" "$conf" "$@"
