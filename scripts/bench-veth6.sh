#!/usr/bin/env bash
# The IPv6 half of scripts/bench-veth.sh (62-byte UDP/IPv6 frames over
# veth: Linux's IPv6 forwarding, the XDP redirect bound, paraclick's
# conf/iprouter6-veth.click and conf/iprouter6-veth-2q.click on AF_PACKET
# and AF_XDP, at -j 1 and -j 2); bench-veth.sh runs both families in one
# run. Same arguments and settings.
#
# Usage (as root):  scripts/bench-veth6.sh [PATH/TO/paraclick] [SECONDS]
FAMILIES=6 exec "$(dirname "${BASH_SOURCE[0]}")/bench-veth.sh" "$@"
