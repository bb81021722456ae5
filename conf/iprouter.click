// An RFC 1812 IP router with 2 interfaces, written by paraclick make-ip-conf.
//
// The router of the SMP Click paper's Figure 2 in the layout of Click's
// make-ip-conf.pl. Interface i is painted i+1 and is output i+1 of the
// routing table rt; output 0 takes the packets for the router itself (its
// addresses, its networks' broadcast and network addresses).
//
// Packets are read from pcap files ($IN0, ...) and written to pcap files
// ($OUT0, ...). The packets for the router go to the host output, tohost,
// written as raw IP to $HOST: as make-ip-conf.pl sends them to Linux, the
// router does not answer pings itself. It stops when every input file is
// done and the queues had 0.1 s to drain.
//
//   paraclick iprouter.click IN0=in0.pcap OUT0=out0.pcap IN1=in1.pcap OUT1=out1.pcap \
//       -h cip.drop_details -h rt.table -h tohost.count
//
// Interfaces:
//   eth0   1.0.0.1/8          00:00:c0:ae:67:ef  MTU 1500
//   eth1   2.0.0.1/8          00:00:c0:4f:71:ef  MTU 1500

define($IN0 eth0-in.pcap, $OUT0 eth0-out.pcap, $MTU0 1500,
       $IN1 eth1-in.pcap, $OUT1 eth1-out.pcap, $MTU1 1500,
       $HOST host.pcap);

// Stop once every input file is done and the output queues have drained.
DriverManager(pause 2, wait 0.1s, stop);

// Routing table: the host (0), then one output per interface.
rt :: RadixIPLookup(1.0.0.1/32 0,
                     1.255.255.255/32 0,
                     1.0.0.0/32 0,
                     2.0.0.1/32 0,
                     2.255.255.255/32 0,
                     2.0.0.0/32 0,
                     255.255.255.255/32 0,
                     0.0.0.0/32 0,
                     1.0.0.0/8 1,
                     2.0.0.0/8 2);

// IP input, shared by every interface: check the header (RFC 1812 5.2.2),
// drop broadcast sources as Click does (STRICT_SRC: every 5.3.7 martian), look the destination up.
ip :: Strip(14)
  -> cip :: CheckIPHeader(INTERFACES 1.0.0.1/8 2.0.0.1/8, DETAILS true)
  -> GetIPAddress(16)
  -> rt;

// Packets for the router itself go to the host.
rt[0] -> tohost :: ToDump($HOST, ENCAP IP);

// eth0: 1.0.0.1/8, 00:00:c0:ae:67:ef, MTU 1500.
// BURST 32: batches of 32 packets (FromDump's default, 1, is Click's
// one packet per run: Click's order of side effects, at twice the cost).
in0 :: FromDump($IN0, STOP true, BURST 32);
out0 :: Queue(200) -> to0 :: ToDump($OUT0);
c0 :: Classifier(12/0806 20/0001,  // ARP requests
                 12/0806 20/0002,  // ARP replies
                 12/0800,          // IP
                 -);               // other
in0 -> hf0 :: HostEtherFilter(00:00:c0:ae:67:ef, DROP_OWN true) -> c0;
arpq0 :: ARPQuerier(1.0.0.1, 00:00:c0:ae:67:ef) -> out0;
c0[0] -> ar0 :: ARPResponder(1.0.0.1 00:00:c0:ae:67:ef) -> out0;
c0[1] -> [1]arpq0;
c0[2] -> Paint(1) -> ip;
c0[3] -> other0 :: Discard;

// eth1: 2.0.0.1/8, 00:00:c0:4f:71:ef, MTU 1500.
in1 :: FromDump($IN1, STOP true, BURST 32);
out1 :: Queue(200) -> to1 :: ToDump($OUT1);
c1 :: Classifier(12/0806 20/0001,  // ARP requests
                 12/0806 20/0002,  // ARP replies
                 12/0800,          // IP
                 -);               // other
in1 -> hf1 :: HostEtherFilter(00:00:c0:4f:71:ef, DROP_OWN true) -> c1;
arpq1 :: ARPQuerier(2.0.0.1, 00:00:c0:4f:71:ef) -> out1;
c1[0] -> ar1 :: ARPResponder(2.0.0.1 00:00:c0:4f:71:ef) -> out1;
c1[1] -> [1]arpq1;
c1[2] -> Paint(2) -> ip;
c1[3] -> other1 :: Discard;

// Forwarding out eth0, with ICMP errors back through rt.
rt[1] -> db0 :: DropBroadcasts
      -> cp0 :: PaintTee(1)
      -> gio0 :: IPGWOptions(1.0.0.1, 2.0.0.1)
      -> FixIPSrc(1.0.0.1)
      -> dt0 :: DecIPTTL
      -> fr0 :: IPFragmenter($MTU0)
      -> [0]arpq0;
cp0[1] -> ICMPError(1.0.0.1, redirect, host) -> rt;
gio0[1] -> ICMPError(1.0.0.1, parameterproblem) -> rt;
dt0[1] -> ICMPError(1.0.0.1, timeexceeded) -> rt;
fr0[1] -> ICMPError(1.0.0.1, unreachable, needfrag, PMTU $MTU0) -> rt;

// Forwarding out eth1, with ICMP errors back through rt.
rt[2] -> db1 :: DropBroadcasts
      -> cp1 :: PaintTee(2)
      -> gio1 :: IPGWOptions(2.0.0.1, 1.0.0.1)
      -> FixIPSrc(2.0.0.1)
      -> dt1 :: DecIPTTL
      -> fr1 :: IPFragmenter($MTU1)
      -> [0]arpq1;
cp1[1] -> ICMPError(2.0.0.1, redirect, host) -> rt;
gio1[1] -> ICMPError(2.0.0.1, parameterproblem) -> rt;
dt1[1] -> ICMPError(2.0.0.1, timeexceeded) -> rt;
fr1[1] -> ICMPError(2.0.0.1, unreachable, needfrag, PMTU $MTU1) -> rt;
