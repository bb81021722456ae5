"""The test network of conf/iprouter.click and packet helpers built on scapy.

    host H0  1.0.0.2 00:00:c0:11:11:11 --+
    host H0B 1.0.0.3 00:00:c0:33:33:33 --+-- eth0 1.0.0.1/8 00:00:c0:ae:67:ef
                                              [router]
    host H1  2.0.0.2 00:00:c0:22:22:22 ----- eth1 2.0.0.1/8 00:00:c0:4f:71:ef
"""

import os
import struct
import sys

try:
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.l2 import ARP, Ether
    from scapy.packet import Raw
    from scapy.utils import PcapReader
except ImportError as e:  # the Rust test turns this into a failure
    sys.stderr.write(
        "scapy is missing (%s): install it with `pip install scapy` "
        "(scripts/bootstrap.sh does)\n" % e
    )
    sys.exit(3)

R0, R0IP = "00:00:c0:ae:67:ef", "1.0.0.1"
R1, R1IP = "00:00:c0:4f:71:ef", "2.0.0.1"
H0, H0IP = "00:00:c0:11:11:11", "1.0.0.2"
H0B, H0BIP = "00:00:c0:33:33:33", "1.0.0.3"
H1, H1IP = "00:00:c0:22:22:22", "2.0.0.2"
BCAST = "ff:ff:ff:ff:ff:ff"

ROUTER = {0: (R0, R0IP), 1: (R1, R1IP)}

# More than one FromDump burst (32) of filler frames: a frame after them is
# handled in a later burst than every frame before them.
FILL = 40


class CheckError(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise CheckError(msg)


def arp_reply(iface, mac, ip):
    """An ARP reply from host (mac, ip) to the router on iface."""
    rmac, rip = ROUTER[iface]
    return Ether(src=mac, dst=rmac) / ARP(
        op=2, hwsrc=mac, psrc=ip, hwdst=rmac, pdst=rip
    )


def arp_request(mac, ip, target):
    return Ether(src=mac, dst=BCAST) / ARP(
        op=1, hwsrc=mac, psrc=ip, hwdst="00:00:00:00:00:00", pdst=target
    )


def fillers(iface, n=FILL, src=H0):
    """Frames of an unknown ethertype for the router (Classifier's `other`)."""
    rmac = ROUTER[iface][0]
    base = bytes(Ether(src=src, dst=rmac, type=0x88B5) / Raw(bytes(46)))
    # Numbered copies (cheaper than building each with scapy).
    return [base[:14] + b"fill%04d" % i + base[22:] for i in range(n)]


def preamble(iface, hosts):
    """ARP replies for hosts [(mac, ip)], then fillers."""
    return [arp_reply(iface, m, i) for m, i in hosts] + fillers(
        iface, src=hosts[0][0] if hosts else H0
    )


def ip_frame(src_mac, dst_mac, **ip):
    """An Ether/IP/UDP frame; `payload` (bytes) and `l4` (a scapy layer)
    may be given in ip."""
    payload = ip.pop("payload", b"paraclick")
    l4 = ip.pop("l4", None)
    if l4 is None:
        l4 = UDP(sport=1234, dport=5678)
    return Ether(src=src_mac, dst=dst_mac) / IP(**ip) / l4 / Raw(payload)


def write(path, frames):
    """A microsecond pcap of Ethernet frames (scapy packets or bytes),
    written byte for byte (no scapy re-encoding of malformed frames)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for k, fr in enumerate(frames):
            b = bytes(fr)
            f.write(struct.pack("<IIII", 1000 + k // 1000, (k % 1000) * 1000, len(b), len(b)))
            f.write(b)


def with_options(frame, opts):
    """An Ether/IP frame with the IP options opts (bytes, padded to a
    multiple of 4) inserted, header length, total length and checksum
    fixed."""
    b = bytes(frame)
    opts = opts + bytes(-len(opts) % 4)
    ip = bytearray(b[14:34] + opts + b[34:])
    ip[0] = 0x40 | (len(opts) + 20) // 4
    ip[2:4] = len(ip).to_bytes(2, "big")
    ip[10:12] = b"\0\0"
    ip[10:12] = (0xFFFF - csum(bytes(ip[: 20 + len(opts)]))).to_bytes(2, "big")
    return b[:14] + bytes(ip)


def read(path):
    """A pcap file's link type and records (bytes); every record must have
    a timestamp (ToDump stamps packets made inside the router with the
    current time)."""
    out = []
    with PcapReader(path) as r:
        lt = r.linktype
        for p in r:
            check(float(p.time) > 0, "%s: a record without a timestamp: %s" % (os.path.basename(path), p.summary()))
            out.append(bytes(p))
    return lt, out


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum((data[i] << 8) | data[i + 1] for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def ip_of(frame):
    """The IP datagram (total length bytes) of an Ethernet frame."""
    check(len(frame) >= 34, "frame too short for IP: %s" % frame.hex())
    check(frame[12:14] == b"\x08\x00", "not IPv4: %s" % describe(frame))
    ip = frame[14:]
    total = int.from_bytes(ip[2:4], "big")
    check(len(ip) >= total, "frame shorter than its IP length: %s" % describe(frame))
    return ip[:total]


def mac(b):
    return ":".join("%02x" % x for x in b)


def describe(frame, ether=True):
    try:
        return (Ether(frame) if ether else IP(frame)).summary()
    except Exception:  # noqa: BLE001 (describe anything)
        return frame.hex()


def describe_all(frames, ether=True):
    return "\n    ".join([""] + [describe(f, ether) for f in frames]) or " (none)"


def valid_ip_header(ip):
    ihl = (ip[0] & 15) * 4
    check(ip[0] >> 4 == 4 and ihl >= 20, "bad IP version/length: %s" % ip.hex())
    check(csum(ip[:ihl]) == 0xFFFF, "bad IP header checksum: %s" % describe(ip, False))
    return ihl


def check_ether(frame, src, dst, what):
    check(
        mac(frame[6:12]) == src and mac(frame[0:6]) == dst,
        "%s: Ethernet %s -> %s, wanted %s -> %s"
        % (what, mac(frame[6:12]), mac(frame[0:6]), src, dst),
    )


def check_forwarded(frame, orig, src_mac, dst_mac, what, ttl_dec=1):
    """frame is orig (a scapy Ether frame) forwarded: new MACs, TTL
    decremented, header checksum correct, every other byte unchanged."""
    o = ip_of(bytes(orig))
    check_ether(frame, src_mac, dst_mac, what)
    ip = ip_of(frame)
    valid_ip_header(ip)
    check(len(ip) == len(o), "%s: length %d, sent %d" % (what, len(ip), len(o)))
    check(len(frame) == 14 + len(ip), "%s: %d bytes after the IP packet" % (what, len(frame) - 14 - len(ip)))
    check(ip[8] == o[8] - ttl_dec, "%s: TTL %d, sent %d" % (what, ip[8], o[8]))
    same = ip[:8] + ip[9:10] + ip[12:]
    want = o[:8] + o[9:10] + o[12:]
    check(same == want, "%s: contents changed:\n  %s\n  %s" % (what, ip.hex(), o.hex()))


def check_icmp_error(frame, orig_ip, typ, code, src, dst, src_mac, dst_mac, what):
    """An ICMP error (type, code) from src to dst quoting orig_ip (bytes as
    the router saw them). Returns the ICMP message bytes."""
    check_ether(frame, src_mac, dst_mac, what)
    ip = ip_of(frame)
    ihl = valid_ip_header(ip)
    check(ip[9] == 1, "%s: not ICMP: %s" % (what, describe(frame)))
    got_src = ".".join(str(x) for x in ip[12:16])
    got_dst = ".".join(str(x) for x in ip[16:20])
    check(
        (got_src, got_dst) == (src, dst),
        "%s: ICMP %s -> %s, wanted %s -> %s" % (what, got_src, got_dst, src, dst),
    )
    check(ip[8] > 0, "%s: TTL 0" % what)
    check(ip[6] & 0x3F == 0 and ip[7] == 0, "%s: error is a fragment" % what)
    icmp = ip[ihl:]
    check(csum(icmp) == 0xFFFF, "%s: bad ICMP checksum" % what)
    check(
        (icmp[0], icmp[1]) == (typ, code),
        "%s: ICMP type/code %d/%d, wanted %d/%d" % (what, icmp[0], icmp[1], typ, code),
    )
    quote = icmp[8:]
    oihl = (orig_ip[0] & 15) * 4
    check(
        len(quote) >= min(len(orig_ip), oihl + 8),
        "%s: quote of %d bytes is too short" % (what, len(quote)),
    )
    check(
        len(ip) <= 576,
        "%s: error of %d bytes is longer than 576 (RFC 1812 4.3.2.3)" % (what, len(ip)),
    )
    check(
        quote == orig_ip[: len(quote)],
        "%s: quote differs from the packet:\n  quote %s\n  sent  %s"
        % (what, quote.hex(), orig_ip[: len(quote)].hex()),
    )
    return icmp


def check_arp_query(frame, iface, target, what):
    rmac, rip = ROUTER[iface]
    check_ether(frame, rmac, BCAST, what)
    check(frame[12:14] == b"\x08\x06", "%s: not ARP: %s" % (what, describe(frame)))
    a = Ether(frame)[ARP]
    check(
        (a.op, a.hwtype, a.ptype, a.hwsrc, a.psrc, a.pdst) == (1, 1, 0x800, rmac, rip, target),
        "%s: wrong ARP query %s" % (what, a.summary()),
    )


def is_arp(frame):
    return frame[12:14] == b"\x08\x06"


def ipv4(frame):
    return frame[12:14] == b"\x08\x00"


def ip_fields(ip):
    """(src, dst, proto) of IP bytes."""
    return (
        ".".join(str(x) for x in ip[12:16]),
        ".".join(str(x) for x in ip[16:20]),
        ip[9],
    )


__all__ = [n for n in dir() if not n.startswith("_")] + ["ICMP", "TCP", "UDP", "IP", "ARP", "Ether", "Raw"]
