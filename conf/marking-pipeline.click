// A three-stage DSCP marking pipeline, written on 2026-11-27 after the
// performance model's changes of that day, to validate the model on a
// configuration it was never tuned on: three tasks (the generator and two
// Unqueues) and two queues, no StaticThreadSched, so at -j 2 the model
// must also predict where the adaptive scheduler puts them; both queues'
// consumers read the packets' headers.
//
//   paraclick model --validate conf/marking-pipeline.click
//   paraclick -j 2 conf/marking-pipeline.click -h ef.count -h be.count
//
// On a loaded machine -j 2 may deliver fewer than $N packets; none is
// lost. The source waits while q1 is full, but u1 is an Unqueue: as in
// Click, it pushes into q2 whether q2 has room or not, and a full Queue
// drops what it cannot hold, counted (q2.drops, reason "full"). When
// u2's thread gets little CPU, q2 fills and drops; and packets still in
// q2 when the run stops (10 ms after the source's last) stay there. The
// counts always add up, src.count = out.count + q2.drops + q2.length
// (+ the same for q1):
//
//   paraclick -j 2 conf/marking-pipeline.click -h src.count -h out.count \
//       -h q1.drops -h q2.drops -h q1.length -h q2.length --report drops

define($N 1000000, $FLOWS 1024, $LEN 98);

DriverManager(pause, wait 10ms);

src :: FastUDPFlows(0, $N, $LEN, 02:00:00:00:00:01, 10.0.0.1,
                    02:00:00:00:00:02, 198.51.100.7, $FLOWS, 1000, STOP true);

// Stage 1: header checks.
src -> Strip(14) -> CheckIPHeader -> q1 :: Queue(1024);

// Stage 2: TTL, classification by destination port, marking.
q1 -> u1 :: Unqueue
   -> DecIPTTL
   -> cl :: IPClassifier(udp dst port < 16384, -);
cl[0] -> SetIPDSCP(46) -> ef :: Counter -> q2 :: Queue(1024);
cl[1] -> SetIPDSCP(0) -> be :: Counter -> q2;

// Stage 3: checksum, back to Ethernet, out.
q2 -> u2 :: Unqueue
   -> SetIPChecksum
   -> EtherEncap(0x0800, 02:00:00:00:00:02, 02:00:00:00:00:09)
   -> out :: Counter
   -> Discard;
