# What the netns test scripts share; sourced by them (not run). The caller
# sets FAILED=0 first and defines its own cleanup, which may use
# delete_namespaces.

# require_root_and_tools NAME TOOL...: exits 2, saying why, unless run as
# root with every TOOL on the PATH (scripts/bootstrap.sh installs them).
require_root_and_tools() {
  local name=$1; shift
  [[ $(id -u) -eq 0 ]] || { echo "$name: must run as root (namespaces, veth pairs, packet sockets)" >&2; exit 2; }
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || { echo "$name: missing tool '$t' (scripts/bootstrap.sh installs it)" >&2; exit 2; }
  done
}

pass() { echo "ok    $*"; }
fail() { echo "FAIL  $*"; FAILED=1; }

# delete_namespaces NS...: ends what still runs in each namespace
# (deleting a namespace kills nothing) and deletes it.
delete_namespaces() {
  local ns pids
  for ns in "$@"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [[ -n $pids ]] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  return 0
}

# add_namespaces_without_ipv6 NS...: creates each namespace with IPv6
# off, so no router solicitation or neighbour discovery reaches its links:
# only what the test sends does.
add_namespaces_without_ipv6() {
  local ns
  for ns in "$@"; do
    ip netns add "$ns"
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
  done
}

# two_hosts H1 H2 R: the topology of run.sh and host.sh.
#
#   h1 (10.0.1.2/24) eth0 ==veth== r0 [R] r1 ==veth== eth0 h2 (10.0.2.2/24)
#                                                 (MTU 1400 on this side)
#
# r0 is 02:00:00:00:01:01 and r1 02:00:00:00:02:01; the hosts route
# through 10.0.1.1 and 10.0.2.1. R holds no addresses and does not forward:
# only paraclick handles r0 and r1.
two_hosts() {
  local h1=$1 h2=$2 r=$3 ns
  ip netns add "$h1"
  ip netns add "$h2"
  ip netns add "$r"
  ip -n "$r" link add r0 type veth peer name eth0 netns "$h1"
  ip -n "$r" link add r1 type veth peer name eth0 netns "$h2"
  ip -n "$r" link set r0 address 02:00:00:00:01:01
  ip -n "$r" link set r1 address 02:00:00:00:02:01
  ip -n "$r" link set r1 mtu 1400
  ip -n "$h2" link set eth0 mtu 1400
  for ns in "$h1" "$h2" "$r"; do ip -n "$ns" link set lo up; done
  ip -n "$r" link set r0 up
  ip -n "$r" link set r1 up
  ip -n "$h1" link set eth0 up
  ip -n "$h2" link set eth0 up
  ip -n "$h1" addr add 10.0.1.2/24 dev eth0
  ip -n "$h2" addr add 10.0.2.2/24 dev eth0
  ip -n "$h1" route add default via 10.0.1.1
  ip -n "$h2" route add default via 10.0.2.1
  ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=0
}

# write_httpd FILE: a python3 HTTP server, `python3 FILE DIR ADDR PORT`,
# serving DIR. http.server's own server_bind looks the host name up
# (getfqdn), which stalls without DNS: this one binds without it.
write_httpd() {
  cat >"$1" <<'PY'
import http.server, socketserver, sys
class Server(http.server.ThreadingHTTPServer):
    def server_bind(self):
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]
handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=sys.argv[1])
Server((sys.argv[2], int(sys.argv[3])), handler).serve_forever()
PY
}

# wait_for SECONDS WHAT CMD...: polls CMD (every 50 ms) until it succeeds,
# for an event rather than a guessed duration. Returns 0 at the event;
# after SECONDS (a generous bound, not the expected time) it fails the
# check loudly, naming WHAT it waited for, and returns 1.
wait_for() {
  local limit=$1 what=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@"; do
    if ((SECONDS >= deadline)); then
      fail "waited $limit s for $what"
      return 1
    fi
    sleep 0.05
  done
}
