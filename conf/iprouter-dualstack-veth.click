// iprouter-dualstack-veth.click -- an IPv4 and IPv6 router on two real
// interfaces.
//
// conf/iprouter-veth.click (the Figure-2 RFC 1812 IPv4 router with ARP)
// and conf/iprouter6-veth.click (IPv6 with neighbour discovery) sharing
// the devices: each interface's Classifier separates ARP, IPv4, neighbour
// solicitations and advertisements, and IPv6; each family has its own
// routing table (rt, rt6) and forwarding paths, and both send through the
// interface's output Queue. Run it as root in a namespace whose
// interfaces have no addresses:
//
//   paraclick conf/iprouter-dualstack-veth.click DEV0=r0 DEV1=r1 MTU1=1400
//
// Interfaces (defaults):
//   $DEV0 r0  10.0.1.1/24  2001:db8:1::1/64  02:00:00:00:01:01  $MTU0 1500
//   $DEV1 r1  10.0.2.1/24  2001:db8:2::1/64  02:00:00:00:02:01  $MTU1 1500

define($DEV0 r0, $ADDR0 10.0.1.1, $PLEN0 24, $NET0 10.0.1.0/24, $BCAST0 10.0.1.255,
       $ADDR6_0 2001:db8:1::1, $NET6_0 2001:db8:1::/64,
       $MAC0 02:00:00:00:01:01, $MTU0 1500,
       $DEV1 r1, $ADDR1 10.0.2.1, $PLEN1 24, $NET1 10.0.2.0/24, $BCAST1 10.0.2.255,
       $ADDR6_1 2001:db8:2::1, $NET6_1 2001:db8:2::/64,
       $MAC1 02:00:00:00:02:01, $MTU1 1500,
       $BURST 32, $SNIFFER false);

AddressInfo(if0 $ADDR0/$PLEN0 $ADDR6_0 $MAC0,
            if1 $ADDR1/$PLEN1 $ADDR6_1 $MAC1);

// IPv6: routing table, shared input path, packets for the router.
rt6 :: LookupIP6Route($ADDR6_0/128 0, $ADDR6_1/128 0, $NET6_0 1, $NET6_1 2);
ip6 :: Strip(14)
  -> cip6 :: CheckIP6Header
  -> GetIP6Address(24)
  -> rt6;
rt6[0] -> tohost6 :: Discard;

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

// Packets for the router: answer pings, discard the rest.
rt[0] -> self :: IPClassifier(icmp type echo, -);
self[0] -> ICMPPingResponder -> rt;
self[1] -> tohost :: Discard;

// Interface 0.
in0 :: FromDevice($DEV0, BURST $BURST, SNIFFER $SNIFFER);
out0 :: Queue(1000) -> to0 :: ToDevice($DEV0, BURST $BURST);
c0 :: Classifier(12/0806 20/0001,          // ARP requests
                 12/0806 20/0002,          // ARP replies
                 12/0800,                  // IPv4
                 12/86dd 20/3aff 54/87,    // neighbour solicitations
                 12/86dd 20/3aff 54/88,    // neighbour advertisements
                 12/86dd,                  // IPv6
                 -);                       // other
in0 -> hf0 :: HostEtherFilter(if0, DROP_OWN true, DROP_OTHER true) -> c0;
arpq0 :: ARPQuerier(if0) -> out0;
c0[0] -> ar0 :: ARPResponder(if0) -> out0;
c0[1] -> [1]arpq0;
c0[2] -> Paint(1) -> ip;
nds0 :: IP6NDSolicitor(if0) -> out0;
c0[3] -> ns0 :: Tee(2);
ns0[0] -> IP6NDAdvertiser(if0, ROUTER true) -> out0;
ns0[1] -> [1]nds0;
c0[4] -> [1]nds0;
c0[5] -> Paint(1) -> ip6;
c0[6] -> other0 :: Discard;

// Interface 1.
in1 :: FromDevice($DEV1, BURST $BURST, SNIFFER $SNIFFER);
out1 :: Queue(1000) -> to1 :: ToDevice($DEV1, BURST $BURST);
c1 :: Classifier(12/0806 20/0001,          // ARP requests
                 12/0806 20/0002,          // ARP replies
                 12/0800,                  // IPv4
                 12/86dd 20/3aff 54/87,    // neighbour solicitations
                 12/86dd 20/3aff 54/88,    // neighbour advertisements
                 12/86dd,                  // IPv6
                 -);                       // other
in1 -> hf1 :: HostEtherFilter(if1, DROP_OWN true, DROP_OTHER true) -> c1;
arpq1 :: ARPQuerier(if1) -> out1;
c1[0] -> ar1 :: ARPResponder(if1) -> out1;
c1[1] -> [1]arpq1;
c1[2] -> Paint(2) -> ip;
nds1 :: IP6NDSolicitor(if1) -> out1;
c1[3] -> ns1 :: Tee(2);
ns1[0] -> IP6NDAdvertiser(if1, ROUTER true) -> out1;
ns1[1] -> [1]nds1;
c1[4] -> [1]nds1;
c1[5] -> Paint(2) -> ip6;
c1[6] -> other1 :: Discard;

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

// IPv6 forwarding out each interface, with ICMPv6 errors back through rt6.
rt6[1] -> dh0 :: DecIP6HLIM -> cl0 :: CheckLength($MTU0) -> [0]nds0;
dh0[1] -> ICMP6Error(if0, timeexceeded) -> rt6;
cl0[1] -> ICMP6Error(if0, packettoobig, PMTU $MTU0) -> rt6;
rt6[2] -> dh1 :: DecIP6HLIM -> cl1 :: CheckLength($MTU1) -> [0]nds1;
dh1[1] -> ICMP6Error(if1, timeexceeded) -> rt6;
cl1[1] -> ICMP6Error(if1, packettoobig, PMTU $MTU1) -> rt6;
