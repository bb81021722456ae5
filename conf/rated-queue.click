// A rate-controlled source through a queue to a sink: the configuration of
// the RFC 2544-style search of `paraclick bench --mlffr` (each trial sets
// src.rate) and of its packet-size sweep (define LENGTH).
//
//   paraclick bench --mlffr conf/rated-queue.click
//   paraclick bench --sweep rates conf/rated-queue.click --out rates
//   paraclick bench --sweep sizes conf/rated-queue.click --out sizes
define($RATE 1000000, $LENGTH 64, $N -1, $W 0);

src :: RatedSource(LENGTH $LENGTH, RATE $RATE, LIMIT $N)
  -> q :: Queue(1000)
  -> uq :: Unqueue
  -> WorkPackage($W)
  -> c :: Counter
  -> Discard;
