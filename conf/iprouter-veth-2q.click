// iprouter-veth-2q.click -- the Figure-2 IP router on two real interfaces,
// two receive queues per interface.
//
// conf/iprouter-veth.click with each interface read by two FromDevice
// elements (QUEUE 0 and 1 of N_QUEUES 2): they share a PACKET_FANOUT
// group. With FANOUT CPU (the default here, $FANOUT) the kernel gives a
// frame to the queue of the CPU that received it: the sockets join in
// queue order, so CPU i's frames go to QUEUE i, which runs on thread i,
// pinned to CPU i (FANOUT HASH deals by flow instead, and half the
// frames then cross to the other CPU). Queue i of both interfaces runs on
// thread i, and the ToDevice elements are used in push context (no Queue
// before them), so each thread sends the packets it received itself: a
// packet never changes threads (the parallel forwarding paths of Egi et
// al., PRESTO 2010). Run it with -j 2. For the send side to stay on the
// CPU too, give each interface's transmit queue i to CPU i (XPS:
// `echo 1 > /sys/class/net/r1/queues/tx-0/xps_cpus`, `echo 2 > .../tx-1/
// xps_cpus`); without XPS the kernel hashes each flow to a transmit queue.
//
//   paraclick -j 2 conf/iprouter-veth-2q.click DEV0=r0 DEV1=r1 MTU1=1400
//
// Control traffic first ($PRIORITY, default true): the QUEUE 0 readers
// open each interface's priority ring for ARP, ICMP and ICMPv6, read
// before the queues (see conf/iprouter-veth.click and `paraclick doc
// FromDevice`).
//
// Interfaces (defaults):
//   $DEV0 r0  $ADDR0 10.0.1.1/24  $MAC0 02:00:00:00:01:01  $MTU0 1500
//   $DEV1 r1  $ADDR1 10.0.2.1/24  $MAC1 02:00:00:00:02:01  $MTU1 1500

// METHOD=XDP reads and writes the interfaces through AF_XDP sockets (with PRIORITY=false)
// instead of AF_PACKET (docs/AF_XDP.md).
define($DEV0 r0, $ADDR0 10.0.1.1, $PLEN0 24, $NET0 10.0.1.0/24, $BCAST0 10.0.1.255,
       $MAC0 02:00:00:00:01:01, $MTU0 1500,
       $DEV1 r1, $ADDR1 10.0.2.1, $PLEN1 24, $NET1 10.0.2.0/24, $BCAST1 10.0.2.255,
       $MAC1 02:00:00:00:02:01, $MTU1 1500,
       $BURST 32, $METHOD LINUX, $FANOUT CPU, $SNIFFER false, $PRIORITY true);

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

// Packets for the router: answer pings, discard the rest.
rt[0] -> self :: IPClassifier(icmp type echo, -);
self[0] -> ICMPPingResponder -> rt;
self[1] -> tohost :: Discard;

// Interface 0.
in0q0 :: FromDevice($DEV0, QUEUE 0, N_QUEUES 2, FANOUT $FANOUT, BURST $BURST, SNIFFER $SNIFFER, PRIORITY $PRIORITY, METHOD $METHOD);
in0q1 :: FromDevice($DEV0, QUEUE 1, N_QUEUES 2, FANOUT $FANOUT, BURST $BURST, SNIFFER $SNIFFER, PRIORITY $PRIORITY, METHOD $METHOD);
to0 :: ToDevice($DEV0, BURST $BURST, METHOD $METHOD);
c0 :: Classifier(12/0806 20/0001,  // ARP requests
                 12/0806 20/0002,  // ARP replies
                 12/0800,          // IP
                 -);               // other
in0q0 -> hf0 :: HostEtherFilter(if0, DROP_OWN true, DROP_OTHER true) -> c0;
in0q1 -> hf0;
arpq0 :: ARPQuerier(if0) -> to0;
c0[0] -> ar0 :: ARPResponder(if0) -> to0;
c0[1] -> [1]arpq0;
c0[2] -> Paint(1) -> ip;
c0[3] -> other0 :: Discard;

// Interface 1.
in1q0 :: FromDevice($DEV1, QUEUE 0, N_QUEUES 2, FANOUT $FANOUT, BURST $BURST, SNIFFER $SNIFFER, PRIORITY $PRIORITY, METHOD $METHOD);
in1q1 :: FromDevice($DEV1, QUEUE 1, N_QUEUES 2, FANOUT $FANOUT, BURST $BURST, SNIFFER $SNIFFER, PRIORITY $PRIORITY, METHOD $METHOD);
to1 :: ToDevice($DEV1, BURST $BURST, METHOD $METHOD);
c1 :: Classifier(12/0806 20/0001,
                 12/0806 20/0002,
                 12/0800,
                 -);
in1q0 -> hf1 :: HostEtherFilter(if1, DROP_OWN true, DROP_OTHER true) -> c1;
in1q1 -> hf1;
arpq1 :: ARPQuerier(if1) -> to1;
c1[0] -> ar1 :: ARPResponder(if1) -> to1;
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

// Queue i of each interface on thread i.
StaticThreadSched(in0q0 0, in1q0 0,
                  in0q1 1, in1q1 1);
