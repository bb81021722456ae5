// qos-bench.click -- the QoS configuration of SMP Click's Figure 16 as an
// administrator first writes it: one priority scheduler for all traffic.
// IPClassifier sorts packets by destination port into three priority
// queues; PrioSched serves them, strictly by priority, to one puller
// (Unqueue), after which medium-priority traffic takes the expensive path
// (WorkPackage standing in for VPN encryption). On several cores the one
// puller is the bottleneck; conf/replicated-qos.click is the paper's hand
// rewrite, and `paraclick parallelize -j 2 conf/qos-bench.click` finds it:
// the scheduler replicated per flow group.
//
//   paraclick conf/qos-bench.click -h out.count
//   paraclick bench --mlffr -j 2 conf/qos-bench.click N=1000000000000

define($N 200000, $W 10);

src :: FastUDPFlows(0, -1, 128, 00:00:c0:11:11:11, 1.0.0.2,
                    00:00:c0:ae:67:ef, 2.0.0.2, 64, 1000)
  -> cl :: IPClassifier(dst port < 20000, dst port < 45000, -);
cl[0] -> hi_in :: Counter -> hi :: Queue(512);
cl[1] -> med_in :: Counter -> med :: Queue(512);
cl[2] -> lo_in :: Counter -> lo :: Queue(512);
ps :: PrioSched;
hi -> [0]ps;
med -> [1]ps;
lo -> [2]ps;
ps -> uq :: Unqueue
   -> vpn :: IPClassifier(dst port >= 20000 and dst port < 45000, -);
vpn[0] -> WorkPackage($W) -> out :: Counter -> Discard;
vpn[1] -> out;

Script(label check, wait 2ms, goto check $(lt $(out.count) $N), stop);
