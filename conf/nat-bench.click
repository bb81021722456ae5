// nat-bench.click -- NAPT throughput with many concurrent flows.
//
// Two FastUDPFlows generators (private hosts 10.0.0.1 and 10.0.0.2, $FLOWS
// flows each, distinct UDP port pairs, flows kept for the whole run) feed
// one IPRewriter whose pattern maps every flow to 192.0.2.1 and a source
// port from 1024-65535; the translated packets are counted and dropped.
// The first packet of each flow creates its mapping; the rest are lookups
// in the shared flow table. `paraclick bench --suite nat` runs it with
// both generators on one thread and on two threads ($T1 1).
//
//   paraclick -j 2 conf/nat-bench.click FLOWS=500000 N=5000000 T1=1 -h c.count

define($N 1000000, $FLOWS 1000, $T1 0, $CAPACITY 4000000);

DriverManager(pause, pause);

src0 :: FastUDPFlows(0, $N, 60, 02:00:00:00:00:01, 10.0.0.1, 02:00:00:00:00:02, 198.51.100.7,
                     $FLOWS, 1000000000, STOP true);
src1 :: FastUDPFlows(0, $N, 60, 02:00:00:00:00:03, 10.0.0.2, 02:00:00:00:00:02, 198.51.100.7,
                     $FLOWS, 1000000000, STOP true);
StaticThreadSched(src0 0, src1 $T1);

rw :: IPRewriter(pattern 192.0.2.1 1024-65535 - - 0 1, CAPACITY $CAPACITY);
src0 -> Strip(14) -> [0]rw;
src1 -> Strip(14) -> [0]rw;
rw[0] -> c :: Counter -> Discard;
rw[1] -> Discard;
