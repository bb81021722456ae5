// A stateless firewall, as a benchmark: two generators of UDP flows with
// pseudo-random ports feed an IPFilter of address and port rules; what it
// passes is split by destination port into three counted classes, what it
// denies goes to its second output and is counted there. Written after the performance
// model (issue 15) to validate the model on a configuration it was never
// tuned on: `paraclick model --validate conf/firewall-bench.click`.
//
//   paraclick conf/firewall-bench.click            (2 x 1M packets)
//   paraclick -j 2 conf/firewall-bench.click N=5000000

define($N 1000000, $FLOWS 256, $LEN 98);

DriverManager(pause, pause);

src0 :: FastUDPFlows(0, $N, $LEN, 02:00:00:00:00:01, 10.0.0.1,
                     02:00:00:00:00:02, 198.51.100.7, $FLOWS, 1000, STOP true);
src1 :: FastUDPFlows(0, $N, $LEN, 02:00:00:00:00:03, 10.0.1.1,
                     02:00:00:00:00:02, 198.51.100.9, $FLOWS, 1000, STOP true);

fw :: IPFilter(1 src host 10.0.0.66,
               1 dst port < 1024,
               allow src net 10.0.0.0/24 && dst port >= 16384,
               allow src net 10.0.1.0/24 && src port >= 16384,
               1 all);

src0 -> Strip(14) -> CheckIPHeader -> fw;
src1 -> Strip(14) -> CheckIPHeader -> fw;

fw[0] -> cl :: IPClassifier(dst port < 32768, dst port < 49152, -);
cl[0] -> low :: Counter -> Discard;
cl[1] -> mid :: Counter -> Discard;
cl[2] -> high :: Counter -> Discard;
fw[1] -> denied :: Counter -> Discard;
