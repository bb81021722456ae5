# tsc_mhz: the TSC's rate in MHz, for turning cycle counts into time:
# TSC_MHZ if set, else the kernel's calibration (dmesg), else
# /proc/cpuinfo's "cpu MHz" (the TSC's rate only where the CPU's clock
# does not change, as in this VM). Sourced by scripts/device-terms.sh and
# scripts/where-packets.sh.
tsc_mhz() {
  local m=${TSC_MHZ:-}
  [[ -n $m ]] || m=$(dmesg 2>/dev/null | sed -n 's/.*Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' | tail -n 1)
  [[ -n $m ]] || m=$(dmesg 2>/dev/null | sed -n 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' | tail -n 1)
  [[ -n $m ]] || m=$(awk -F: '/^cpu MHz/ { gsub(/ /, "", $2); print $2; exit }' /proc/cpuinfo)
  echo "$m"
}
