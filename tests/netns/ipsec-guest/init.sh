#!/bin/sh
# /init of the emulated Linux guest of tests/netns/ipsec-linux.sh (built
# into its initramfs by build.sh). It loads the modules listed in
# /etc/modules, then serves commands on the second serial port (ttyS1,
# the test's control channel): each line read is run by sh, its output
# written back, followed by a line `@@rc=STATUS`. `@@ready` says the
# guest is up. End of input powers the guest off.
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
for m in $(cat /etc/modules); do
  modprobe "$m" 2>/dev/null || echo "guest: modprobe $m failed" >/dev/ttyS0
done
ip link set lo up
# The control port stays open from here on: a serial port closed and
# opened again loses what arrived in between.
exec </dev/ttyS1 >/dev/ttyS1 2>/dev/ttyS0
stty raw -echo 2>/dev/null
cd /tmp
echo "@@ready $(uname -r)"
# Each line is "LENGTH COMMAND": a line whose command is not LENGTH
# characters long lost or gained characters on the way (a serial port
# under load) and is not run; status 200 asks the host to send it again.
while IFS= read -r line; do
  n=${line%% *}
  cmd=${line#* }
  if [ "${#cmd}" != "$n" ]; then
    echo "guest: garbled line, not run: $line" >/dev/ttyS0
    echo "@@rc=200"
    continue
  fi
  echo "guest: $cmd" >/dev/ttyS0
  sh -c "$cmd" </dev/null 2>&1
  echo "@@rc=$?"
done
sync
poweroff -f
