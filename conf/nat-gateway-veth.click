// nat-gateway-veth.click -- a NAPT gateway (a home router) on two real
// interfaces.
//
// Private hosts on $DEV0 ($NET0) reach the public side on $DEV1 as the
// gateway's public address $ADDR1: TCP and UDP through IPRewriter
// (source ports from $PORTS), pings through ICMPPingRewriter, and ICMP
// errors about translated flows (port unreachable, time exceeded) mapped
// back by ICMPRewriter in both directions. Real ARP on both sides
// (ARPResponder for the gateway's addresses, ARPQuerier for next hops);
// the gateway answers pings to its own addresses. Nothing from the
// public side reaches the private network without a mapping: unsolicited
// packets are dropped (counted in `unsolicited.count` and `rw.drops`).
//
// Run it as root in a network namespace whose interfaces $DEV0 and $DEV1
// have no IP addresses (see `paraclick doc FromDevice`):
//
//   paraclick conf/nat-gateway-veth.click DEV0=r0 DEV1=r1
//   paraclick -j 2 conf/nat-gateway-veth.click T1=1   // public side on thread 1
//
// Interfaces (defaults):
//   $DEV0 r0  $ADDR0 10.0.1.1/24  $MAC0 02:00:00:00:01:01  (private)
//   $DEV1 r1  $ADDR1 10.0.2.1/24  $MAC1 02:00:00:00:02:01  (public)

define($DEV0 r0, $ADDR0 10.0.1.1, $PLEN0 24, $MAC0 02:00:00:00:01:01,
       $DEV1 r1, $ADDR1 10.0.2.1, $PLEN1 24, $MAC1 02:00:00:00:02:01,
       $PORTS 1024-65535, $BURST 32, $SNIFFER false, $T1 0,
       $TCP_DONE_TIMEOUT 30, $UDP_TIMEOUT 120, $CAPACITY 65536);

AddressInfo(if0 $ADDR0/$PLEN0 $MAC0,
            if1 $ADDR1/$PLEN1 $MAC1);

rw :: IPRewriter(pattern $ADDR1 $PORTS - - 0 1, drop,
                 TCP_DONE_TIMEOUT $TCP_DONE_TIMEOUT, UDP_TIMEOUT $UDP_TIMEOUT,
                 CAPACITY $CAPACITY);
ping :: ICMPPingRewriter(pattern $ADDR1 - - - 0 1, drop, TIMEOUT $UDP_TIMEOUT);
err_in :: ICMPRewriter(rw ping);    // errors arriving from the public side
err_out :: ICMPRewriter(rw ping);   // errors from private hosts

// Interface 0: private.
in0 :: FromDevice($DEV0, BURST $BURST, SNIFFER $SNIFFER);
out0 :: Queue(1000) -> to0 :: ToDevice($DEV0, BURST $BURST);
c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
in0 -> HostEtherFilter(if0, DROP_OWN true, DROP_OTHER true) -> c0;
arpq0 :: ARPQuerier(if0) -> out0;
c0[0] -> ARPResponder(if0) -> out0;
c0[1] -> [1]arpq0;
c0[3] -> Discard;

// Interface 1: public.
in1 :: FromDevice($DEV1, BURST $BURST, SNIFFER $SNIFFER);
out1 :: Queue(1000) -> to1 :: ToDevice($DEV1, BURST $BURST);
c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
in1 -> HostEtherFilter(if1, DROP_OWN true, DROP_OTHER true) -> c1;
arpq1 :: ARPQuerier(if1) -> out1;
c1[0] -> ARPResponder(if1) -> out1;
c1[1] -> [1]arpq1;
c1[3] -> Discard;

StaticThreadSched(in0 0, to0 0, in1 $T1, to1 $T1);

// From the private side: pings to the gateway are answered; everything
// else leaves through the rewriters (the TTL decremented on the way).
c0[2] -> Strip(14)
  -> CheckIPHeader(INTERFACES $ADDR0/$PLEN0)
  -> pc :: IPClassifier(dst host $ADDR0 and icmp type echo,
                        dst host $ADDR0,
                        tcp or udp,
                        icmp type echo or icmp type echo-reply,
                        icmp,
                        -);
pc[0] -> ICMPPingResponder -> GetIPAddress(16) -> [0]arpq0;
pc[1] -> Discard;
pc[2] -> dt0 :: DecIPTTL -> [0]rw;
pc[3] -> dt1 :: DecIPTTL -> [0]ping;
pc[4] -> dt2 :: DecIPTTL -> err_out;
pc[5] -> Discard;
dt0[1] -> Discard;
dt1[1] -> Discard;
dt2[1] -> Discard;

// From the public side: only what is addressed to the gateway's public
// address can match a mapping; the rest is unsolicited.
c1[2] -> Strip(14)
  -> CheckIPHeader(INTERFACES $ADDR1/$PLEN1)
  -> qc :: IPClassifier(dst host $ADDR1 and icmp type echo,
                        dst host $ADDR1 and (tcp or udp),
                        dst host $ADDR1 and icmp type echo-reply,
                        dst host $ADDR1 and icmp,
                        -);
qc[0] -> ICMPPingResponder -> GetIPAddress(16) -> [0]arpq1;
qc[1] -> [1]rw;
qc[2] -> [1]ping;
qc[3] -> err_in;
qc[4] -> unsolicited :: Counter -> Discard;

rw[0] -> [0]arpq1;
rw[1] -> [0]arpq0;
ping[0] -> [0]arpq1;
ping[1] -> [0]arpq0;
err_in[0] -> [0]arpq0;
err_in[1] -> Discard;
err_out[0] -> [0]arpq1;
err_out[1] -> Discard;
