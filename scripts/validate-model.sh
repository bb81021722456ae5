#!/bin/sh
# The model against the harness: for the IP router and the other standard
# configurations (and any NAT / VPN / QoS configuration in conf/), at 1 and
# 2 threads, the predicted and the measured MLFFR and the error of each.
# Extra arguments go to `paraclick model --validate` (CONFIG files,
# NAME=VALUE defines, --duration SECONDS).
set -e
cd "$(dirname "$0")/.."
cargo build --release -q -p paraclick
exec ./target/release/paraclick model --validate "$@"
