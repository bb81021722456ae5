#!/usr/bin/env python3
"""Independent check of paraclick's ESP with scapy's implementation.

  esp.py gen DIR ALG SPI_OUT KEY_OUT SPI_IN KEY_IN LOCAL PEER
      writes DIR/plain-in.pcap (plain packets from the local site),
      DIR/esp-in.pcap (what the peer sends: scapy-encrypted packets, then a
      replay, a bad ICV, an unknown SPI and a truncated packet) and
      DIR/expect-plain-out.pcap (the inner packets paraclick must output)
  esp.py check DIR ALG SPI_OUT KEY_OUT SPI_IN KEY_IN LOCAL PEER
      decrypts DIR/esp-out.pcap with scapy (it must match plain-in), and
      compares DIR/plain-out.pcap with the expected inner packets

Exit status 3: scapy (or python3-cryptography) is missing.
"""
import sys

try:
    from scapy.all import Ether, IP, UDP, TCP, ICMP, Raw, rdpcap, wrpcap, raw
    from scapy.layers.ipsec import SecurityAssociation, ESP
except Exception as e:  # noqa: BLE001
    print("scapy with IPsec support is not available:", e)
    sys.exit(3)

N_OUT = 40
N_IN = 30
ALGS = {
    "aes128gcm16": ("AES-GCM", 16, 4, None),
    "aes256gcm16": ("AES-GCM", 32, 4, None),
    "aes128-sha1": ("AES-CBC", 16, 20, "HMAC-SHA1-96"),
    "aes256-sha1": ("AES-CBC", 32, 20, "HMAC-SHA1-96"),
    "aes128-sha256": ("AES-CBC", 16, 32, "SHA2-256-128"),
    "aes256-sha256": ("AES-CBC", 32, 32, "SHA2-256-128"),
    "3des-sha1": ("3DES", 24, 20, "HMAC-SHA1-96"),
    "3des-sha256": ("3DES", 24, 32, "SHA2-256-128"),
}


def sa(alg, spi, key, src, dst):
    crypt, el, il, auth = ALGS[alg]
    k = bytes.fromhex(key[2:] if key.startswith("0x") else key)
    assert len(k) == el + il, (alg, len(k))
    if auth is None:
        return SecurityAssociation(ESP, spi=spi, crypt_algo=crypt, crypt_key=k,
                                   tunnel_header=IP(src=src, dst=dst))
    return SecurityAssociation(ESP, spi=spi, crypt_algo=crypt, crypt_key=k[:el],
                               auth_algo=auth, auth_key=k[el:],
                               tunnel_header=IP(src=src, dst=dst))


def inner(i, src_net, dst_net):
    """A varied inner packet: UDP, TCP or ICMP, 0 to ~1400 payload bytes."""
    size = [0, 1, 7, 22, 64, 100, 500, 1000, 1372][i % 9]
    payload = bytes((i * 7 + j) & 0xff for j in range(size))
    ip = IP(src=f"{src_net}.{1 + i % 5}", dst=f"{dst_net}.{1 + i % 3}", ttl=64 - i % 3,
            tos=(i % 4) * 8, id=1000 + i)
    kind = i % 3
    if kind == 0:
        p = ip / UDP(sport=1000 + i, dport=53) / Raw(payload)
    elif kind == 1:
        p = ip / TCP(sport=2000 + i, dport=80, seq=i, flags="PA") / Raw(payload)
    else:
        p = ip / ICMP(type=8, id=7, seq=i) / Raw(payload)
    return IP(raw(p))


def eth(p):
    return Ether(src="02:00:00:00:00:09", dst="02:00:00:00:00:01") / p


def gen(d, alg, spi_out, key_out, spi_in, key_in, local, peer):
    wrpcap(f"{d}/plain-in.pcap", [eth(inner(i, "10.1.0", "10.2.0")) for i in range(N_OUT)])
    peer_sa = sa(alg, spi_in, key_in, peer, local)
    pkts = [inner(i, "10.2.0", "10.1.0") for i in range(N_IN)]
    esp = [peer_sa.encrypt(p, seq_num=i + 1) for i, p in enumerate(pkts)]
    # Deliver a little out of order (within the window): swap neighbours.
    order = list(range(N_IN))
    for i in range(0, N_IN - 1, 4):
        order[i], order[i + 1] = order[i + 1], order[i]
    frames = [eth(esp[i]) for i in order]
    expect = [pkts[i] for i in order]
    # Rejections: a replay of packet 3, a bad ICV, an unknown SPI, a
    # truncated packet.
    frames.append(eth(esp[3]))
    bad = bytearray(raw(peer_sa.encrypt(inner(99, "10.2.0", "10.1.0"), seq_num=N_IN + 1)))
    bad[-1] ^= 0x01
    frames.append(eth(IP(bytes(bad))))
    other = sa(alg, spi_in + 1, key_in, peer, local)
    frames.append(eth(other.encrypt(inner(98, "10.2.0", "10.1.0"), seq_num=1)))
    trunc = bytearray(raw(peer_sa.encrypt(inner(97, "10.2.0", "10.1.0"), seq_num=N_IN + 2))[:36])
    trunc[2:4] = len(trunc).to_bytes(2, "big")
    t = IP(bytes(trunc))
    del t.chksum
    frames.append(eth(IP(raw(t))))
    wrpcap(f"{d}/esp-in.pcap", frames)
    wrpcap(f"{d}/expect-plain-out.pcap", [eth(p) for p in expect])


def check(d, alg, spi_out, key_out, spi_in, key_in, local, peer):
    ok = True
    sent = [Ether(raw(f))[IP] for f in rdpcap(f"{d}/plain-in.pcap")]
    got = rdpcap(f"{d}/esp-out.pcap")
    rx = sa(alg, spi_out, key_out, local, peer)
    if len(got) != len(sent):
        print(f"esp-out has {len(got)} packets, expected {len(sent)}")
        ok = False
    for i, (f, s) in enumerate(zip(got, sent)):
        e = Ether(raw(f))[IP]
        if e.src != local or e.dst != peer or e.proto != 50:
            print(f"esp-out {i}: outer header {e.src} -> {e.dst} proto {e.proto}")
            ok = False
            continue
        if e[ESP].spi != spi_out or e[ESP].seq != i + 1:
            print(f"esp-out {i}: spi {e[ESP].spi:#x} seq {e[ESP].seq}")
            ok = False
        try:
            dec = rx.decrypt(e)
        except Exception as ex:  # noqa: BLE001
            print(f"esp-out {i}: scapy cannot decrypt: {ex!r}")
            ok = False
            continue
        if raw(dec) != raw(s):
            print(f"esp-out {i}: decrypted\n  {raw(dec).hex()}\nexpected\n  {raw(s).hex()}")
            ok = False
    want = [raw(Ether(raw(f))[IP]) for f in rdpcap(f"{d}/expect-plain-out.pcap")]
    have = [raw(Ether(raw(f))[IP]) for f in rdpcap(f"{d}/plain-out.pcap")]
    if want != have:
        print(f"plain-out: {len(have)} packets, expected {len(want)}")
        for i, (a, b) in enumerate(zip(have, want)):
            if a != b:
                print(f"  first difference at {i}:\n  {a.hex()}\n  {b.hex()}")
                break
        ok = False
    print("ok" if ok else "FAILED")
    return ok


def main():
    cmd, d, alg, spi_out, key_out, spi_in, key_in, local, peer = sys.argv[1:10]
    args = (d, alg, int(spi_out, 0), key_out, int(spi_in, 0), key_in, local, peer)
    if cmd == "gen":
        gen(*args)
    elif cmd == "check":
        sys.exit(0 if check(*args) else 1)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
