// qos-veth.click -- an IP router between two interfaces whose way out of
// interface 1 is shaped and shared by DiffServ class (the SMP Click QoS
// workload on real interfaces).
//
// Packets routed out of $DEV1 are classified by their DSCP and queued per
// class; the classes are served by strict priority and by weights, and
// the total is shaped to $RATE (IP bytes: headers and payload, no
// Ethernet header) before ARP and the device:
//
//   EF   (dscp 46) -> ef  :: Queue --[0] prio :: PrioSched   (strict first)
//   AF31 (dscp 26) -> af  :: Queue --[0] wfq  :: StrideSched($AF_TICKETS, $BE_TICKETS)
//   CS1  (dscp 8)  -> cs1 :: Queue --[0] drr  :: DRRSched   (equal bytes)
//   rest           -> be  :: Queue --[1] drr
//                                    drr -> [1] wfq -> [1] prio
//   prio -> BandwidthRatedUnqueue($RATE) -> ARPQuerier -> Queue -> ToDevice
//
// So EF gets what it sends (up to $RATE); what is left goes 3:1 (default
// tickets) to AF31 and to the two lower classes, which share their part
// equally. The way out of $DEV0 is not shaped.
//
// Run it in a network namespace whose interfaces have no IP addresses
// (see conf/iprouter-veth.click and tests/netns/qos.sh), as root:
//
//   paraclick conf/qos-veth.click DEV0=r0 DEV1=r1 RATE=30Mbps \
//       -h shaper.count -h out_rate.bit_rate
//
// Interfaces (defaults):
//   $DEV0 r0  $ADDR0 10.0.1.1/24  $MAC0 02:00:00:00:01:01
//   $DEV1 r1  $ADDR1 10.0.2.1/24  $MAC1 02:00:00:00:02:01

define($DEV0 r0, $ADDR0 10.0.1.1, $PLEN0 24, $NET0 10.0.1.0/24, $BCAST0 10.0.1.255,
       $MAC0 02:00:00:00:01:01,
       $DEV1 r1, $ADDR1 10.0.2.1, $PLEN1 24, $NET1 10.0.2.0/24, $BCAST1 10.0.2.255,
       $MAC1 02:00:00:00:02:01,
       $RATE 30Mbps, $SHAPE_BURST 50ms, $AF_TICKETS 3, $BE_TICKETS 1,
       $QLEN 200, $EF_QLEN 1000, $SNIFFER false);

AddressInfo(if0 $ADDR0/$PLEN0 $MAC0,
            if1 $ADDR1/$PLEN1 $MAC1);

rt :: RadixIPLookup($ADDR0/32 0, $BCAST0/32 0,
                    $ADDR1/32 0, $BCAST1/32 0,
                    255.255.255.255/32 0, 0.0.0.0/32 0,
                    $NET0 1,
                    $NET1 2);

ip :: Strip(14)
  -> CheckIPHeader(INTERFACES $ADDR0/$PLEN0 $ADDR1/$PLEN1)
  -> GetIPAddress(16)
  -> rt;

// Packets for the router: answer pings, discard the rest.
rt[0] -> self :: IPClassifier(icmp type echo, -);
self[0] -> ICMPPingResponder -> rt;
self[1] -> Discard;

// Interface 0.
in0 :: FromDevice($DEV0, SNIFFER $SNIFFER);
out0 :: Queue(1000) -> ToDevice($DEV0);
c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
in0 -> HostEtherFilter(if0, DROP_OWN true, DROP_OTHER true) -> c0;
arpq0 :: ARPQuerier(if0) -> out0;
c0[0] -> ARPResponder(if0) -> out0;
c0[1] -> [1]arpq0;
c0[2] -> Paint(1) -> ip;
c0[3] -> Discard;

// Interface 1.
in1 :: FromDevice($DEV1, SNIFFER $SNIFFER);
out1 :: Queue(1000) -> ToDevice($DEV1);
c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
in1 -> HostEtherFilter(if1, DROP_OWN true, DROP_OTHER true) -> c1;
arpq1 :: ARPQuerier(if1) -> out1;
c1[0] -> ARPResponder(if1) -> out1;
c1[1] -> [1]arpq1;
c1[2] -> Paint(2) -> ip;
c1[3] -> Discard;

// Out of interface 0: plain forwarding.
rt[1] -> dt0 :: DecIPTTL -> [0]arpq0;
dt0[1] -> ICMPError(if0, timeexceeded) -> rt;

// Out of interface 1: classify, queue, schedule, shape.
rt[2] -> dt1 :: DecIPTTL
      -> cls :: IPClassifier(ip dscp 46, ip dscp 26, ip dscp 8, -);
dt1[1] -> ICMPError(if1, timeexceeded) -> rt;

// EF is served first and sends below $RATE: its queue only absorbs the
// router's own stalls, so it is deeper.
cls[0] -> ef :: Queue($EF_QLEN);
cls[1] -> af :: Queue($QLEN);
cls[2] -> cs1 :: Queue($QLEN);
cls[3] -> be :: Queue($QLEN);

drr :: DRRSched(QUANTUM 1500);
cs1 -> [0]drr;
be -> [1]drr;

wfq :: StrideSched($AF_TICKETS, $BE_TICKETS);
af -> [0]wfq;
drr -> [1]wfq;

prio :: PrioSched;
ef -> [0]prio;
wfq -> [1]prio;

prio -> shaper :: BandwidthRatedUnqueue($RATE, BURST_DURATION $SHAPE_BURST)
     -> out_rate :: AverageCounter
     -> [0]arpq1;
