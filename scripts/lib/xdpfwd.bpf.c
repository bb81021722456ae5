// SPDX-License-Identifier: GPL-2.0
// The XDP-redirect row of the veth benchmarks (scripts/bench-veth.sh):
// forwarding without routing, the upper bound on the topology. Attached
// to r0, it rewrites the Ethernet addresses (to h2's and r1's) and
// redirects every frame out of r1 (OUT_IFINDEX, given when it is compiled
// for the topology). Frames too short for an Ethernet header are dropped.
// xdp-bench redirect (xdp-tools 1.3) does the same but does not load on
// this kernel: its object carries a tracepoint program for
// xdp_redirect_map_err, which Linux 6.18 no longer has.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef OUT_IFINDEX
#error "compile with -DOUT_IFINDEX=N"
#endif

SEC("xdp")
int xdpfwd(struct xdp_md *ctx) {
  __u8 *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  if ((void *)(data + 14) > end)
    return XDP_DROP;
  const __u8 mac[12] = {0x02, 0, 0, 0, 0x02, 0x02, 0x02, 0, 0, 0, 0x02, 0x01};
  __builtin_memcpy(data, mac, 12);
  return bpf_redirect(OUT_IFINDEX, 0);
}

char _license[] SEC("license") = "GPL";
