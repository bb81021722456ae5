// iprouter-pcap.click -- the benchmark IP router of fake-iprouter.click
// on pcap files: each interface's input is a FromDump of Ethernet frames,
// each output queue is drained into a ToDump. The router's graph is the
// same (ARPResponder, no ARPQuerier: next hops' addresses are fixed), so
// what one trace makes of it is deterministic per flow; used by the
// parallelize semantics test.
//
//   paraclick conf/iprouter-pcap.click IN0=a.pcap IN1=b.pcap OUT0=x.pcap OUT1=y.pcap
//
// Interfaces:
//   eth0  1.0.0.1/8  00:00:c0:ae:67:ef
//   eth1  2.0.0.1/8  00:00:c0:4f:71:ef

define($IN0 eth0-in.pcap, $IN1 eth1-in.pcap, $OUT0 eth0-out.pcap, $OUT1 eth1-out.pcap);

AddressInfo(
  eth0  1.0.0.1/8  00:00:c0:ae:67:ef,
  eth1  2.0.0.1/8  00:00:c0:4f:71:ef
);

// Stop when both files are done.
DriverManager(pause 2, wait 0.2s, stop);

// BURST 32: batches of 32 packets (FromDump's default, 1, is Click's
// one packet per run: Click's order of side effects, at twice the cost).
src0 :: FromDump($IN0, STOP true, BURST 32);
src1 :: FromDump($IN1, STOP true, BURST 32);

// Output queues, drained by Discards standing in for ToDevice.
q0 :: Queue(100000) -> out0 :: Counter -> d0 :: ToDump($OUT0);
q1 :: Queue(100000) -> out1 :: Counter -> d1 :: ToDump($OUT1);

// Classify: ARP requests, ARP replies, IP, other.
c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
src0 -> c0;
src1 -> c1;

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
