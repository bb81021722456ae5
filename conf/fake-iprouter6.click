// fake-iprouter6.click -- the benchmark IPv6 router.
//
// conf/fake-iprouter.click for IPv6: the two-interface router of
// conf/iprouter6-veth.click with each device replaced. Every input is an
// InfiniteSource sending one fixed 72-byte Ethernet/IPv6/UDP frame per
// task run (BURST 1, as the IPv4 benchmark), and every output queue is
// drained by a Discard. As the IPv4 benchmark puts EtherEncap where
// ARPQuerier would be, this one puts EtherEncap where IP6NDSolicitor
// would be. Packets from 2001:db8:1::2 on eth0 go to 2001:db8:2::2 on
// eth1 and back the other way.
//
//   paraclick conf/fake-iprouter6.click -h out0.count -h out1.count
//   paraclick bench --count out0.count --count out1.count \
//       conf/fake-iprouter.click conf/fake-iprouter6.click
//
// Interfaces:
//   eth0  2001:db8:1::1/64  00:00:c0:ae:67:ef
//   eth1  2001:db8:2::1/64  00:00:c0:4f:71:ef

define($N 1000000, $BURST 1);

AddressInfo(
  eth0  2001:db8:1::1/64  00:00:c0:ae:67:ef,
  eth1  2001:db8:2::1/64  00:00:c0:4f:71:ef
);

// Stop when both sources have sent $N packets.
DriverManager(pause, pause);

src0 :: InfiniteSource(DATA \<0000c0ae 67ef0000 c0111111 86dd6000 00000012 11402001 0db80001 00000000 00000000 00022001 0db80002 00000000
  00000000 000204d2 162e0012 75380001 02030405 06070809>,
  LIMIT $N, BURST $BURST, STOP true);
src1 :: InfiniteSource(DATA \<0000c04f 71ef0000 c0222222 86dd6000 00000012 11402001 0db80002 00000000 00000000 00022001 0db80001 00000000
  00000000 0002162e 04d20012 75380001 02030405 06070809>,
  LIMIT $N, BURST $BURST, STOP true);

// Output queues, drained by Discards standing in for ToDevice (up to 32
// packets a task run; a pull Discard takes one by default, as Click's).
q0 :: Queue(200) -> out0 :: Counter -> d0 :: Discard(BURST 32);
q1 :: Queue(200) -> out1 :: Counter -> d1 :: Discard(BURST 32);

// Classify: neighbour solicitations, advertisements, IPv6, other.
c0 :: Classifier(12/86dd 20/3aff 54/87, 12/86dd 20/3aff 54/88, 12/86dd, -);
c1 :: Classifier(12/86dd 20/3aff 54/87, 12/86dd 20/3aff 54/88, 12/86dd, -);
src0 -> c0;
src1 -> c1;

c0[0] -> IP6NDAdvertiser(eth0, ROUTER true) -> q0;
c1[0] -> IP6NDAdvertiser(eth1, ROUTER true) -> q1;
c0[1] -> nd_adverts :: Discard;       // would feed an IP6NDSolicitor
c1[1] -> nd_adverts;
c0[3] -> other :: Discard;
c1[3] -> other;

// Shared IPv6 input path and routing table.
rt :: LookupIP6Route(2001:db8:1::1/128 0, 2001:db8:2::1/128 0,
                     2001:db8:1::/64 1, 2001:db8:2::/64 2);
ip6 :: Strip(14)
  -> CheckIP6Header
  -> GetIP6Address(24)
  -> rt;
c0[2] -> Paint(1) -> ip6;
c1[2] -> Paint(2) -> ip6;

rt[0] -> tohost :: Discard;           // packets for the router itself

// One forwarding path per output interface, with ICMPv6 errors sent back
// through the routing table.
elementclass OutputPath6 { $addr, $mtu, $ether, $next_ether |
  input
    -> dh :: DecIP6HLIM
    -> cl :: CheckLength($mtu)
    -> EtherEncap(0x86dd, $ether, $next_ether)
    -> [0]output;
  dh[1] -> ICMP6Error($addr, timeexceeded) -> [1]output;
  cl[1] -> ICMP6Error($addr, packettoobig, PMTU $mtu) -> [1]output;
}

rt[1] -> p0 :: OutputPath6(eth0, 1500, eth0, 00:00:c0:11:11:11) -> q0;
rt[2] -> p1 :: OutputPath6(eth1, 1500, eth1, 00:00:c0:22:22:22) -> q1;
p0[1] -> rt;
p1[1] -> rt;
