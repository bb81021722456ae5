// SPDX-License-Identifier: GPL-2.0
// The veth benchmarks' receive hooks (scripts/bench-veth.sh), one
// action for every frame. Compiled with ACTION=XDP_PASS (the default) and
// attached to r0 for the Linux-forwarding and AF_PACKET rows, it passes
// every frame to the kernel's stack: veth accepts frames sent by XDP (the
// generator's) only in NAPI mode, which an XDP program or GRO turns on,
// and GRO will not do, as FromDevice on AF_PACKET turns it off. Compiled
// with ACTION=XDP_DROP and attached to h2's eth0, it is the sink: h2
// counts every frame (veth counts before the program) and drops it, so
// the sink's cost, which the router's CPU pays (h2's NAPI poll runs where
// the router sends), is the same small one in every row instead of an IP
// receive and a UDP port lookup.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef ACTION
#define ACTION XDP_PASS
#endif

SEC("xdp")
int xdpact(struct xdp_md *ctx) {
  (void)ctx;
  return ACTION;
}

char _license[] SEC("license") = "GPL";
