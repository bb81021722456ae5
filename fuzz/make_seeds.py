#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into fuzz/corpus/TARGET/.

Run from the repository root: python3 fuzz/make_seeds.py. Sources: the
configurations in conf/, the patterns of the IPFilter unit tests, Script
instructions, pcap and IP summary dump files made here. Deterministic."""
import os, random, re, struct, glob

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = os.path.join(root, "fuzz", "corpus")
rng = random.Random(11)

def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

# --- config: the shipped configurations and a few language features.
for p in sorted(glob.glob(os.path.join(root, "conf", "*.click"))):
    put("config", os.path.basename(p), open(p, "rb").read())
put("config", "compound.click", """define($n 3, $who 10.0.0.1);
elementclass Two { $x | input -> Paint($x) -> [1]output; input[1] -> [0]output }
require(package paraclick);
src :: InfiniteSource(LIMIT $n, BURST 1) -> t :: Two(7);
t[0] -> c :: Counter -> Discard; t[1] -> Discard;
s2 :: InfiniteSource -> [1]t;
""")
put("config", "ports.click", """a :: Tee(3); Idle -> a; a[0] -> q :: Queue(10) -> u :: Unqueue -> d :: Discard;
a[1] -> [0]q; a[2] -> Print("x y", 20) -> Discard; // comment
/* block */ ip :: IPClassifier(tcp port 80, -); Idle -> ip; ip[0] -> Discard; ip[1] -> Discard;
""")
put("config", "overload.click", """elementclass A { input -> output } elementclass A { $a, $b | input -> Null -> output }
x :: A(1, 2); y :: A; Idle -> x -> y -> Discard; Idle -> Script(wait 1, write x/Null@1.count 0);
""")
put("config", "errors.click", "a :: Nope; a -> b; c :: Queue(-1) -> [9]d :: Discard; e :: Counter(\n")

# --- byte-driven targets: random bytes of a few sizes.
for t in ("config_structured", "packet_elements", "config_run"):
    for i, n in enumerate((16, 64, 256, 512, 1024, 2048, 4096)):
        put(t, f"random-{i}", bytes(rng.randrange(256) for _ in range(n)))

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b)//2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF

def ipv4(proto, payload, src=b"\x0a\x00\x00\x01", dst=b"\x0a\x00\x00\x02", ttl=64, frag=0):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, frag, ttl, proto, 0, src, dst)
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload

def udp(sport, dport, data):
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data

def tcp(sport, dport, flags, data=b""):
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, flags, 8192, 0, 0) + data

def icmp(t, code, rest=b"\0\0\0\0", data=b""):
    m = struct.pack("!BBH", t, code, 0) + rest + data
    return m[:2] + struct.pack("!H", csum(m)) + m[4:]

def eth(payload, ethertype=0x0800):
    return b"\x00\x0a\x0b\x0c\x0d\x0e" + b"\x00\x01\x02\x03\x04\x05" + struct.pack("!H", ethertype) + payload

datagrams = [
    ipv4(17, udp(1234, 53, b"hello")),
    ipv4(6, tcp(1234, 80, 0x02)),
    ipv4(6, tcp(80, 1234, 0x12, b"x" * 30)),
    ipv4(1, icmp(8, 0, b"\x00\x01\x00\x01", b"ping")),
    ipv4(1, icmp(3, 1, data=ipv4(17, udp(1, 2, b""))[:28])),
    ipv4(17, udp(9, 9, b"frag" * 4), frag=0x2000),
]

# --- pcap_reader: an options byte, then the file.
def pcap(big, nano, linktype, frames, snap=65535):
    e = ">" if big else "<"
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    b = struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snap, linktype)
    for i, f in enumerate(frames):
        b += struct.pack(e + "IIII", 1000000000 + i, 1000 * i, len(f), len(f)) + f
    return b

frames = [eth(d) for d in datagrams]
put("pcap_reader", "eth-le-usec", b"\0" + pcap(False, False, 1, frames))
put("pcap_reader", "eth-be-nsec", b"\0" + pcap(True, True, 1, frames))
put("pcap_reader", "raw-le", b"\1" + pcap(False, False, 101, datagrams))
put("pcap_reader", "raw-228-be", b"\0" + pcap(True, False, 228, datagrams))
put("pcap_reader", "truncated", b"\0" + pcap(False, False, 1, frames)[:-7])
put("pcap_reader", "header-only", b"\0" + pcap(False, False, 1, []))
put("pcap_reader", "short-capture", b"\1" + pcap(False, False, 1, [f[:40] for f in frames], snap=40))

# --- ipsumdump_reader: an options byte, then the file.
fields = ("timestamp ip_src sport ip_dst dport ip_proto ip_len payload_len ip_ttl ip_tos "
          "ip_id ip_frag ip_fragoff tcp_flags tcp_seq tcp_ack tcp_window count direction")
put("ipsumdump_reader", "all-fields", "\0!IPSummaryDump 1.3\n!data " + fields + "\n"
    "1000000001.000001 10.0.0.1 1234 10.0.0.2 80 T 40 0 64 0 1 . 0 S 1 0 8192 1 >\n"
    "1000000002.5 10.0.0.2 53 10.0.0.1 999 U 61 33 63 16 2 ! 0 - - - - 2 <\n"
    "1000000003.000001 10.0.0.7 9 10.0.0.8 10 T 40 0 1 0 7 . 0 FSRPAUECN 4294967295 1 0 1 >\n"
    "# comment\n\n1000000004 10.0.0.9 - 10.0.0.10 - I 28 8 1 0 0 F 1480 - - - - 1 -\n")
put("ipsumdump_reader", "contents", "\2" + "1.0.0.1 2.0.0.2 5 6 U 100 72 .\n1.0.0.4 2.0.0.4 100 7 T 40 0 SA\n")
put("ipsumdump_reader", "flowid", "\4!data ip_len\n100\n!flowid 3.3.3.3 30 4.4.4.4 40 T\n200\n")
put("ipsumdump_reader", "errors", "\1!data ip_src frob ip_dst\n1.1.1.1 x 2.2.2.2\n!binary\n\0\0\0")
put("ipsumdump_reader", "ts", "\0!data ts_sec ts_usec ip_proto ip_capture_len\n5 42 1 20\n6 7 U 9999\n")

# --- ipfilter: patterns from the unit tests, NUL, then length-prefixed packets.
tests = open(os.path.join(root, "crates/elements/src/ipfilter/tests.rs")).read()
pats = sorted(set(re.findall(r'\b(?:p|err|compile\(&\[)\("([^"\\]*)"', tests)))
pats += ["tcp port 80", "src host 10.0.0.1 and dst net 10.0.0.0/8", "icmp type echo",
         "ip[9] == 17 && udp[2:2] > 1023", "tcp opt syn and not tcp opt ack", "ip frag",
         "src or dst port 53 ? udp : tcp", "ip ttl < 2", "transp[0:4] & 0xffff0000 == 0x04d20000",
         "-", "host INTERNALNET", "true", "ip vers 4 && ip hl > 5"]
pkts = b"".join(bytes([len(d)]) + d for d in datagrams)
for i in range(0, len(pats), 3):
    put("ipfilter", f"pats-{i:03}", ", ".join(pats[i:i + 3]).encode() + b"\0" + pkts)

# --- script: instructions and expressions.
scripts = [
    "init x 0\nlabel top\nset x $(add $x 1)\ngoto top $(lt $x 10)\nprint $x\nend",
    "set a $(mul 3 $(sub 10 4))\nprint $(sprintf \"%05d|%-4s|%x\" $a ab 255)\nreturn $(if $(gt $a 5) yes no)",
    "write c.reset\nwait 0.1s\nread c.count\nexport y 5\npause 2\nstop",
    "print $(div 7 2) $(idiv 7 2) $(mod 7 3) $(rem 7.5 2) $(neg 5) $(abs -3)",
    "print $(and true false) $(or 1 0) $(not no) $(in a b c a) $(length \"abc\") $(unquote \"a\\nb\")",
    "print $(sprintf %e 12345.678) $(sprintf %g 0.0001) $(sprintf %10.3f -1.5) $(sprintf %c 65)",
    "goto nowhere\nlabel l\nlabel l\nset $x ${a} $? $# $$",
    "print '$(add 1 2)' \"$(add 1 2)\" \\$(add 1 2) $(add 9223372036854775807 1)",
]
for i, s in enumerate(scripts):
    ab = struct.pack("<qq", rng.randrange(-2**63, 2**63), rng.randrange(-2**63, 2**63))
    put("script", f"script-{i}", ab + b"\n" + s.encode())

# --- control: hotconfig writes of the shapes that crashed routers (deep
# and exponential compounds, long chains, huge numbers) and one that swaps.
def hotconfig(conf):
    b = conf.encode()
    return b"WRITEDATA hotconfig %d\r\n" % len(b) + b + b"\r\nREAD c.count\r\nQUIT\r\n"
deep = "elementclass C0 { input -> Null -> output }\n" + "".join(
    "elementclass C%d { input -> C%d -> output }\n" % (k, k - 1) for k in range(1, 251)) + "Idle -> C250 -> Discard;"
put("control", "hot-deep", hotconfig(deep))
expo = "elementclass C0 { input -> Null -> output }\n" + "".join(
    "elementclass C%d { input -> C%d -> C%d -> output }\n" % (k, k - 1, k - 1) for k in range(1, 25)) + "Idle -> C24 -> Discard;"
put("control", "hot-exponential", hotconfig(expo))
put("control", "hot-chain", hotconfig("Idle" + " -> Null" * 7000 + " -> Discard;"))
put("control", "hot-huge", hotconfig("Idle -> Queue(18446744073709551615) -> Discard; InfiniteSource(LENGTH 10000000000, BURST 4294967296) -> Discard;"))
put("control", "hot-ok", hotconfig("s :: InfiniteSource(LENGTH 60, LIMIT 5) -> c :: Counter -> Discard;"))
