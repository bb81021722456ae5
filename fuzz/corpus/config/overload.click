elementclass A { input -> output } elementclass A { $a, $b | input -> Null -> output }
x :: A(1, 2); y :: A; Idle -> x -> y -> Discard; Idle -> Script(wait 1, write x/Null@1.count 0);
