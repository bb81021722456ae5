a :: Tee(3); Idle -> a; a[0] -> q :: Queue(10) -> u :: Unqueue -> d :: Discard;
a[1] -> [0]q; a[2] -> Print("x y", 20) -> Discard; // comment
/* block */ ip :: IPClassifier(tcp port 80, -); Idle -> ip; ip[0] -> Discard; ip[1] -> Discard;
