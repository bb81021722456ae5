// idle-script.click -- idle-pull.click with a Script that polls a handler
// every 2 ms, as the bench configurations' stop checks do (scripts/idle-cpu.sh
// 3 2 conf/idle-script.click).
//
// The worker that runs the Script's timer must still nap between its
// firings: a timer firing is not traffic, and before 2026-11-27 it kept that
// worker from ever being idle long enough to nap (it spent the run in
// yield_now, most of a CPU in system time).
//
//   paraclick -j 2 conf/idle-script.click TIME=3 -h uq.count

define($TIME 3);

Idle -> q0 :: Queue -> uq :: Unqueue -> q1 :: Queue -> d :: Discard;
Script(wait $TIME, stop);
Script(label check, wait 2ms, goto check $(eq $(uq.count) 0));
