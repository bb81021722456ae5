// The simplest router: a source as fast as it is scheduled, and a sink
// (Click's InfiniteSource -> Discard; the Discard counts what it receives).
// paraclick conf/infinite-discard.click -h c.count
define($N 1000000, $BURST 1, $TS false);

InfiniteSource(LENGTH 64, LIMIT $N, BURST $BURST, STOP true, TIMESTAMP $TS)
  -> c :: Discard;
