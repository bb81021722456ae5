define($n 3, $who 10.0.0.1);
elementclass Two { $x | input -> Paint($x) -> [1]output; input[1] -> [0]output }
require(package paraclick);
src :: InfiniteSource(LIMIT $n, BURST 1) -> t :: Two(7);
t[0] -> c :: Counter -> Discard; t[1] -> Discard;
s2 :: InfiniteSource -> [1]t;
