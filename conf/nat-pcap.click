// A NAPT gateway between a private network and the public side, on pcap
// files (raw IP, one file in and one out per side): Click's rewriter
// family as a home router uses it.
//
// Private hosts (any source on the private input) reach the public side
// as $PUBLIC, ports from $PORTS: TCP and UDP through IPRewriter, pings
// through ICMPPingRewriter; ICMP errors about translated flows (port
// unreachable, time exceeded...) are translated back by ICMPRewriter, in
// both directions. Fragments are reassembled first. Packets from the
// public side that belong to no mapping (unsolicited) are dropped.
//
//   paraclick conf/nat-pcap.click PRIV_IN=p.pcap PUB_IN=q.pcap \
//       PRIV_OUT=p-out.pcap PUB_OUT=q-out.pcap -h rw.table -h rw.mapping_failures
//
// With TIMING true the inputs are replayed with their own spacing, so
// flows time out as they would live (see UDP_TIMEOUT and friends).
// StaticThreadSched places the private side's source on thread 0 and the
// public side's on thread $PUBTHREAD (with -j 2 or more, replies are then
// handled on another thread than the requests that made their mappings).

define($PRIV_IN priv-in.pcap, $PUB_IN pub-in.pcap,
       $PRIV_OUT priv-out.pcap, $PUB_OUT pub-out.pcap,
       $PUBLIC 192.0.2.1, $PORTS 1024-65535#,
       $TIMING false, $PUBTHREAD 1,
       $TCP_TIMEOUT 86400, $TCP_DONE_TIMEOUT 240, $TCP_NODATA_TIMEOUT 300,
       $UDP_TIMEOUT 300, $CAPACITY 100000);

DriverManager(pause 2, wait 0.2s, stop);

// BURST 32: batches of 32 packets (FromDump's default, 1, is Click's
// one packet per run: Click's order of side effects, at twice the cost).
priv :: FromDump($PRIV_IN, STOP true, FORCE_IP true, TIMING $TIMING, BURST 32);
pub :: FromDump($PUB_IN, STOP true, FORCE_IP true, TIMING $TIMING, BURST 32);
StaticThreadSched(priv 0, pub $PUBTHREAD);

to_pub :: ToDump($PUB_OUT, ENCAP IP);
to_priv :: ToDump($PRIV_OUT, ENCAP IP);

rw :: IPRewriter(pattern $PUBLIC $PORTS - - 0 1, drop,
                 TCP_TIMEOUT $TCP_TIMEOUT, TCP_DONE_TIMEOUT $TCP_DONE_TIMEOUT,
                 TCP_NODATA_TIMEOUT $TCP_NODATA_TIMEOUT, UDP_TIMEOUT $UDP_TIMEOUT,
                 CAPACITY $CAPACITY);
ping :: ICMPPingRewriter(pattern $PUBLIC - - - 0 1, drop, TIMEOUT $UDP_TIMEOUT);
err_in :: ICMPRewriter(rw ping);    // errors from the public side
err_out :: ICMPRewriter(rw ping);   // errors from the private side

// Private side: check, reassemble, classify.
priv -> CheckIPHeader -> IPReassembler
  -> pc :: IPClassifier(tcp or udp, icmp type echo or icmp type echo-reply, icmp, -);
pc[0] -> [0]rw;
pc[1] -> [0]ping;
pc[2] -> err_out;
pc[3] -> Discard;

// Public side.
pub -> CheckIPHeader -> IPReassembler
  -> qc :: IPClassifier(tcp or udp, icmp type echo or icmp type echo-reply, icmp, -);
qc[0] -> [1]rw;
qc[1] -> [1]ping;
qc[2] -> err_in;
qc[3] -> Discard;

rw[0] -> to_pub;
rw[1] -> to_priv;
ping[0] -> to_pub;
ping[1] -> to_priv;
err_in[0] -> to_priv;
err_in[1] -> Discard;   // errors about no mapping: unsolicited
err_out[0] -> to_pub;
err_out[1] -> Discard;
