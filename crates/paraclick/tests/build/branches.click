// branches.click -- fake-iprouter.click (conf/) with sources whose
// packets leave the main path: an expired TTL (ICMP time exceeded back
// through the routing table), a bad IP checksum (a drop with a reason),
// an ARP request (answered by ARPResponder), a non-IP frame (Discard), a
// packet sent back out of the interface it came in on (PaintTee's copy
// to an ICMP redirect). Every source at BURST 1. Used by the ahead-of-time
// build test (tests/build.rs): the built program and the dynamic router
// must count the same everywhere.

define($N 2000, $BURST 1);


AddressInfo(
  eth0  1.0.0.1/8  00:00:c0:ae:67:ef,
  eth1  2.0.0.1/8  00:00:c0:4f:71:ef
);

// Stop when both sources have sent $N packets.
DriverManager(pause, pause, pause, pause, pause, pause, pause);

src0 :: InfiniteSource(DATA \<0000c0ae 67ef0000 c0111111 08004500 002e0000 00004011
  77bc0100 00020200 000204d2 162e001a 99650001 02030405 06070809 0a0b0c0d 0e0f1011>,
  LIMIT $N, BURST $BURST, STOP true);
src1 :: InfiniteSource(DATA \<0000c04f 71ef0000 c0222222 08004500 002e0000 00004011
  77bc0200 00020100 0002162e 04d2001a 99650001 02030405 06070809 0a0b0c0d 0e0f1011>,
  LIMIT $N, BURST $BURST, STOP true);

// Output queues, drained by Discards standing in for ToDevice (up to 32
// packets a task run; a pull Discard takes one by default, as Click's).
q0 :: Queue(200) -> out0 :: Counter -> d0 :: Discard(BURST 32);
q1 :: Queue(200) -> out1 :: Counter -> d1 :: Discard(BURST 32);

// Classify: ARP requests, ARP replies, IP, other.
c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
src0 -> c0;
src1 -> c1;

// An expired TTL (1; checksum adjusted).
src2 :: InfiniteSource(DATA \<0000c0ae 67ef0000 c0111111 08004500 002e0000 00000111
  b6bc0100 00020200 000204d2 162e001a 99650001 02030405 06070809 0a0b0c0d 0e0f1011>,
  LIMIT $N, BURST $BURST, STOP true);
// A bad IP header checksum.
src3 :: InfiniteSource(DATA \<0000c04f 71ef0000 c0222222 08004500 002e0000 00004011
  77bd0200 00020100 0002162e 04d2001a 99650001 02030405 06070809 0a0b0c0d 0e0f1011>,
  LIMIT $N, BURST $BURST, STOP true);
// An ARP request for eth0's address.
src4 :: InfiniteSource(DATA \<ffffffff ffff0000 c0111111 08060001 08000604 00010000
  c0111111 01000002 00000000 00000100 00010000 00000000 00000000 00000000 00000000>,
  LIMIT $N, BURST $BURST, STOP true);
// A frame that is neither IP nor ARP.
src5 :: InfiniteSource(DATA \<0000c04f 71ef0000 c0222222 86dd6000 00000000 00000000
  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000>,
  LIMIT $N, BURST $BURST, STOP true);
// From eth0 to a host on eth0 (1.0.0.5): forwarded, and redirected.
src6 :: InfiniteSource(DATA \<0000c0ae 67ef0000 c0111111 08004500 002e0000 00004011
  78b90100 00020100 000504d2 162e001a 99650001 02030405 06070809 0a0b0c0d 0e0f1011>,
  LIMIT $N, BURST $BURST, STOP true);
src2 -> c0;
src3 -> c1;
src4 -> c0;
src5 -> c1;
src6 -> c0;

c0[0] -> ARPResponder(eth0) -> q0;
c1[0] -> ARPResponder(eth1) -> q1;
c0[1] -> arp_replies :: Discard;      // would feed an ARPQuerier
c1[1] -> arp_replies;
c0[3] -> other :: Discard;
c1[3] -> other;

// Shared IP input path and routing table.
rt :: StaticIPLookup(1.0.0.1/32 0, 1.255.255.255/32 0, 1.0.0.0/32 0,
                     2.0.0.1/32 0, 2.255.255.255/32 0, 2.0.0.0/32 0,
                     1.0.0.0/8 1, 2.0.0.0/8 2);
ip :: Strip(14)
  -> CheckIPHeader(INTERFACES 1.0.0.1/8 2.0.0.1/8)
  -> GetIPAddress(16)
  -> rt;
c0[2] -> Paint(1) -> ip;
c1[2] -> Paint(2) -> ip;

rt[0] -> tohost :: Discard;           // packets for the router itself

// One forwarding path per output interface: RFC 1812 checks, with ICMP
// errors sent back through the routing table.
elementclass OutputPath { $paint, $addr, $ether, $next_ether |
  input
    -> DropBroadcasts
    -> cp :: PaintTee($paint)
    -> gio :: IPGWOptions($addr)
    -> FixIPSrc($addr)
    -> dt :: DecIPTTL
    -> fr :: IPFragmenter(1500)
    -> EtherEncap(0x0800, $ether, $next_ether)
    -> [0]output;
  cp[1] -> ICMPError($addr, redirect, host) -> [1]output;
  gio[1] -> ICMPError($addr, parameterproblem) -> [1]output;
  dt[1] -> ICMPError($addr, timeexceeded) -> [1]output;
  fr[1] -> ICMPError($addr, unreachable, needfrag) -> [1]output;
}

rt[1] -> p0 :: OutputPath(1, eth0, eth0, 00:00:c0:11:11:11) -> q0;
rt[2] -> p1 :: OutputPath(2, eth1, eth1, 00:00:c0:22:22:22) -> q1;
p0[1] -> rt;
p1[1] -> rt;
