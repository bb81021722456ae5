// iprouter6-veth-2q.click -- an IPv6 router on two real interfaces, two
// receive queues per interface.
//
// conf/iprouter6-veth.click with each interface read by two FromDevice
// elements (QUEUE 0 and 1 of N_QUEUES 2, one PACKET_FANOUT group; with
// FANOUT CPU, the default $FANOUT, CPU i's frames go to QUEUE i) and
// ToDevice in push context, as conf/iprouter-veth-2q.click does for IPv4
// (see there for XPS). Queue i of both interfaces runs on thread i. Run it
// with -j 2:
//
//   paraclick -j 2 conf/iprouter6-veth-2q.click DEV0=r0 DEV1=r1 MTU1=1400
//
// What follows is conf/iprouter6-veth.click's description.
//
//
// The IPv6 counterpart of conf/iprouter-veth.click: per interface a
// FromDevice, a HostEtherFilter and a Classifier (neighbour
// solicitations, neighbour advertisements, IPv6, other); IP6NDAdvertiser
// answers solicitations for the router's addresses and IP6NDSolicitor
// finds next hops (both learn from what they see); one shared IPv6 input
// path (Strip, CheckIP6Header, GetIP6Address) into one LookupIP6Route;
// per interface an output path with DecIP6HLIM (hop limit exceeded:
// ICMPv6 time exceeded) and CheckLength at the interface's MTU (too big:
// ICMPv6 packet too big, RFC 8201 path MTU discovery; IPv6 routers do not
// fragment). Errors go back into the routing table. Packets for the
// router itself are discarded.
//
// Run it in a network namespace whose interfaces $DEV0 and $DEV1 have no
// addresses (SNIFFER false also turns the kernel's IPv6 off on them), as
// root:
//
//   paraclick conf/iprouter6-veth.click DEV0=r0 DEV1=r1 MTU1=1400
//
// conf/iprouter6-veth-2q.click is the same router with two receive queues
// per interface (run it with -j 2).
//
// Interfaces (defaults):
//   $DEV0 r0  $ADDR0 2001:db8:1::1/64  $MAC0 02:00:00:00:01:01  $MTU0 1500
//   $DEV1 r1  $ADDR1 2001:db8:2::1/64  $MAC1 02:00:00:00:02:01  $MTU1 1500

// METHOD=XDP reads and writes the interfaces through AF_XDP sockets
// instead of AF_PACKET (docs/AF_XDP.md).
define($DEV0 r0, $ADDR0 2001:db8:1::1, $NET0 2001:db8:1::/64,
       $MAC0 02:00:00:00:01:01, $MTU0 1500,
       $DEV1 r1, $ADDR1 2001:db8:2::1, $NET1 2001:db8:2::/64,
       $MAC1 02:00:00:00:02:01, $MTU1 1500,
       $BURST 32, $METHOD LINUX, $FANOUT CPU, $SNIFFER false);

AddressInfo(if0 $ADDR0 $MAC0, if1 $ADDR1 $MAC1);

// Routing table: the router itself (0), then one output per interface.
rt :: LookupIP6Route($ADDR0/128 0, $ADDR1/128 0, $NET0 1, $NET1 2);

// IPv6 input, shared by both interfaces.
ip6 :: Strip(14)
  -> cip6 :: CheckIP6Header
  -> GetIP6Address(24)
  -> rt;
rt[0] -> tohost :: Discard;

// Interface 0.
in0q0 :: FromDevice($DEV0, QUEUE 0, N_QUEUES 2, FANOUT $FANOUT, BURST $BURST, SNIFFER $SNIFFER, METHOD $METHOD);
in0q1 :: FromDevice($DEV0, QUEUE 1, N_QUEUES 2, FANOUT $FANOUT, BURST $BURST, SNIFFER $SNIFFER, METHOD $METHOD);
out0 :: ToDevice($DEV0, BURST $BURST, METHOD $METHOD);
c0 :: Classifier(12/86dd 20/3aff 54/87,  // neighbour solicitations
                 12/86dd 20/3aff 54/88,  // neighbour advertisements
                 12/86dd,                // IPv6
                 -);                     // other
in0q0 -> hf0 :: HostEtherFilter(if0, DROP_OWN true, DROP_OTHER true) -> c0;
in0q1 -> hf0;
nds0 :: IP6NDSolicitor(if0) -> out0;
c0[0] -> ns0 :: Tee(2);
ns0[0] -> IP6NDAdvertiser(if0, ROUTER true) -> out0;
ns0[1] -> [1]nds0;
c0[1] -> [1]nds0;
c0[2] -> Paint(1) -> ip6;
c0[3] -> other0 :: Discard;

// Interface 1.
in1q0 :: FromDevice($DEV1, QUEUE 0, N_QUEUES 2, FANOUT $FANOUT, BURST $BURST, SNIFFER $SNIFFER, METHOD $METHOD);
in1q1 :: FromDevice($DEV1, QUEUE 1, N_QUEUES 2, FANOUT $FANOUT, BURST $BURST, SNIFFER $SNIFFER, METHOD $METHOD);
out1 :: ToDevice($DEV1, BURST $BURST, METHOD $METHOD);
c1 :: Classifier(12/86dd 20/3aff 54/87,
                 12/86dd 20/3aff 54/88,
                 12/86dd,
                 -);
in1q0 -> hf1 :: HostEtherFilter(if1, DROP_OWN true, DROP_OTHER true) -> c1;
in1q1 -> hf1;
nds1 :: IP6NDSolicitor(if1) -> out1;
c1[0] -> ns1 :: Tee(2);
ns1[0] -> IP6NDAdvertiser(if1, ROUTER true) -> out1;
ns1[1] -> [1]nds1;
c1[1] -> [1]nds1;
c1[2] -> Paint(2) -> ip6;
c1[3] -> other1 :: Discard;

// Forwarding out interface 0, with ICMPv6 errors back through rt.
rt[1] -> dh0 :: DecIP6HLIM -> cl0 :: CheckLength($MTU0) -> [0]nds0;
dh0[1] -> ICMP6Error(if0, timeexceeded) -> rt;
cl0[1] -> ICMP6Error(if0, packettoobig, PMTU $MTU0) -> rt;

// Forwarding out interface 1, with ICMPv6 errors back through rt.
rt[2] -> dh1 :: DecIP6HLIM -> cl1 :: CheckLength($MTU1) -> [0]nds1;
dh1[1] -> ICMP6Error(if1, timeexceeded) -> rt;
cl1[1] -> ICMP6Error(if1, packettoobig, PMTU $MTU1) -> rt;

// Queue i of each interface on thread i.
StaticThreadSched(in0q0 0, in1q0 0,
                  in0q1 1, in1q1 1);
