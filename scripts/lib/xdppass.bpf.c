// SPDX-License-Identifier: GPL-2.0
// The veth benchmarks' receive hooks (scripts/bench-veth.sh).
//
// xdppass (attached to r0 for the Linux-forwarding and AF_PACKET rows)
// passes every frame to the kernel's stack: veth accepts frames sent by
// XDP (the generator's) only in NAPI mode, which an XDP program or GRO
// turns on, and GRO will not do, as FromDevice on AF_PACKET turns it off.
//
// xdpsink (attached to h2's eth0) drops the UDP packets the benchmark
// sends, IPv4 and IPv6, and passes the rest (ARP and neighbour discovery,
// pings): h2 counts every frame first (veth counts before the program),
// and the sink's cost, which the router's CPU pays (h2's NAPI poll runs
// where the router sends), is the same small one in every row instead of
// an IP receive and a UDP port lookup.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdppass(struct xdp_md *ctx) {
  (void)ctx;
  return XDP_PASS;
}

SEC("xdp")
int xdpsink(struct xdp_md *ctx) {
  __u8 *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  if ((void *)(data + 54) > end)
    return XDP_PASS;
  __u16 type = (__u16)data[12] << 8 | data[13];
  if (type == 0x0800 && data[23] == 17)
    return XDP_DROP;
  if (type == 0x86dd && data[20] == 17)
    return XDP_DROP;
  return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
