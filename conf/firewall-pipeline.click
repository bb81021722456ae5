// conf/firewall-bench.click's firewall as a two-stage pipeline: both
// generators and the header checks on thread 0, a queue between the
// threads, and the filter, the classifier and the counters (which read
// the packets' headers: data lines written on the other core) on
// thread 1. Written after the performance model (issue 15), to validate
// its crossing-queue terms on a consumer that reads packet data:
//
//   paraclick model --validate conf/firewall-pipeline.click
//   paraclick -j 2 conf/firewall-pipeline.click -h low.count -h denied.count

define($N 1000000, $FLOWS 256, $LEN 98);

DriverManager(pause, pause, wait 10ms);

src0 :: FastUDPFlows(0, $N, $LEN, 02:00:00:00:00:01, 10.0.0.1,
                     02:00:00:00:00:02, 198.51.100.7, $FLOWS, 1000, STOP true);
src1 :: FastUDPFlows(0, $N, $LEN, 02:00:00:00:00:03, 10.0.1.1,
                     02:00:00:00:00:02, 198.51.100.9, $FLOWS, 1000, STOP true);

q :: Queue(1024);
src0 -> Strip(14) -> CheckIPHeader -> q;
src1 -> Strip(14) -> CheckIPHeader -> q;

q -> uq :: Unqueue
  -> fw :: IPFilter(1 src host 10.0.0.66,
                    1 dst port < 1024,
                    allow src net 10.0.0.0/24 && dst port >= 16384,
                    allow src net 10.0.1.0/24 && src port >= 16384,
                    1 all);

fw[0] -> cl :: IPClassifier(dst port < 32768, dst port < 49152, -);
cl[0] -> low :: Counter -> Discard;
cl[1] -> mid :: Counter -> Discard;
cl[2] -> high :: Counter -> Discard;
fw[1] -> denied :: Counter -> Discard;

StaticThreadSched(src0 0, src1 0, uq 1);
