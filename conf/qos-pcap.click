// qos-pcap.click -- QoS on a trace: packets are classified by DSCP into
// three queues (expedited forwarding, assured forwarding AF11, the rest),
// served by strict priority, and written out. A pcap-in, pcap-out
// configuration for tests (paraclick parallelize keeps every flow's
// packets and their order, tests/parallelize.rs) and for trying the QoS
// elements without devices:
//
//   paraclick conf/qos-pcap.click IN=trace.pcap OUT=out.pcap
//
// Queues are large and FromDump waits when one is full (its full
// notifier), so nothing is dropped: the output holds every IP packet,
// each flow in its original order, classes interleaved by priority.

define($IN in.pcap, $OUT out.pcap);

DriverManager(pause, wait 0.2s, stop);

// BURST 32: batches of 32 packets (FromDump's default, 1, is Click's
// one packet per run: Click's order of side effects, at twice the cost).
src :: FromDump($IN, STOP true, BURST 32);

cl :: IPClassifier(ip dscp 46, ip dscp 10, -);
src -> Strip(14) -> CheckIPHeader -> cl;

ef :: Queue(10000);
af :: Queue(10000);
be :: Queue(10000);
cl[0] -> ef_in :: Counter -> ef;
cl[1] -> af_in :: Counter -> af;
cl[2] -> be_in :: Counter -> be;

ps :: PrioSched;
ef -> [0]ps;
af -> [1]ps;
be -> [2]ps;

ps -> uq :: Unqueue
   -> Unstrip(14)
   -> out :: Counter
   -> ToDump($OUT);
