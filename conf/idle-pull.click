// idle-pull.click -- a pull path with nothing to pull, for measuring what
// an idle router costs (scripts/idle-cpu.sh).
//
// The Unqueue and the pull Discard find their queues empty, sleep on the
// queues' empty notifiers, and are not run again until a packet arrives;
// with all its tasks asleep a worker parks. Runs for $TIME, then stops.
//
//   /usr/bin/time paraclick -j 2 conf/idle-pull.click TIME=3
//   paraclick conf/idle-pull.click TIME=1 -h uq.count

define($TIME 3);

Idle -> q0 :: Queue -> uq :: Unqueue -> q1 :: Queue -> d :: Discard;
Script(wait $TIME, stop);
