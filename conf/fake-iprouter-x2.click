// fake-iprouter-x2.click -- two independent copies of the benchmark IP
// router (conf/fake-iprouter.click), for measuring how paraclick scales
// when each thread runs its own router: with -j 2, StaticThreadSched puts
// copy a on thread 0 and copy b on thread 1.
//
//   paraclick -j 2 conf/fake-iprouter-x2.click -h a/out0.count -h b/out0.count

define($N 1000000, $BURST 1);

AddressInfo(
  eth0  1.0.0.1/8  00:00:c0:ae:67:ef,
  eth1  2.0.0.1/8  00:00:c0:4f:71:ef
);

// Stop when all four sources have sent $N packets.
DriverManager(pause, pause, pause, pause);

elementclass OutputPath { $paint, $addr, $ether, $next_ether |
  input
    -> DropBroadcasts
    -> cp :: PaintTee($paint)
    -> gio :: IPGWOptions($addr)
    -> FixIPSrc($addr)
    -> dt :: DecIPTTL
    -> fr :: IPFragmenter(1500)
    -> EtherEncap(0x0800, $ether, $next_ether)
    -> [0]output;
  cp[1] -> ICMPError($addr, redirect, host) -> [1]output;
  gio[1] -> ICMPError($addr, parameterproblem) -> [1]output;
  dt[1] -> ICMPError($addr, timeexceeded) -> [1]output;
  fr[1] -> ICMPError($addr, unreachable, needfrag) -> [1]output;
}

elementclass FakeRouter { $n, $burst |
  src0 :: InfiniteSource(DATA \<0000c0ae 67ef0000 c0111111 08004500 002e0000 00004011
    77bc0100 00020200 000204d2 162e001a 99650001 02030405 06070809 0a0b0c0d 0e0f1011>,
    LIMIT $n, BURST $burst, STOP true);
  src1 :: InfiniteSource(DATA \<0000c04f 71ef0000 c0222222 08004500 002e0000 00004011
    77bc0200 00020100 0002162e 04d2001a 99650001 02030405 06070809 0a0b0c0d 0e0f1011>,
    LIMIT $n, BURST $burst, STOP true);
  q0 :: Queue(200) -> out0 :: Counter -> d0 :: Discard(BURST 32);
  q1 :: Queue(200) -> out1 :: Counter -> d1 :: Discard(BURST 32);
  c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
  c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
  src0 -> c0;
  src1 -> c1;
  c0[0] -> ARPResponder(eth0) -> q0;
  c1[0] -> ARPResponder(eth1) -> q1;
  c0[1] -> arp_replies :: Discard;
  c1[1] -> arp_replies;
  c0[3] -> other :: Discard;
  c1[3] -> other;
  rt :: StaticIPLookup(1.0.0.1/32 0, 1.255.255.255/32 0, 1.0.0.0/32 0,
                       2.0.0.1/32 0, 2.255.255.255/32 0, 2.0.0.0/32 0,
                       1.0.0.0/8 1, 2.0.0.0/8 2);
  ip :: Strip(14) -> CheckIPHeader(INTERFACES 1.0.0.1/8 2.0.0.1/8) -> GetIPAddress(16) -> rt;
  c0[2] -> Paint(1) -> ip;
  c1[2] -> Paint(2) -> ip;
  rt[0] -> tohost :: Discard;
  rt[1] -> p0 :: OutputPath(1, eth0, eth0, 00:00:c0:11:11:11) -> q0;
  rt[2] -> p1 :: OutputPath(2, eth1, eth1, 00:00:c0:22:22:22) -> q1;
  p0[1] -> rt;
  p1[1] -> rt;
}

a :: FakeRouter($N, $BURST);
b :: FakeRouter($N, $BURST);

StaticThreadSched(a/src0 0, a/src1 0, a/d0 0, a/d1 0,
                  b/src0 1, b/src1 1, b/d0 1, b/d1 1);
