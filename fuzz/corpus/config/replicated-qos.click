// replicated-qos.click -- SMP Click's replicated QoS (Figure 16): instead of
// one priority scheduler whose puller becomes the bottleneck, HashSwitch
// splits the traffic by flow into replicas, each with its own three
// priority queues, PrioSched, puller (Unqueue, Click's PullToPush) and the
// expensive processing of medium-priority traffic (WorkPackage standing in
// for VPN encryption). Each replica's puller can run on its own thread;
// priority holds within every replica.
//
//   paraclick -j 2 conf/replicated-qos.click --report threads \
//       -h r0/hi.drops -h r0/lo.drops -h r0/out.count -h r1/out.count

define($N 200000, $W 10);

elementclass QoSReplica { $w |
  input -> cl :: IPClassifier(dst port < 20000, dst port < 45000, -);
  cl[0] -> hi_in :: Counter -> hi :: Queue(256);
  cl[1] -> med_in :: Counter -> med :: Queue(256);
  cl[2] -> lo_in :: Counter -> lo :: Queue(256);
  ps :: PrioSched;
  hi -> [0]ps;
  med -> [1]ps;
  lo -> [2]ps;
  ps -> uq :: Unqueue
     -> vpn :: IPClassifier(dst port >= 20000 and dst port < 45000, -);
  vpn[0] -> WorkPackage($w) -> out :: Counter -> output;
  vpn[1] -> out;
}

src :: FastUDPFlows(0, -1, 128, 00:00:c0:11:11:11, 1.0.0.2,
                    00:00:c0:ae:67:ef, 2.0.0.2, 64, 1000)
  -> hs :: HashSwitch(34, 4);
hs[0] -> r0 :: QoSReplica($W) -> Discard;
hs[1] -> r1 :: QoSReplica($W) -> Discard;

Script(label check, wait 2ms,
       goto check $(lt $(add $(r0/out.count) $(r1/out.count)) $N),
       stop);
