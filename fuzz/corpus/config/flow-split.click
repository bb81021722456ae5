// flow-split.click -- SMP Click's flow-split rewrite: an expensive
// per-packet element (WorkPackage, standing in for IPsec) replicated, with
// HashSwitch on the UDP ports sending each flow to one replica, each
// replica behind its own Queue and Unqueue so a thread can own it.
//
//   paraclick conf/flow-split.click              # one thread
//   paraclick -j 2 conf/flow-split.click         # replicas on two threads
//
// The run ends when the replicas have processed $N packets; the packet
// pool's bound holds the source back (no drops).

define($N 200000, $W 20, $LEN 256);

src :: FastUDPFlows(0, -1, $LEN, 00:00:c0:11:11:11, 1.0.0.2,
                    00:00:c0:ae:67:ef, 2.0.0.2, 64, 100000)
  -> hs :: HashSwitch(34, 4);
hs[0] -> q0 :: Queue(1000000) -> u0 :: Unqueue -> w0 :: WorkPackage($W) -> c0 :: Counter -> Discard;
hs[1] -> q1 :: Queue(1000000) -> u1 :: Unqueue -> w1 :: WorkPackage($W) -> c1 :: Counter -> Discard;

Script(label check, wait 2ms,
       goto check $(lt $(add $(c0.count) $(c1.count)) $N),
       stop);
