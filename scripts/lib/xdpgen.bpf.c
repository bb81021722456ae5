// SPDX-License-Identifier: GPL-2.0
// The benchmarks' packet generator (scripts/lib/xdpgen.c): run by
// BPF_PROG_RUN in live-frames mode on a template UDP frame, over and over.
// It paces: a frame whose time has not come is dropped (recycled at once),
// one whose time has come gets a new source port (one new flow per packet,
// over `flows` ports) and the UDP checksum for it (from the partial sum
// the loader computed), and is transmitted on the interface the run names
// (XDP_TX). Pacing state is per CPU: one sending thread per CPU.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct gen_cfg {
  __u32 udp_off; // offset of the UDP header: 34 (IPv4) or 54 (IPv6)
  __u32 flows;   // source ports base .. base + flows - 1
  __u32 base;    // first source port
  __u32 partial; // ones' complement sum of the checksummed words but the source port
  __u8 frame[64]; // the template's first 60 bytes (the rest of it is the UDP header)
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct gen_cfg);
} cfg SEC(".maps");

// Per CPU: the pacing and the count.
struct gen_state {
  __u64 next;     // ns (bpf_ktime_get_ns) the next frame is due
  __u64 interval; // ns between frames; 0: as fast as it can
  __u64 sent;     // frames transmitted
  __u64 limit;    // frames to transmit
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct gen_state);
} state SEC(".maps");

SEC("xdp")
int xdpgen(struct xdp_md *ctx) {
  __u32 k = 0;
  struct gen_cfg *c = bpf_map_lookup_elem(&cfg, &k);
  struct gen_state *st = bpf_map_lookup_elem(&state, &k);
  if (!c || !st)
    return XDP_ABORTED;
  if (st->sent >= st->limit)
    return XDP_DROP;
  if (st->interval) {
    __u64 now = bpf_ktime_get_ns();
    if (now < st->next)
      return XDP_DROP;
    // More than 60 ms behind (the CPU was taken away for longer than the
    // kernel's RT throttling takes, 50 ms a second, from a spinning
    // SCHED_FIFO sender): the frames missed are not made up in a burst,
    // so the achieved rate shows the deficit. Shorter gaps are made up at
    // once; the burst passes through the receiver's NAPI poll, which runs
    // in the sender's context, so it does not overflow veth's ring.
    if (now - st->next > 60000000)
      st->next = now;
    st->next += st->interval;
  }
  void *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  __u8 *udp = data + (c->udp_off == 54 ? 54 : 34);
  if ((void *)(udp + 8) > end || data + 60 > end)
    return XDP_ABORTED;
  // The frame's page is recycled with whatever the receiver left in it
  // (a router forwarding in place rewrites the Ethernet header, the TTL
  // and the IP checksum): every frame is written from the template.
  __builtin_memcpy(data, c->frame, 60);
  __u32 port = c->base + (st->sent % c->flows);
  st->sent += 1;
  __u32 sum = c->partial + port;
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  __u16 csum = ~sum & 0xffff;
  if (csum == 0)
    csum = 0xffff;
  // Network byte order, written byte by byte.
  udp[0] = port >> 8;
  udp[1] = port & 0xff;
  udp[6] = csum >> 8;
  udp[7] = csum & 0xff;
  return XDP_TX;
}

char _license[] SEC("license") = "GPL";
