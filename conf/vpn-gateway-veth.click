// vpn-gateway-veth.click -- the Figure-2 IP router with the VPN blocks of
// Figures 6 and 7 (SMP Click), on two Linux interfaces.
//
// conf/iprouter-veth.click plus an ESP tunnel (RFC 4303 tunnel mode):
// packets routed to the remote site's network $REMOTE are encrypted with
// IPsecESPTunnelEncap from $ADDR1 (this gateway's WAN address) to $PEER
// and routed again (out interface 1); ESP packets addressed to the
// gateway are authenticated, checked for replay and decrypted by
// IPsecESPTunnelUnencap, and the inner packet is routed again (out
// interface 0). $DEV0 is the local site, $DEV1 the WAN toward the peer.
//
//   paraclick conf/vpn-gateway-veth.click DEV0=r0 DEV1=r1 \
//       ADDR1=172.16.0.1 NET1=172.16.0.0/24 PEER=172.16.0.2 REMOTE=10.0.2.0/24 \
//       ALG=aes128gcm16 SPI_OUT=0x1001 KEY_OUT=0x... SPI_IN=0x2002 KEY_IN=0x...
//
// The WAN's MTU ($MTU1) should leave room for the ESP overhead (up to 73
// bytes with 3DES, 57 with AES-GCM, plus the outer header) or the outer
// packets are fragmented; this gateway does not reassemble inbound ESP
// fragments (they are counted as not_esp).
//
// Handlers: enc.* and dec.* (packets, bytes, seq, replay_drops,
// auth_failures, bad_padding, truncated, unknown_spi, not_esp, drops).
// Run as root in a namespace whose interfaces have no IP addresses (see
// conf/iprouter-veth.click and tests/netns/vpn.sh).

define($DEV0 r0, $ADDR0 10.0.1.1, $PLEN0 24, $NET0 10.0.1.0/24, $BCAST0 10.0.1.255,
       $MAC0 02:00:00:00:01:01, $MTU0 1500,
       $DEV1 r1, $ADDR1 172.16.0.1, $PLEN1 24, $NET1 172.16.0.0/24, $BCAST1 172.16.0.255,
       $MAC1 02:00:00:00:02:01, $MTU1 1600,
       $PEER 172.16.0.2, $REMOTE 10.0.2.0/24,
       $SPI_OUT 0x1001, $SPI_IN 0x2002, $ALG aes128gcm16,
       $KEY_OUT 0x00112233445566778899aabbccddeeff01020304,
       $KEY_IN 0xffeeddccbbaa99887766554433221100a0b0c0d0,
       $BURST 32, $SNIFFER false);

AddressInfo(if0 $ADDR0/$PLEN0 $MAC0,
            if1 $ADDR1/$PLEN1 $MAC1);

// Routing table: the router itself (0), one output per interface, and
// the tunnel (3).
rt :: RadixIPLookup($ADDR0/32 0, $BCAST0/32 0,
                    $ADDR1/32 0, $BCAST1/32 0,
                    255.255.255.255/32 0, 0.0.0.0/32 0,
                    $NET0 1,
                    $NET1 2,
                    $REMOTE 3);

// IP input, shared by both interfaces: check the header (RFC 1812 5.2.2),
// drop broadcast sources as Click does (STRICT_SRC: every 5.3.7 martian), look the destination up.
ip :: Strip(14)
  -> cip :: CheckIPHeader(INTERFACES $ADDR0/$PLEN0 $ADDR1/$PLEN1)
  -> GetIPAddress(16)
  -> rt;

// Packets for the router: ESP from the peer is decrypted (Figure 7) and
// its inner packet routed; pings are answered; the rest is discarded.
rt[0] -> self :: IPClassifier(ip proto 50, icmp type echo, -);
self[0] -> dec :: IPsecESPTunnelUnencap($SPI_IN, $ALG, $KEY_IN, $PEER, $ADDR1)
        -> CheckIPHeader
        -> GetIPAddress(16)
        -> rt;
self[1] -> ICMPPingResponder -> rt;
self[2] -> tohost :: Discard;

// To the remote site: encrypt (Figure 6), then route the ESP packet.
rt[3] -> dtv :: DecIPTTL
      -> enc :: IPsecESPTunnelEncap($SPI_OUT, $ALG, $KEY_OUT, $ADDR1, $PEER)
      -> GetIPAddress(16)
      -> rt;
dtv[1] -> ICMPError(if0, timeexceeded) -> rt;

// Interface 0.
in0 :: FromDevice($DEV0, BURST $BURST, SNIFFER $SNIFFER);
out0 :: Queue(1000) -> to0 :: ToDevice($DEV0, BURST $BURST);
c0 :: Classifier(12/0806 20/0001,  // ARP requests
                 12/0806 20/0002,  // ARP replies
                 12/0800,          // IP
                 -);               // other
in0 -> hf0 :: HostEtherFilter(if0, DROP_OWN true, DROP_OTHER true) -> c0;
arpq0 :: ARPQuerier(if0) -> out0;
c0[0] -> ar0 :: ARPResponder(if0) -> out0;
c0[1] -> [1]arpq0;
c0[2] -> Paint(1) -> ip;
c0[3] -> other0 :: Discard;

// Interface 1.
in1 :: FromDevice($DEV1, BURST $BURST, SNIFFER $SNIFFER);
out1 :: Queue(1000) -> to1 :: ToDevice($DEV1, BURST $BURST);
c1 :: Classifier(12/0806 20/0001,
                 12/0806 20/0002,
                 12/0800,
                 -);
in1 -> hf1 :: HostEtherFilter(if1, DROP_OWN true, DROP_OTHER true) -> c1;
arpq1 :: ARPQuerier(if1) -> out1;
c1[0] -> ar1 :: ARPResponder(if1) -> out1;
c1[1] -> [1]arpq1;
c1[2] -> Paint(2) -> ip;
c1[3] -> other1 :: Discard;

// Forwarding out interface 0, with ICMP errors back through rt.
rt[1] -> db0 :: DropBroadcasts
      -> cp0 :: PaintTee(1)
      -> gio0 :: IPGWOptions(if0, if1)
      -> FixIPSrc(if0)
      -> dt0 :: DecIPTTL
      -> fr0 :: IPFragmenter($MTU0)
      -> [0]arpq0;
cp0[1] -> ICMPError(if0, redirect, host) -> rt;
gio0[1] -> ICMPError(if0, parameterproblem) -> rt;
dt0[1] -> ICMPError(if0, timeexceeded) -> rt;
fr0[1] -> ICMPError(if0, unreachable, needfrag, PMTU $MTU0) -> rt;

// Forwarding out interface 1, with ICMP errors back through rt.
rt[2] -> db1 :: DropBroadcasts
      -> cp1 :: PaintTee(2)
      -> gio1 :: IPGWOptions(if1, if0)
      -> FixIPSrc(if1)
      -> dt1 :: DecIPTTL
      -> fr1 :: IPFragmenter($MTU1)
      -> [0]arpq1;
cp1[1] -> ICMPError(if1, redirect, host) -> rt;
gio1[1] -> ICMPError(if1, parameterproblem) -> rt;
dt1[1] -> ICMPError(if1, timeexceeded) -> rt;
fr1[1] -> ICMPError(if1, unreachable, needfrag, PMTU $MTU1) -> rt;
