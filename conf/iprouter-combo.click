// iprouter-combo.click -- the IP router of iprouter-pcap.click written
// with Click's combo elements, in the style of Click's router-vanilla
// configurations: IPInputCombo does Paint, Strip(14), CheckIPHeader and
// GetIPAddress(16); IPOutputCombo does DropBroadcasts, PaintTee,
// IPGWOptions, FixIPSrc, DecIPTTL and CheckLength(MTU), with its error
// outputs turned into ICMP errors and its too-long output fragmented.
//
//   paraclick check conf/iprouter-combo.click
//   paraclick conf/iprouter-combo.click IN0=a.pcap IN1=b.pcap OUT0=x.pcap OUT1=y.pcap
//
// Interfaces:
//   eth0  1.0.0.1/8  00:00:c0:ae:67:ef
//   eth1  2.0.0.1/8  00:00:c0:4f:71:ef

define($IN0 eth0-in.pcap, $IN1 eth1-in.pcap, $OUT0 eth0-out.pcap, $OUT1 eth1-out.pcap);

AddressInfo(
  eth0  1.0.0.1/8  00:00:c0:ae:67:ef,
  eth1  2.0.0.1/8  00:00:c0:4f:71:ef
);

DriverManager(pause 2, wait 0.2s, stop);

src0 :: FromDump($IN0, STOP true);
src1 :: FromDump($IN1, STOP true);

q0 :: Queue(100000) -> out0 :: Counter -> d0 :: ToDump($OUT0);
q1 :: Queue(100000) -> out1 :: Counter -> d1 :: ToDump($OUT1);

c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
src0 -> c0;
src1 -> c1;

c0[0] -> ARPResponder(eth0) -> q0;
c1[0] -> ARPResponder(eth1) -> q1;
c0[1] -> arp_replies :: Discard;
c1[1] -> arp_replies;
c0[3] -> other :: Discard;
c1[3] -> other;

rt :: StaticIPLookup(1.0.0.1/32 0, 1.255.255.255/32 0, 1.0.0.0/32 0,
                     2.0.0.1/32 0, 2.255.255.255/32 0, 2.0.0.0/32 0,
                     1.0.0.0/8 1, 2.0.0.0/8 2);

c0[2] -> ic0 :: IPInputCombo(1, INTERFACES 1.0.0.1/8 2.0.0.1/8) -> rt;
c1[2] -> ic1 :: IPInputCombo(2, INTERFACES 1.0.0.1/8 2.0.0.1/8) -> rt;

rt[0] -> tohost :: Discard;

elementclass OutputPath { $paint, $addr, $ether, $next_ether |
  input -> oc :: IPOutputCombo($paint, $addr, 1500)
    -> EtherEncap(0x0800, $ether, $next_ether)
    -> [0]output;
  oc[1] -> ICMPError($addr, redirect, host) -> [1]output;
  oc[2] -> ICMPError($addr, parameterproblem) -> [1]output;
  oc[3] -> ICMPError($addr, timeexceeded) -> [1]output;
  oc[4] -> fr :: IPFragmenter(1500)
    -> EtherEncap(0x0800, $ether, $next_ether)
    -> [0]output;
  fr[1] -> ICMPError($addr, unreachable, needfrag) -> [1]output;
}

rt[1] -> p0 :: OutputPath(1, eth0, eth0, 00:00:c0:11:11:11) -> q0;
rt[2] -> p1 :: OutputPath(2, eth1, eth1, 00:00:c0:22:22:22) -> q1;
p0[1] -> rt;
p1[1] -> rt;
