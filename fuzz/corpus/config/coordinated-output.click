// coordinated-output.click -- coordinated output processing (PRESTO 2010,
// "Forwarding path architectures for multicore software routers", section
// 6.2): the output tasks of two threads share one token bucket, which
// limits the aggregate rate through one interface. Each task takes the
// bucket's lock to acquire tokens and sends its packets after releasing it.
//
// Two strategies, one bucket each:
//   STRATEGY one -- one token per lock acquisition: every packet takes the
//                   lock once ("1-token").
//   STRATEGY min -- one acquisition grants min(tokens, packets waiting)
//                   ("min(N,Q)"): far fewer acquisitions for the same packets.
// Both buckets: RATE 100000 packets/s, depth (BURST) 100.
//
//   paraclick -j 2 conf/coordinated-output.click \
//       -h one.acquisitions -h one.granted -h one.contended \
//       -h min.acquisitions -h min.granted -h min.contended

one :: SharedTokenBucket(one_token, 100000, 100, STRATEGY one);
min :: SharedTokenBucket(min_n_q, 100000, 100, STRATEGY min);

// 1-token: two output tasks (threads 0 and 1) share bucket `one`.
a0 :: InfiniteSource(LENGTH 64, BURST 32) -> Queue(1000)
  -> ua0 :: CoordinatedUnqueue(one, 32) -> ca0 :: Counter -> Discard;
a1 :: InfiniteSource(LENGTH 64, BURST 32) -> Queue(1000)
  -> ua1 :: CoordinatedUnqueue(one, 32) -> ca1 :: Counter -> Discard;

// min(N,Q): the same, sharing bucket `min`.
b0 :: InfiniteSource(LENGTH 64, BURST 32) -> Queue(1000)
  -> ub0 :: CoordinatedUnqueue(min, 32) -> cb0 :: Counter -> Discard;
b1 :: InfiniteSource(LENGTH 64, BURST 32) -> Queue(1000)
  -> ub1 :: CoordinatedUnqueue(min, 32) -> cb1 :: Counter -> Discard;

StaticThreadSched(a0 0, ua0 0, b0 0, ub0 0, a1 1, ua1 1, b1 1, ub1 1);

Script(wait 1s, stop);
