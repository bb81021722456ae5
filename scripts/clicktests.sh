#!/usr/bin/env bash
# Runs Click's own regression suite (the test/**/*.clicktest files of a
# kohler/click checkout, driven by its perl test/clicktest) with paraclick
# standing in as `click`, and prints PASS, FAIL or SKIP per test and the
# totals. Nothing of Click is built: only its test files and driver are used.
#
#   scripts/clicktests.sh PATH/TO/click-checkout [PARACLICK] [TEST ...]
#
# PARACLICK is the paraclick binary to test (default: built here with
# `cargo build --profile ci`). TESTs, if given, are paths under test/
# (e.g. standard/Tee-01.clicktest); default: every test.
# Environment: CLICKTEST_TIMEOUT (seconds per test, default 60);
# CLICKTEST_LOG (a file that receives each failing test's report).
#
# A test whose %require fails is SKIP. `click-buildtool provides X ...`,
# which many tests require, is answered by a stand-in that says yes when
# paraclick has every named element class (`paraclick doc --list`) or
# feature: umultithread (paraclick runs on several threads) is provided,
# linuxmodule is not. `click-flatten ARGS` runs `paraclick flatten ARGS`,
# and click-align, click-undead, click-combine, click-uncombine and
# click-xform the paraclick subcommands of those names.
# `clicktest` (which Click's meta-tests tools/clicktest-* run) is the
# checkout's own test/clicktest driver.
#
# McastSocket-02 and -03 send multicast datagrams along the host's multicast
# route (the default route on most hosts), so they would leave the machine.
# As root, they run in a network namespace made for them: loopback plus a
# veth pair whose two ends both stay in the namespace, the multicast route
# on one end (a device other than lo, as those tests assume; lo would loop
# every datagram back, and McastSocket-03 expects none without LOOP).
# Otherwise they are skipped, each with that reason.
#
# Not part of scripts/test.sh: CI has no Click checkout.
set -uo pipefail

if (($# < 1)) || [[ ! -f "$1/test/clicktest" ]]; then
  echo "usage: $0 PATH/TO/click-checkout [PARACLICK] [TEST ...]" >&2
  echo "  (the checkout must have test/clicktest)" >&2
  exit 2
fi
click_dir=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")/.." && pwd)
if (($# >= 1)) && [[ "$1" != *.clicktest ]]; then
  bin=$(realpath "$1")
  shift
else
  echo "== building paraclick (cargo build --profile ci)" >&2
  (cd "$here" && cargo build --profile ci -p paraclick -q) || exit 1
  bin="${CARGO_TARGET_DIR:-$here/target}/ci/paraclick"
  bin=$(realpath "$bin")
fi
[[ -x "$bin" ]] || { echo "$0: $bin is not executable" >&2; exit 2; }
command -v perl >/dev/null || { echo "$0: perl is needed" >&2; exit 2; }

timeout_s=${CLICKTEST_TIMEOUT:-60}
work=$(mktemp -d "${TMPDIR:-/tmp}/clicktests.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/run"
ln -s "$bin" "$work/bin/click"
"$bin" doc --list | awk '{print $1}' >"$work/classes"
cat >"$work/bin/click-buildtool" <<EOF
#!/usr/bin/env bash
# Stand-in for Click's click-buildtool: answers 'provides' only.
[[ "\${1:-}" == provides ]] || { echo "click-buildtool: only 'provides' here" >&2; exit 1; }
shift
for x in "\$@"; do
  case "\$x" in
    umultithread|userlevel) continue ;;
    linuxmodule|bsdmodule|ns|minios) exit 1 ;;
  esac
  grep -qxF -- "\$x" "$work/classes" || exit 1
done
EOF
chmod +x "$work/bin/click-buildtool"
cat >"$work/bin/click-flatten" <<EOF
#!/usr/bin/env bash
# Stand-in for Click's click-flatten.
exec "$bin" flatten "\$@"
EOF
chmod +x "$work/bin/click-flatten"
for tool in align undead combine uncombine xform; do
  cat >"$work/bin/click-$tool" <<EOF
#!/usr/bin/env bash
# Stand-in for Click's click-$tool.
exec "$bin" $tool "\$@"
EOF
  chmod +x "$work/bin/click-$tool"
done
# Click's meta-tests (tools/clicktest-*) run the driver by name: the one
# from the checkout given on the command line.
cat >"$work/bin/clicktest" <<EOF
#!/usr/bin/env bash
# Click's own test driver, from the checkout under test.
exec perl "$click_dir/test/clicktest" "\$@"
EOF
chmod +x "$work/bin/clicktest"

cd "$click_dir/test" || exit 2
if (($# > 0)); then
  tests=("$@")
else
  mapfile -t tests < <(find . -name '*.clicktest' | sed 's,^\./,,' | LC_ALL=C sort)
fi

# Tests whose datagrams would leave the host: run in a private network
# namespace, or not at all.
netns_tests=" userlevel/McastSocket-02.clicktest userlevel/McastSocket-03.clicktest "
netns_setup='ip link set lo up &&
  ip link add mc0 type veth peer name mc1 &&
  ip link set mc0 up && ip link set mc1 up &&
  ip route add 224.0.0.0/4 dev mc0 || { echo "clicktests.sh: network namespace setup failed" >&2; exit 97; }
exec "$@"'
can_netns() {
  [[ $(id -u) == 0 ]] && command -v unshare >/dev/null && command -v ip >/dev/null
}

pass=0 fail=0 skip=0
passed=() failed=()
for t in "${tests[@]}"; do
  out="$work/out"
  wrap=()
  if [[ "$netns_tests" == *" $t "* ]]; then
    if ! can_netns; then
      echo "SKIP $t (its multicast datagrams would leave through the host's route; needs root, unshare and ip to run in a private network namespace)"
      skip=$((skip + 1))
      continue
    fi
    wrap=(unshare -n bash -c "$netns_setup" clicktests-netns)
  fi
  # clicktest makes its temporary directories in the working directory.
  (cd "$work/run" && PATH="$work/bin:$PATH" timeout -k 5 "$((timeout_s + 10))" \
    "${wrap[@]}" perl "$click_dir/test/clicktest" -t "$timeout_s" "$click_dir/test/$t") >"$out" 2>&1
  rc=$?
  if ((rc == 97)) && grep -q "network namespace setup failed" "$out"; then
    echo "SKIP $t (could not set up its private network namespace)"
    skip=$((skip + 1))
    continue
  fi
  summary=$(grep -E '^clicktest: [0-9]+ success' "$out" | tail -1)
  if [[ "$summary" =~ ([0-9]+)\ success.*\ ([0-9]+)\ failure.*\ ([0-9]+)\ skipped ]]; then
    s=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} k=${BASH_REMATCH[3]}
  else
    s=0 f=1 k=0
  fi
  if ((k > 0 && f == 0 && s == 0)); then
    echo "SKIP $t"
    skip=$((skip + 1))
  elif ((rc == 0 && s > 0 && f == 0)); then
    echo "PASS $t"
    pass=$((pass + 1))
    passed+=("$t")
  else
    ((rc == 124 || rc == 137)) && echo "  (timed out after ${timeout_s}s)" >>"$out"
    echo "FAIL $t"
    fail=$((fail + 1))
    failed+=("$t")
    if [[ -n "${CLICKTEST_LOG:-}" ]]; then
      { echo "== $t"; sed "s,$work/run/,,g" "$out"; } >>"$CLICKTEST_LOG"
    fi
  fi
  rm -rf "${work:?}/run/"*
done
echo "clicktests: $pass passed, $fail failed, $skip skipped (of ${#tests[@]})"
((fail == 0))
