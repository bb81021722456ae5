// iprouter-veth-host.click -- the Figure-2 IP router on two real
// interfaces, with Linux's own stack answering on the router's addresses.
//
// conf/iprouter-veth.click (see there), plus a tap device per interface
// through which the packets addressed to the router reach the Linux stack
// of the namespace it runs in, and Linux's answers come back into the
// routing path. A TCP service bound to a router address (an HTTP server
// on 10.0.1.1, sshd) answers the hosts on both sides.
//
// Design:
//  - FromHost($TAP0, $ADDR0/$PLEN0) and FromHost($TAP1, $ADDR1/$PLEN1)
//    create two taps holding the router's addresses, each with its
//    interface's prefix: Linux owns the router's addresses and routes each
//    interface's network through the tap of that interface. The taps'
//    MTUs are the interfaces' MTUs, so Linux's TCP and PMTU fit them.
//  - Packets the routing table sends to the router (rt[0]): pings are
//    still answered by ICMPPingResponder (the router answers them even
//    when Linux is busy); everything else goes to Linux, with an Ethernet
//    header from a fake router MAC ($FAKEMAC) to the tap's own address:
//    packets for $ADDR1 or $BCAST1 through $TAP1, all others (for $ADDR0,
//    $BCAST0, 255.255.255.255, 0.0.0.0) through $TAP0.
//  - Linux's side of the taps: its ARP queries (for the hosts it answers)
//    are answered by ARPResponder(0.0.0.0/0 $FAKEMAC), so every neighbour
//    of Linux is the router; its IP packets enter the router's IP input
//    like packets from an interface (Paint 3: neither interface, so no
//    redirects), are routed, TTL-decremented, fragmented and ARPed out of
//    the right interface. Other frames (IPv6 neighbour discovery) are
//    discarded.
//  - Linux must not also take the packets straight off $DEV0 and $DEV1
//    now that the namespace holds addresses (it accepts packets for any
//    local address on any interface): FromDevice's SNIFFER false turns
//    reverse-path filtering on for them (see `paraclick doc FromDevice`),
//    so Linux drops every IPv4 packet arriving there; answers would
//    otherwise come twice.
//  - Linux knows routes to the two interfaces' networks only. For hosts
//    beyond them, give one FromHost a GATEWAY on its tap's network (any
//    address: ARPResponder answers for all), e.g. GATEWAY 10.0.1.254:
//    Linux's default route then leads into the router, whose table
//    decides. IPv4 only: Linux's IPv6 on the taps reaches nothing.
//
// Run it as root in a network namespace whose interfaces $DEV0 and $DEV1
// have no IP addresses, then start services on the router's addresses
// (they exist once the router runs), e.g.
//
//   paraclick conf/iprouter-veth-host.click DEV0=r0 DEV1=r1 MTU1=1400 &
//   python3 -m http.server --bind 10.0.1.1 8080
//
// The taps disappear when the router ends.
//
// Interfaces (defaults):
//   $DEV0 r0  $ADDR0 10.0.1.1/24  $MAC0 02:00:00:00:01:01  $MTU0 1500
//   $DEV1 r1  $ADDR1 10.0.2.1/24  $MAC1 02:00:00:00:02:01  $MTU1 1500
//   $TAP0 ph0 (Linux side 10.0.1.1/24, $HMAC0 02:00:00:00:01:fe)
//   $TAP1 ph1 (Linux side 10.0.2.1/24, $HMAC1 02:00:00:00:02:fe)
//   $FAKEMAC 02:00:00:00:00:fe (the router, as Linux sees it on the taps)

define($DEV0 r0, $ADDR0 10.0.1.1, $PLEN0 24, $NET0 10.0.1.0/24, $BCAST0 10.0.1.255,
       $MAC0 02:00:00:00:01:01, $MTU0 1500,
       $DEV1 r1, $ADDR1 10.0.2.1, $PLEN1 24, $NET1 10.0.2.0/24, $BCAST1 10.0.2.255,
       $MAC1 02:00:00:00:02:01, $MTU1 1500,
       $TAP0 ph0, $HMAC0 02:00:00:00:01:fe,
       $TAP1 ph1, $HMAC1 02:00:00:00:02:fe,
       $FAKEMAC 02:00:00:00:00:fe,
       $BURST 32, $SNIFFER false);

AddressInfo(if0 $ADDR0/$PLEN0 $MAC0,
            if1 $ADDR1/$PLEN1 $MAC1);

// Routing table: the router itself (0), then one output per interface.
rt :: RadixIPLookup($ADDR0/32 0, $BCAST0/32 0,
                    $ADDR1/32 0, $BCAST1/32 0,
                    255.255.255.255/32 0, 0.0.0.0/32 0,
                    $NET0 1,
                    $NET1 2);

// IP input, shared by both interfaces: check the header (RFC 1812 5.2.2),
// drop broadcast sources as Click does (STRICT_SRC: every 5.3.7 martian), look the destination up.
ip :: Strip(14)
  -> cip :: CheckIPHeader(INTERFACES $ADDR0/$PLEN0 $ADDR1/$PLEN1)
  -> GetIPAddress(16)
  -> rt;

// The Linux stack, through one tap per interface.
fh0 :: FromHost($TAP0, $ADDR0/$PLEN0, ETHER $HMAC0, MTU $MTU0, BURST $BURST);
th0 :: ToHost($TAP0);
fh0 -> hc0 :: Classifier(12/0806 20/0001,  // ARP requests
                         12/0800,          // IP
                         -);               // other (IPv6)
hc0[0] -> har0 :: ARPResponder(0.0.0.0/0 $FAKEMAC) -> th0;
hc0[1] -> Paint(3) -> ip;
hc0[2] -> hostother0 :: Discard;

fh1 :: FromHost($TAP1, $ADDR1/$PLEN1, ETHER $HMAC1, MTU $MTU1, BURST $BURST);
th1 :: ToHost($TAP1);
fh1 -> hc1 :: Classifier(12/0806 20/0001,
                         12/0800,
                         -);
hc1[0] -> har1 :: ARPResponder(0.0.0.0/0 $FAKEMAC) -> th1;
hc1[1] -> Paint(3) -> ip;
hc1[2] -> hostother1 :: Discard;

// Packets for the router: answer pings, hand the rest to Linux through
// the tap of the address they are for.
rt[0] -> self :: IPClassifier(icmp type echo,
                              dst host $ADDR1 or dst host $BCAST1,
                              -);
self[0] -> ICMPPingResponder -> rt;
self[1] -> EtherEncap(0x0800, $FAKEMAC, $HMAC1) -> th1;
self[2] -> EtherEncap(0x0800, $FAKEMAC, $HMAC0) -> th0;

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
