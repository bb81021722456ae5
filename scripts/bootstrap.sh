#!/usr/bin/env bash
# Installs what paraclick needs on a Debian machine (as root): to build
# and run it, a Rust toolchain (cargo) and libpcap; with --tests, also
# what the test suite uses (scripts/test.sh passes it); with --bench,
# what the benchmark scripts use. Safe to run again: it installs only
# what is missing.
#
# Usage: scripts/bootstrap.sh [--tests] [--bench] [--list]
#   --tests  also the test suite's tools: network namespace and packet
#            tools (ethtool included), Python with scapy, Chromium and
#            its driver, rustfmt and clippy, qemu (the emulated Linux
#            IPsec peer of tests/netns/ipsec-linux.sh, without its
#            recommends)
#   --bench  also the benchmark scripts' tools (scripts/bench-*.sh,
#            livelock-veth.sh, text-layout.sh): the namespace tools,
#            ethtool, a C compiler (the XDP generator), xdp-tools
#            (xdp-bench, the XDP redirect bound), valgrind, GNU time
#            and bc
#   --list   print the Debian packages the other options ask for, one a
#            line, installed or not, and install nothing
set -euo pipefail

tests=false
bench=false
list=false
for arg in "$@"; do
  case $arg in
    --tests) tests=true ;;
    --bench) bench=true ;;
    --list) list=true ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bootstrap: unknown option '$arg' (--tests, --bench, --list)" >&2; exit 2 ;;
  esac
done

need_apt=()
# A command on the PATH, or an absolute path that is executable (GNU
# time is /usr/bin/time: `time` alone is the shell's keyword).
have() { if [[ $1 == /* ]]; then [[ -x $1 ]]; else command -v "$1" >/dev/null 2>&1; fi; }

export PATH="$HOME/.cargo/bin:$PATH"

# command:package of the test suite: network namespaces, Linux's own
# tools, Python for independent packet checks; chromium and chromedriver
# for the web view's browser test (tests/web.rs); prometheus for the
# metrics test (tests/metrics.rs); strace for the start-up test
# (tests/startup.rs); ethtool for the netns tests' offload
# checks (tests/netns/ip6.sh) and the veth benchmarks' XDP generator.
pairs=()
if $tests; then
  pairs+=("ip:iproute2" "python3:python3" "pip3:python3-pip" "ping:iputils-ping" "tcpdump:tcpdump" "curl:curl" "gzip:gzip" "bzip2:bzip2" "ethtool:ethtool" "strace:strace" "chromium:chromium" "chromedriver:chromium-driver" "prometheus:prometheus")
fi
# The benchmark scripts': the veth topology (scripts/lib/veth.sh: ip,
# ping, taskset, ethtool, cc for scripts/lib/xdpgen.c), xdp-bench (the
# XDP redirect bound of bench-veth.sh), valgrind (callgrind counts of
# bench-fake6.sh and text-layout.sh), GNU time (bench-nat.sh,
# bench-threads.sh), bc (notify-bench.sh).
if $bench; then
  pairs+=("ip:iproute2" "ping:iputils-ping" "python3:python3" "taskset:util-linux" "ethtool:ethtool" "cc:gcc" "xdp-bench:xdp-tools" "valgrind:valgrind" "/usr/bin/time:time" "bc:bc")
fi
# qemu-system-x86 is installed without its recommends (no firmware
# packages, no GUI): tests/netns/ipsec-linux.sh boots a kernel directly.
# The guest's kernel and busybox-static are not installed: its builder
# (tests/netns/ipsec-guest/build.sh) fetches them with `apt-get
# download` at first use and unpacks them under target/.
norecommends=()
if $tests; then
  norecommends+=("qemu-system-x86_64:qemu-system-x86")
fi
if $list; then
  # To build: cargo, rustc and libpcap.
  printf '%s\n' cargo rustc libpcap-dev libxdp-dev libbpf-dev clang
  for pair in ${pairs[@]+"${pairs[@]}"} ${norecommends[@]+"${norecommends[@]}"}; do echo "${pair#*:}"; done | awk '!seen[$0]++'
  exit 0
fi
need_norec=()
for pair in ${norecommends[@]+"${norecommends[@]}"}; do
  have "${pair%%:*}" || need_norec+=("${pair#*:}")
done
for pair in ${pairs[@]+"${pairs[@]}"}; do
  cmd=${pair%%:*}; pkg=${pair#*:}
  have "$cmd" || [[ " ${need_apt[*]-} " == *" $pkg "* ]] || need_apt+=("$pkg")
done
if ! have cargo; then
  need_apt+=(cargo rustc)
fi
# libpcap: FromDevice's BPF_FILTER and PRIORITY_FILTER compile tcpdump
# expressions with it, opened (dlopen) when a filter is first compiled,
# not linked; the device tests use those filters.
# (Not `ldconfig -p | grep -q`: under pipefail grep's early exit fails
# the pipeline, and a missing /usr/lib/libpcap.so failed the `ls`.)
have_libpcap=false
for f in /usr/lib/*/libpcap.so /usr/lib/libpcap.so /usr/lib64/libpcap.so; do
  [[ -e $f ]] && have_libpcap=true
done
$have_libpcap || need_apt+=(libpcap-dev)
# libxdp and libbpf (headers and libraries): FromDevice/ToDevice METHOD
# XDP open AF_XDP sockets through libxdp (src/linux/xsk_shim.c of
# crates/io is compiled against them, and opens libxdp.so.1 when a
# router first opens such a socket): needed to build. libxdp1 brings
# its default XDP program (xsk_def_xdp_prog.o), built from source by
# Debian.
[[ -e /usr/include/xdp/xsk.h ]] || need_apt+=(libxdp-dev)
[[ -e /usr/include/bpf/libbpf.h ]] || need_apt+=(libbpf-dev)
# clang: crates/io/build.rs compiles the XDP program of FromDevice's
# PASS filter (src/linux/xdp_pass.bpf.c) for the BPF target: needed to
# build. Any clang with the BPF target will do (Debian's has it).
have clang || ls /usr/bin/clang-[0-9]* >/dev/null 2>&1 || need_apt+=(clang)
if ((${#need_apt[@]} + ${#need_norec[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "bootstrap: missing ${need_apt[*]} ${need_norec[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "bootstrap: installing ${need_apt[*]} ${need_norec[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  if ((${#need_apt[@]})); then
    apt-get install -y -qq "${need_apt[@]}" >/dev/null
  fi
  if ((${#need_norec[@]})); then
    apt-get install -y -qq --no-install-recommends "${need_norec[@]}" >/dev/null
  fi
fi

if ! have cargo; then
  echo "bootstrap: cargo is still missing after installation" >&2
  exit 1
fi
# rustc >= 1.86 is required (trait upcasting); say so clearly if too old.
ver=$(rustc --version | awk '{print $2}')
major=${ver%%.*}; rest=${ver#*.}; minor=${rest%%.*}
if (( major < 1 || (major == 1 && minor < 86) )); then
  echo "bootstrap: rustc $ver is too old; paraclick needs rustc 1.86 or newer" >&2
  exit 1
fi
if ! $tests; then
  exit 0
fi
# The test suite's lints and Python packages.
for comp in rustfmt clippy; do
  if ! cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1; then
    if have rustup; then rustup component add "$comp" >/dev/null 2>&1 || true; fi
  fi
done
# scapy: an independent packet library for building and checking test packets.
if ! python3 -c 'import scapy' >/dev/null 2>&1; then
  pip3 install -q scapy 2>/dev/null || pip3 install -q --break-system-packages scapy
fi
# cryptography: scapy's ESP implementation (the IPsec tests check against it).
if ! python3 -c 'import cryptography' >/dev/null 2>&1; then
  pip3 install -q cryptography 2>/dev/null || pip3 install -q --break-system-packages cryptography
fi
