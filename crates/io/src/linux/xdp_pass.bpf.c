// The XDP program of FromDevice(..., METHOD XDP, PASS "FILTER"): passes
// the frames the filter matches to the kernel's stack (XDP_PASS) and
// redirects every other frame to the AF_XDP socket bound to its receive
// queue, as libxdp's default program does.
//
// Built from this source by crates/io/build.rs (clang -target bpf) and
// loaded through libxdp (crates/io/src/linux/xsk_shim.c). The filter is
// not compiled into it: the router writes it into the `pass_rules` map
// as up to PCX_PASS_RULES rules (crates/io/src/linux/xdp_pass.rs parses
// the filter; `struct pcx_pass_rule` is laid out as its `Rule::bytes`).
// A frame is passed if it matches any rule; it matches a rule if it has
// every field the rule sets.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define PCX_PASS_RULES 16
#define PCX_QUEUES 256

struct pcx_pass_rule {
	__u8 used;	// 1 for a rule; the rules end at the first 0
	__u8 arp;	// an ARP frame (dst: its target protocol address)
	__u8 family;	// 4 or 6: an IPv4 or IPv6 packet; 0: any (or ARP)
	__u8 proto;	// the IP protocol, 0 for any
	__u8 has_dst;	// dst is set
	__u8 has_port;	// port is set (TCP or UDP)
	__u16 port;	// destination port, network order
	__u8 dst[16];	// destination address (IPv4: 4 bytes, then zeros)
};

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, PCX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCX_PASS_RULES);
	__type(key, __u32);
	__type(value, struct pcx_pass_rule);
} pass_rules SEC(".maps");

SEC("xdp")
int pcx_xsk_pass(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 arp = 0, family = 0, proto = 0, have_port = 0;
	__u16 port = 0;
	__u8 dst[16] = {};

	if ((void *)(eth + 1) > end)
		goto redirect;
	if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
		__u8 *a = (__u8 *)(eth + 1);
		// Ethernet/IPv4 ARP: the target protocol address at 24.
		if ((void *)(a + 28) > end)
			goto redirect;
		arp = 1;
		__builtin_memcpy(dst, a + 24, 4);
	} else if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (struct iphdr *)(eth + 1);
		if ((void *)(ip + 1) > end)
			goto redirect;
		family = 4;
		proto = ip->protocol;
		__builtin_memcpy(dst, &ip->daddr, 4);
		__u32 ihl = ip->ihl * 4;
		if ((proto == IPPROTO_TCP || proto == IPPROTO_UDP) &&
		    !(ip->frag_off & bpf_htons(0x1fff)) && ihl >= 20 && ihl <= 60) {
			__u8 *l4 = (__u8 *)ip + ihl;
			if ((void *)(l4 + 4) <= end) {
				port = *(__u16 *)(l4 + 2);
				have_port = 1;
			}
		}
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)(eth + 1);
		if ((void *)(ip6 + 1) > end)
			goto redirect;
		family = 6;
		proto = ip6->nexthdr;
		__builtin_memcpy(dst, &ip6->daddr, 16);
		if (proto == IPPROTO_TCP || proto == IPPROTO_UDP) {
			__u8 *l4 = (__u8 *)(ip6 + 1);
			if ((void *)(l4 + 4) <= end) {
				port = *(__u16 *)(l4 + 2);
				have_port = 1;
			}
		}
	} else {
		goto redirect;
	}

	for (__u32 i = 0; i < PCX_PASS_RULES; i++) {
		__u32 k = i;
		struct pcx_pass_rule *r = bpf_map_lookup_elem(&pass_rules, &k);
		if (!r || !r->used)
			break;
		if (r->arp != arp)
			continue;
		if (!arp && r->family && r->family != family)
			continue;
		if (r->proto && r->proto != proto)
			continue;
		if (r->has_port && (!have_port || r->port != port))
			continue;
		if (r->has_dst) {
			int same = 1;
			for (int j = 0; j < 16; j++)
				if (r->dst[j] != dst[j])
					same = 0;
			if (!same)
				continue;
		}
		return XDP_PASS;
	}
redirect:
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

// GPL-compatible for the kernel (libxdp's dispatcher, which this program
// may extend, is GPL); the source is under the repository's licence.
char _license[] SEC("license") = "Dual MIT/GPL";
