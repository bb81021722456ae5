#!/usr/bin/env bash
# Builds the emulated Linux guest of tests/netns/ipsec-linux.sh: Debian's
# cloud kernel (which has ESP, esp4, as a module) and a small initramfs
# with busybox, the host's /sbin/ip (busybox's own `ip` has no `xfrm`) and
# the modules for virtio networking, xfrm, ESP and its algorithms.
#
# Usage: tests/netns/ipsec-guest/build.sh [OUTDIR]
#
# OUTDIR defaults to $CARGO_TARGET_DIR/ipsec-guest (target/ipsec-guest).
# At first use it fetches the kernel package and busybox-static with
# `apt-get download` and unpacks them with `dpkg -x` under OUTDIR: nothing
# is installed into the host's boot path. The result (OUTDIR/vmlinuz and
# OUTDIR/initramfs.gz) is cached, and rebuilt when this script or the
# guest's init (init.sh, next to it) changes. Prints OUTDIR on success.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=${1:-${CARGO_TARGET_DIR:-$ROOT/target}/ipsec-guest}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# The modules the guest loads, in order (their dependencies are found from
# the kernel's own module information and loaded by modprobe). drbg and
# jitterentropy_rng: the IV generators (seqiv, echainiv) draw on the
# kernel's default random number generator; without it every state with
# an IV fails ("unable to initialize cryptographic operations").
MODULES="virtio_pci virtio_net xfrm_user esp4 aesni_intel gcm ghash_clmulni_intel ghash_generic seqiv echainiv authenc des3_ede_x86_64 des_generic sha1_ssse3 sha256_ssse3 ctr ecb drbg jitterentropy_rng"

stamp=$(cat "$HERE/build.sh" "$HERE/init.sh" /sbin/ip /usr/bin/perl | sha256sum | cut -c1-16)
if [[ -f $OUT/stamp && $(cat "$OUT/stamp") == "$stamp" && -f $OUT/vmlinuz && -f $OUT/initramfs.gz ]]; then
  echo "$OUT"
  exit 0
fi
rm -f "$OUT/stamp"

for t in apt-get apt-cache dpkg gzip ldd; do
  command -v "$t" >/dev/null || { echo "ipsec-guest: missing tool '$t'" >&2; exit 2; }
done

WORK=$OUT/work
rm -rf "$WORK"
mkdir -p "$WORK/debs" "$WORK/x" "$WORK/tree"

# The kernel: what the cloud meta-package depends on now (the current
# 6.1 cloud kernel), or failing that the newest linux-image-*-cloud-amd64.
kpkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
if [[ -z $kpkg ]]; then
  kpkg=$(apt-cache search --names-only '^linux-image-[0-9.]+-[0-9]+-cloud-amd64$' 2>/dev/null |
    awk '{ print $1 }' | sort -V | tail -1)
fi
if [[ -z $kpkg ]]; then
  # A fresh machine may not have read its package lists yet.
  apt-get update -qq >/dev/null 2>&1 || true
  kpkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
fi
[[ -n $kpkg ]] || { echo "ipsec-guest: apt offers no linux-image-*-cloud-amd64 package" >&2; exit 1; }

echo "ipsec-guest: fetching $kpkg and busybox-static" >&2
fetch() { (cd "$WORK/debs" && apt-get download -qq "$kpkg" busybox-static) >"$WORK/apt.log" 2>&1; }
if ! fetch; then
  apt-get update -qq >/dev/null 2>&1 || true
  fetch || {
    cat "$WORK/apt.log" >&2
    echo "ipsec-guest: apt-get download $kpkg busybox-static failed" >&2
    exit 1
  }
fi
for d in "$WORK"/debs/*.deb; do dpkg -x "$d" "$WORK/x"; done

kver=${kpkg#linux-image-}
BB=$WORK/x/bin/busybox
[[ -x $BB ]] || { echo "ipsec-guest: busybox-static has no bin/busybox" >&2; exit 1; }
[[ -f $WORK/x/boot/vmlinuz-$kver ]] || { echo "ipsec-guest: $kpkg has no boot/vmlinuz-$kver" >&2; exit 1; }
MODSRC=$WORK/x/lib/modules/$kver

# ---- the initramfs tree ----
T=$WORK/tree
mkdir -p "$T"/{bin,sbin,proc,sys,dev,tmp,run,etc,root,lib/modules/"$kver"}
cp "$BB" "$T/bin/busybox"
for a in sh mount mkdir cat echo ls sleep modprobe insmod depmod ifconfig \
  sha256sum head tail dd nc poweroff sync stty seq grep awk wc hexdump \
  ping kill sed tr cut od timeout true false rm httpd wget sysctl cmp ps \
  sh ash mkfifo dmesg uname; do
  ln -sf busybox "$T/bin/$a"
done
# The kernel asks /sbin/modprobe for the algorithms it builds on demand.
ln -sf ../bin/busybox "$T/sbin/modprobe"
# The host's ip (iproute2, with xfrm; busybox's has none) and perl (a UDP
# echo with perl's built-in socket calls: busybox's nc has no UDP), with
# the libraries they link, at the paths the host has them.
copy_bin() { # PATH: the binary and what ldd names
  mkdir -p "$T$(dirname "$1")"
  cp -L "$1" "$T$1"
  ldd "$1" | awk '/=> \// { print $3 } /^[[:space:]]*\// { print $1 }' | while read -r lib; do
    [[ -e $T$lib ]] && continue
    mkdir -p "$T$(dirname "$lib")"
    cp -L "$lib" "$T$lib"
  done
}
copy_bin /sbin/ip
copy_bin /usr/bin/perl

# The modules and, transitively, what they depend on.
modpath() { # NAME: the module's file under MODSRC, by name (- and _ alike)
  local n=${1//-/_}
  find "$MODSRC/kernel" -regex ".*/${n//_/[-_]}\.ko.*" | head -1
}
declare -A seen=()
queue=($MODULES)
while ((${#queue[@]})); do
  m=${queue[0]}
  queue=("${queue[@]:1}")
  [[ -n ${seen[$m]:-} ]] && continue
  seen[$m]=1
  f=$(modpath "$m")
  if [[ -z $f ]]; then
    # Built into the kernel (modules.builtin): nothing to copy.
    grep -q "/${m//_/[-_]}\.ko" "$MODSRC/modules.builtin" 2>/dev/null && continue
    echo "ipsec-guest: module $m not found in $kpkg" >&2
    exit 1
  fi
  rel=${f#"$MODSRC"/}
  mkdir -p "$T/lib/modules/$kver/$(dirname "$rel")"
  cp "$f" "$T/lib/modules/$kver/$rel"
  # The module's own record of what it needs (its .modinfo `depends=`).
  deps=$(tr '\0' '\n' <"$f" | sed -n 's/^depends=//p' | head -1 | tr ',' ' ')
  for d in $deps; do queue+=("$d"); done
done
cp "$MODSRC"/modules.builtin* "$T/lib/modules/$kver/" 2>/dev/null || true
case $(find "$T/lib/modules" -name '*.ko.*' | head -1) in
  *.xz) find "$T/lib/modules" -name '*.ko.xz' -exec xz -d {} + ;;
  *.zst) find "$T/lib/modules" -name '*.ko.zst' -exec zstd -q -d --rm {} + ;;
esac
"$BB" depmod -b "$T" "$kver"
printf '%s\n' $MODULES >"$T/etc/modules"

cp "$HERE/init.sh" "$T/init"
chmod 755 "$T/init"

(cd "$T" && find . | "$BB" cpio -o -H newc 2>/dev/null | gzip -1) >"$OUT/initramfs.gz.new"
mv "$OUT/initramfs.gz.new" "$OUT/initramfs.gz"
cp "$WORK/x/boot/vmlinuz-$kver" "$OUT/vmlinuz"
echo "$kver" >"$OUT/kernel-version"
rm -rf "$WORK"
echo "$stamp" >"$OUT/stamp"
echo "$OUT"
