#!/usr/bin/env python3
"""Input pcaps and output checks for the IP router tests (tests/iprouter.rs).

    scenarios.py gen NAME DIR     writes DIR/eth0-in.pcap and DIR/eth1-in.pcap
    scenarios.py genall DIR       the same for every scenario, in DIR/NAME
    scenarios.py check NAME DIR   checks DIR/eth0-out.pcap, eth1-out.pcap and
                                  host.pcap (raw IP) against what NAME sent

Each scenario is a function returning (in0, in1, packets): the frames sent
on eth0 and eth1 and the named packets its check refers to. The check
(`check_NAME`) gets those and the frames the router wrote; it raises
CheckError with a description of what is wrong. Exit status: 0 ok, 1 a
check failed, 2 usage, 3 scapy is missing.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from net import *  # noqa: E402,F403  (exits 3 without scapy)


# --- forwarding and ARP ------------------------------------------------------


def forward():
    """eth0 -> eth1 with the next hop's ARP reply arriving after the packet
    (it waits in the ARPQuerier, whose query goes out first); eth1 -> eth0
    with the reply known beforehand (no query); a packet for an unknown
    next hop (a query, the packet stays saved); a TCP packet."""
    p = {}
    p["fwd01"] = ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=64, id=101, payload=b"zero to one")
    p["fwd01_tcp"] = Ether(src=H0, dst=R0) / IP(src=H0IP, dst=H1IP, ttl=9, id=102) / TCP(
        sport=40000, dport=80, flags="S", seq=12345
    )
    p["unknown"] = ip_frame(H0, R0, src=H0IP, dst="2.0.0.99", ttl=64, id=103)
    p["fwd10"] = ip_frame(H1, R1, src=H1IP, dst=H0IP, ttl=30, id=104, payload=b"one to zero" * 20)
    # A short packet padded to the Ethernet minimum with junk: the router
    # forwards the IP packet without the padding.
    p["padded"] = bytes(ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=64, id=105, payload=b"pad")) + b"\xaa" * 29
    in0 = preamble(0, [(H0, H0IP)]) + [p["fwd01"], p["fwd01_tcp"], p["unknown"], p["padded"]]
    in1 = (
        fillers(1, 3 * FILL, src=H1)
        + [arp_reply(1, H1, H1IP)]
        + fillers(1, FILL, src=H1)
        + [p["fwd10"]]
    )
    return in0, in1, p


def check_forward(p, out0, out1, host, threads=1):
    # eth1: the query for H1, then both packets once the reply came. (On
    # several threads the two input files are read in parallel, so H1's
    # reply may come first: then there is no query for it.)
    queries = [i for i, f in enumerate(out1) if is_arp(f)]
    targets = sorted(Ether(out1[i])[ARP].pdst for i in queries)
    if threads > 1 and targets == ["2.0.0.99"]:
        q_h1 = -1
    else:
        check(targets == [H1IP, "2.0.0.99"], "eth1: queries for %s:%s" % (targets, describe_all(out1)))
        q_h1 = [i for i in queries if Ether(out1[i])[ARP].pdst == H1IP][0]
        check_arp_query(out1[q_h1], 1, H1IP, "query for the next hop")
    check_arp_query(out1[[i for i in queries if i != q_h1][0]], 1, "2.0.0.99", "query for 2.0.0.99")
    check(len(out1) == len(queries) + 3, "eth1 sent %d frames:%s" % (len(out1), describe_all(out1)))
    ips = [i for i, f in enumerate(out1) if ipv4(f)]
    check(min(ips) > q_h1, "eth1: a packet for H1 left before the ARP query")
    got = {Ether(out1[i])[IP].id: out1[i] for i in ips}
    check(sorted(got) == [101, 102, 105], "eth1: packets %s, wanted ids 101, 102, 105" % sorted(got))
    check_forwarded(got[101], p["fwd01"], R1, H1, "eth0->eth1 UDP")
    check_forwarded(got[105], p["padded"][:-29], R1, H1, "padded packet")
    check_forwarded(got[102], p["fwd01_tcp"], R1, H1, "eth0->eth1 TCP")
    # eth0: the reverse packet, no query (H0's reply came first).
    check(len(out0) == 1, "eth0 sent %d frames, wanted 1:%s" % (len(out0), describe_all(out0)))
    check_forwarded(out0[0], p["fwd10"], R0, H0, "eth1->eth0")
    check(not host, "host got packets:%s" % describe_all(host, False))


def forward_mt():
    return forward()


def check_forward_mt(p, out0, out1, host):
    check_forward(p, out0, out1, host, threads=2)


def arp_responder():
    p = {}
    p["req0"] = arp_request(H0, H0IP, R0IP)
    p["req0_other"] = arp_request(H0, H0IP, "1.0.0.77")  # not the router's
    p["req1"] = arp_request(H1, H1IP, R1IP)
    p["req1_wrong"] = arp_request(H1, H1IP, R0IP)  # eth0's address asked on eth1
    return [p["req0"], p["req0_other"]], [p["req1"], p["req1_wrong"]], p


def check_arp_responder(p, out0, out1, host):
    for iface, out, (hmac, hip) in ((0, out0, (H0, H0IP)), (1, out1, (H1, H1IP))):
        rmac, rip = ROUTER[iface]
        check(len(out) == 1, "eth%d sent %d frames, wanted 1 reply:%s" % (iface, len(out), describe_all(out)))
        f = out[0]
        check_ether(f, rmac, hmac, "ARP reply on eth%d" % iface)
        check(is_arp(f), "eth%d: not ARP: %s" % (iface, describe(f)))
        a = Ether(f)[ARP]
        check(
            (a.op, a.hwtype, a.ptype, a.hwlen, a.plen, a.hwsrc, a.psrc, a.hwdst, a.pdst)
            == (2, 1, 0x800, 6, 4, rmac, rip, hmac, hip),
            "eth%d: wrong ARP reply %r" % (iface, a),
        )
    check(not host, "host got packets")


# --- ICMP errors --------------------------------------------------------------


def ttl():
    p = {}
    p["ttl1"] = ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=1, id=201, payload=bytes(range(100)))
    p["ttl0"] = ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=0, id=202, payload=b"zero")
    p["ttl2"] = ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=2, id=203, payload=b"two")
    # Expiring packets that get no error (RFC 1812 4.3.2.7): an ICMP error,
    # a fragment other than the first.
    p["icmp_err"] = Ether(src=H0, dst=R0) / IP(src=H0IP, dst=H1IP, ttl=1, id=204) / ICMP(type=3, code=3) / Raw(bytes(28))
    p["frag2"] = ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=1, id=205, frag=100, payload=b"later fragment")
    # An expiring echo request does get one (it is not an error message).
    p["echo"] = Ether(src=H0, dst=R0) / IP(src=H0IP, dst=H1IP, ttl=1, id=206) / ICMP(type=8) / Raw(b"traceroute")
    # TTL 1 is fine for the router itself.
    p["ttl1_to_router"] = Ether(src=H0, dst=R0) / IP(src=H0IP, dst=R1IP, ttl=1, id=207) / ICMP(type=8) / Raw(b"hi")
    ins = [p[k] for k in ("ttl1", "ttl0", "ttl2", "icmp_err", "frag2", "echo", "ttl1_to_router")]
    return preamble(0, [(H0, H0IP)]) + ins, preamble(1, [(H1, H1IP)]), p


def check_ttl(p, out0, out1, host):
    check(len(out0) == 3, "eth0 sent %d frames, wanted 3 errors:%s" % (len(out0), describe_all(out0)))
    by_id = {}
    for f in out0:
        icmp = ip_of(f)[20:]
        by_id[int.from_bytes(icmp[8 + 4 : 8 + 6], "big")] = f
    check(sorted(by_id) == [201, 202, 206], "errors quote ids %s" % sorted(by_id))
    for i, name in ((201, "ttl1"), (202, "ttl0"), (206, "echo")):
        orig = ip_of(bytes(p[name]))
        icmp = check_icmp_error(by_id[i], orig, 11, 0, R0IP, H0IP, R0, H0, "time exceeded for " + name)
        check(icmp[4:8] == bytes(4), "time exceeded: unused field set")
        check(len(icmp) - 8 == len(orig), "time exceeded: quotes %d bytes of %d" % (len(icmp) - 8, len(orig)))
    check(len(out1) == 1, "eth1 sent %d frames, wanted the TTL 2 packet:%s" % (len(out1), describe_all(out1)))
    check_forwarded(out1[0], p["ttl2"], R1, H1, "TTL 2 packet")
    check(host == [ip_of(bytes(p["ttl1_to_router"]))], "host got:%s" % describe_all(host, False))


def needfrag():
    """Run with MTU1=576."""
    p = {}
    p["df_big"] = ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=64, id=301, flags="DF", payload=bytes(range(256)) * 4)
    p["df_fits"] = ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=64, id=302, flags="DF", payload=bytes(576 - 28))
    return preamble(0, [(H0, H0IP)]) + [p["df_big"], p["df_fits"]], preamble(1, [(H1, H1IP)]), p


def check_needfrag(p, out0, out1, host):
    check(len(out0) == 1, "eth0 sent %d frames, wanted 1 error:%s" % (len(out0), describe_all(out0)))
    orig = bytearray(ip_of(bytes(p["df_big"])))
    # The router decremented the TTL before finding the packet too big.
    orig[8] -= 1
    orig[10:12] = b"\0\0"
    orig[10:12] = (0xFFFF - csum(bytes(orig[:20]))).to_bytes(2, "big")
    icmp = check_icmp_error(out0[0], bytes(orig), 3, 4, R0IP, H0IP, R0, H0, "fragmentation needed")
    mtu = int.from_bytes(icmp[6:8], "big")
    check(mtu == 576, "needfrag announces next-hop MTU %d, wanted 576" % mtu)
    check(len(out1) == 1, "eth1 sent %d frames, wanted the 576-byte packet:%s" % (len(out1), describe_all(out1)))
    check_forwarded(out1[0], p["df_fits"], R1, H1, "576-byte DF packet")
    check(not host, "host got packets")


def fragment():
    """Run with MTU1=576."""
    p = {}
    payload = bytes((i * 7 + 3) & 255 for i in range(1400))
    p["big"] = ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=64, id=401, payload=payload)
    p["big_tcp"] = Ether(src=H0, dst=R0) / IP(src=H0IP, dst=H1IP, ttl=33, id=402) / TCP(sport=1, dport=2) / Raw(payload[:1001])
    # Record Route (not copied into later fragments) and a no-op/end list.
    p["big_rr"] = with_options(ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=64, id=403, payload=payload[:1200]), b"\x07\x0b\x04" + bytes(8) + b"\x01")
    return preamble(0, [(H0, H0IP)]) + [p["big"], p["big_tcp"], p["big_rr"]], preamble(1, [(H1, H1IP)]), p


def reassemble(frags, what):
    frags = sorted(frags, key=lambda ip: (int.from_bytes(ip[6:8], "big") & 0x1FFF))
    data = b""
    for k, ip in enumerate(frags):
        ihl = valid_ip_header(ip)
        ff = int.from_bytes(ip[6:8], "big")
        off = (ff & 0x1FFF) * 8
        mf = bool(ff & 0x2000)
        check(len(ip) <= 576, "%s: fragment of %d bytes > MTU 576" % (what, len(ip)))
        check(off == len(data), "%s: fragment at %d, expected %d" % (what, off, len(data)))
        check(mf == (k < len(frags) - 1), "%s: fragment %d has MF=%s" % (what, k, mf))
        if mf:
            check((len(ip) - ihl) % 8 == 0, "%s: middle fragment data not a multiple of 8" % what)
        data += ip[ihl:]
    return frags[0], data


def check_fragment(p, out0, out1, host):
    check(not out0, "eth0 sent frames:%s" % describe_all(out0))
    groups = {}
    for f in out1:
        check_ether(f, R1, H1, "fragment")
        ip = ip_of(f)
        groups.setdefault(int.from_bytes(ip[4:6], "big"), []).append(ip)
    check(sorted(groups) == [401, 402, 403], "eth1: IP ids %s" % sorted(groups))
    for i, name in ((401, "big"), (402, "big_tcp"), (403, "big_rr")):
        o = ip_of(bytes(p[name]))
        oihl = (o[0] & 15) * 4
        first, data = reassemble(groups[i], name)
        # The first fragment has every option: (576 - header) rounded down
        # to a multiple of 8 data bytes; later ones have no options (Record
        # Route is not copied): 552.
        first_data = (576 - oihl) // 8 * 8
        want = 1 + -(-(len(o) - oihl - first_data) // 552)
        check(len(groups[i]) == want, "%s: %d fragments, wanted %d" % (name, len(groups[i]), want))
        check(data == o[oihl:], "%s: reassembled data differs" % name)
        check(len(first) - oihl == first_data, "%s: first fragment carries %d bytes" % (name, len(first) - oihl))
        if name == "big_rr":
            # The router recorded its eth1 address in the first fragment.
            check(first[20:32] == b"\x07\x0b\x08\x02\x00\x00\x01" + bytes(4) + b"\x01", "record route: %s" % first[20:32].hex())
            for f in groups[i]:
                if f is not first:
                    check(f[0] & 15 == 5, "%s: a later fragment has options" % name)
        check(first[8] == o[8] - 1, "%s: TTL %d" % (name, first[8]))
        check(ip_fields(first) == ip_fields(o), "%s: addresses/protocol changed" % name)
        check(first[:2] == o[:2] and first[4:6] == o[4:6], "%s: header changed" % name)
    check(not host, "host got packets")


def redirect():
    """A packet from H0 to H0B through the router: forwarded out the same
    interface, and H0 gets a host redirect naming H0B."""
    p = {}
    p["via_router"] = ip_frame(H0, R0, src=H0IP, dst=H0BIP, ttl=64, id=501, payload=b"use the direct path")
    return preamble(0, [(H0, H0IP), (H0B, H0BIP)]) + [p["via_router"]], [], p


def check_redirect(p, out0, out1, host):
    check(len(out0) == 2, "eth0 sent %d frames, wanted redirect + packet:%s" % (len(out0), describe_all(out0)))
    icmps = [f for f in out0 if ip_of(f)[9] == 1]
    fwd = [f for f in out0 if ip_of(f)[9] == 17]
    check(len(icmps) == 1 and len(fwd) == 1, "eth0:%s" % describe_all(out0))
    orig = ip_of(bytes(p["via_router"]))
    icmp = check_icmp_error(icmps[0], orig, 5, 1, R0IP, H0IP, R0, H0, "redirect")
    gw = ".".join(str(x) for x in icmp[4:8])
    check(gw == H0BIP, "redirect names gateway %s, wanted %s" % (gw, H0BIP))
    check_forwarded(fwd[0], p["via_router"], R0, H0B, "redirected packet")
    check(not out1 and not host, "other outputs got packets")


def option_frame(opts, id):
    return with_options(ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=64, id=id, payload=b"options"), opts)


def param_problem():
    p = {}
    # Record Route whose length (39) runs past the 24-byte header.
    p["bad_len"] = option_frame(b"\x07\x27\x04\x00", 601)
    # Record Route with pointer 3 (below the minimum, 4).
    p["bad_ptr"] = option_frame(b"\x07\x07\x03" + bytes(4) + b"\x00", 602)
    # A good Record Route with room for one address: the router records
    # eth1's address (RFC 1812 5.3.13.2).
    p["rr"] = option_frame(b"\x07\x07\x04" + bytes(4) + b"\x00", 603)
    # Internet Timestamp, flag 1 (address and timestamp), room for one pair.
    p["ts"] = option_frame(b"\x44\x0c\x05\x01" + bytes(8), 604)
    # Internet Timestamp, flag 0, full: the overflow count goes up.
    p["ts_full"] = option_frame(b"\x44\x08\x09\x00" + b"\x12\x34\x56\x78", 605)
    return preamble(0, [(H0, H0IP)]) + [p[k] for k in ("bad_len", "bad_ptr", "rr", "ts", "ts_full")], preamble(1, [(H1, H1IP)]), p


def check_param_problem(p, out0, out1, host):
    check(len(out0) == 2, "eth0 sent %d frames, wanted 2 errors:%s" % (len(out0), describe_all(out0)))
    by_id = {int.from_bytes(ip_of(f)[20 + 8 + 4 : 20 + 8 + 6], "big"): f for f in out0}
    check(sorted(by_id) == [601, 602], "errors quote ids %s" % sorted(by_id))
    for i, name, ptr in ((601, "bad_len", 21), (602, "bad_ptr", 22)):
        orig = ip_of(bytes(p[name]))
        icmp = check_icmp_error(by_id[i], orig, 12, 0, R0IP, H0IP, R0, H0, "parameter problem (%s)" % name)
        check(icmp[4] == ptr, "%s: pointer %d, wanted %d" % (name, icmp[4], ptr))
    check(len(out1) == 3, "eth1 sent %d frames, wanted the 3 good option packets:%s" % (len(out1), describe_all(out1)))
    fwd = {int.from_bytes(ip_of(f)[4:6], "big"): f for f in out1}
    check(sorted(fwd) == [603, 604, 605], "eth1: ids %s" % sorted(fwd))
    for i, name in ((603, "rr"), (604, "ts"), (605, "ts_full")):
        check_ether(fwd[i], R1, H1, name)
        ip, o = ip_of(fwd[i]), ip_of(bytes(p[name]))
        valid_ip_header(ip)
        ihl = (o[0] & 15) * 4
        check(len(ip) == len(o) and ip[8] == o[8] - 1 and ip[ihl:] == o[ihl:], "%s: packet changed" % name)
        opt = ip[20:ihl]
        if name == "rr":
            check(opt == b"\x07\x07\x08" + bytes([2, 0, 0, 1]) + b"\x00", "record route option %s" % opt.hex())
        elif name == "ts":
            ms = int.from_bytes(opt[8:12], "big")
            check(opt[:8] == b"\x44\x0c\x0d\x01" + bytes([2, 0, 0, 1]), "timestamp option %s" % opt.hex())
            check(ms < 86400000, "timestamp %d is not milliseconds since midnight UT" % ms)
        else:
            check(opt == b"\x44\x08\x09\x10\x12\x34\x56\x78", "full timestamp option %s (overflow +1)" % opt.hex())
    check(not host, "host got packets")


# --- the router itself, bad packets -------------------------------------------


def to_router():
    p = {}
    p["ping0"] = Ether(src=H0, dst=R0) / IP(src=H0IP, dst=R0IP, id=701) / ICMP(type=8, id=7, seq=1) / Raw(b"ping")
    p["ping1"] = Ether(src=H0, dst=R0) / IP(src=H0IP, dst=R1IP, id=702) / ICMP(type=8, id=7, seq=2) / Raw(b"ping")
    p["bcast"] = ip_frame(H0, BCAST, src=H0IP, dst="1.255.255.255", id=703)
    p["allones"] = ip_frame(H0, BCAST, src=H0IP, dst="255.255.255.255", id=704)
    p["netaddr"] = ip_frame(H0, R0, src=H0IP, dst="2.0.0.0", id=705)
    return preamble(0, [(H0, H0IP)]) + [p[k] for k in ("ping0", "ping1", "bcast", "allones", "netaddr")], [], p


def check_to_router(p, out0, out1, host):
    check(not out0 and not out1, "forwarded:%s%s" % (describe_all(out0), describe_all(out1)))
    want = [ip_of(bytes(p[k])) for k in ("ping0", "ping1", "bcast", "allones", "netaddr")]
    check(
        sorted(host) == sorted(want),
        "host got:%s\nwanted:%s" % (describe_all(host, False), describe_all(want, False)),
    )


def ping_linux():
    """to_router's packets, for the Linux configuration (devices replaced
    by pcap files): it answers the pings itself and discards the rest."""
    return to_router()


def check_ping_linux(p, out0, out1, host):
    check(not out1 and not host, "eth1/host got packets:%s" % describe_all(out1))
    check(len(out0) == 2, "eth0 sent %d frames, wanted 2 echo replies:%s" % (len(out0), describe_all(out0)))
    replies = sorted(out0, key=lambda f: ip_of(f)[12:16])
    for f, name, addr in zip(replies, ("ping0", "ping1"), (R0IP, R1IP)):
        check_ether(f, R0, H0, "echo reply from " + addr)
        ip = ip_of(f)
        ihl = valid_ip_header(ip)
        req = ip_of(bytes(p[name]))
        check(ip_fields(ip) == (addr, H0IP, 1), "echo reply %s -> %s" % ip_fields(ip)[:2])
        check(ip[8] == 254, "echo reply TTL %d, wanted 255 - 1" % ip[8])
        icmp = ip[ihl:]
        check(csum(icmp) == 0xFFFF, "echo reply: bad ICMP checksum")
        check(icmp[0:2] == b"\0\0", "not an echo reply: type %d code %d" % (icmp[0], icmp[1]))
        check(icmp[4:] == req[20 + 4 :], "echo reply: identifier/sequence/data differ")


def bad_headers():
    p = {}
    good = ip_of(bytes(ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=64, id=801, payload=bytes(40))))
    eth = bytes(Ether(src=H0, dst=R0, type=0x0800))

    def frame(ip):
        return eth + bytes(ip)

    b = bytearray(good)
    b[10] ^= 0x55
    p["bad_checksum"] = frame(b)
    b = bytearray(good)
    b[0] = 0x65  # version 6
    p["bad_version"] = frame(b)
    b = bytearray(good)
    b[0] = 0x44  # header length 16
    p["bad_hlen"] = frame(b)
    b = bytearray(good)
    b[2:4] = (len(good) + 100).to_bytes(2, "big")  # claims more than it has
    b[10:12] = b"\0\0"
    b[10:12] = (0xFFFF - csum(bytes(b[:20]))).to_bytes(2, "big")
    p["truncated"] = frame(b)
    b = bytearray(good)
    b[2:4] = (12).to_bytes(2, "big")  # total length below the header length
    b[10:12] = b"\0\0"
    b[10:12] = (0xFFFF - csum(bytes(b[:20]))).to_bytes(2, "big")
    p["short_total"] = frame(b)
    p["tiny"] = frame(good[:12])
    return preamble(0, [(H0, H0IP)]) + [p[k] for k in sorted(p)], preamble(1, [(H1, H1IP)]), p


def check_bad_headers(p, out0, out1, host):
    check(not out0 and not out1 and not host, "bad packets got out:%s%s" % (describe_all(out0), describe_all(out1)))


def martians():
    p = {}
    # The bad sources of Click's CheckIPHeader(INTERFACES ...): 0.0.0.0,
    # 255.255.255.255 and the interfaces' broadcast addresses (loopback,
    # multicast and class E sources pass, as in Click, without STRICT_SRC).
    for i, src in enumerate(["0.0.0.0", "255.255.255.255", "1.255.255.255", "2.255.255.255"]):
        p["src_%s" % src] = ip_frame(H0, R0, src=src, dst=H1IP, ttl=64, id=900 + i)
    # Forwardable packets that came as link-level broadcast/multicast, and
    # one for another host's Ethernet address.
    p["link_bcast"] = ip_frame(H0, BCAST, src=H0IP, dst=H1IP, ttl=64, id=910)
    p["link_mcast"] = ip_frame(H0, "01:00:5e:00:00:01", src=H0IP, dst=H1IP, ttl=64, id=911)
    p["other_host"] = ip_frame(H0, "00:00:c0:99:99:99", src=H0IP, dst=H1IP, ttl=64, id=912)
    # And one good packet.
    p["good"] = ip_frame(H0, R0, src=H0IP, dst=H1IP, ttl=64, id=913)
    return preamble(0, [(H0, H0IP)]) + [p[k] for k in sorted(p)], preamble(1, [(H1, H1IP)]), p


def check_martians(p, out0, out1, host):
    check(not out0 and not host, "eth0/host got packets:%s" % describe_all(out0))
    check(len(out1) == 1, "eth1 sent %d frames, wanted only the good one:%s" % (len(out1), describe_all(out1)))
    check_forwarded(out1[0], p["good"], R1, H1, "good packet")


def mixed():
    """Every scenario's packets at once (the conservation test)."""
    in0, in1 = [], []
    for name in ORDER:
        if name in ("mixed", "forward_mt", "ping_linux"):
            continue
        a, b, _ = SCENARIOS[name][0]()
        in0 += a
        in1 += b
    return in0, in1, {}


def check_mixed(p, out0, out1, host):
    check(out0 and out1 and host, "an output is empty")


ORDER = [
    "forward",
    "forward_mt",
    "arp_responder",
    "ttl",
    "needfrag",
    "fragment",
    "redirect",
    "param_problem",
    "to_router",
    "ping_linux",
    "bad_headers",
    "martians",
    "mixed",
]
SCENARIOS = {n: (globals()[n], globals()["check_" + n]) for n in ORDER}


def gen(name, d):
    in0, in1, _ = SCENARIOS[name][0]()
    write(os.path.join(d, "eth0-in.pcap"), in0)
    write(os.path.join(d, "eth1-in.pcap"), in1)
    return "%s: %d + %d frames" % (name, len(in0), len(in1))


def main(argv):
    if len(argv) == 3 and argv[1] == "genall":
        for name in ORDER:
            d = os.path.join(argv[2], name)
            os.makedirs(d, exist_ok=True)
            print(gen(name, d))
        return 0
    if len(argv) != 4 or argv[1] not in ("gen", "check") or argv[2] not in SCENARIOS:
        sys.stderr.write(__doc__ + "\nscenarios: %s\n" % " ".join(ORDER))
        return 2
    cmd, name, d = argv[1:]
    if cmd == "gen":
        print(gen(name, d))
        return 0
    make, chk = SCENARIOS[name]
    _, _, packets = make()
    outs = []
    for f, lt_want in (("eth0-out.pcap", 1), ("eth1-out.pcap", 1), ("host.pcap", 101)):
        path = os.path.join(d, f)
        if f == "host.pcap" and not os.path.exists(path):
            outs.append([])  # a configuration without a host file
            continue
        try:
            lt, frames = read(path)
        except CheckError as e:
            print("FAIL %s: %s" % (name, e))
            return 1
        if lt != lt_want and frames:
            print("FAIL %s: %s has link type %d, wanted %d" % (name, f, lt, lt_want))
            return 1
        outs.append(frames)
    try:
        chk(packets, *outs)
    except CheckError as e:
        print("FAIL %s: %s" % (name, e))
        print("eth0 out:%s" % describe_all(outs[0]))
        print("eth1 out:%s" % describe_all(outs[1]))
        print("host:%s" % describe_all(outs[2], False))
        return 1
    print("ok %s: eth0 %d, eth1 %d, host %d frames" % (name, len(outs[0]), len(outs[1]), len(outs[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
