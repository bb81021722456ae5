// A packet crosses a queue: push path, Queue, pull path.
// With -j 2 and StaticThreadSched the two sides run on different threads.
define($N 1000000, $BURST 1, $TS false);

src :: InfiniteSource(LENGTH 64, LIMIT $N, BURST $BURST, STOP true, TIMESTAMP $TS)
  -> q :: Queue(1000)
  -> uq :: Unqueue
  -> c :: Counter
  -> Discard;
