//! The pool's per-packet path, alone: allocates a burst of 32 packets,
//! writes 60 bytes into each and reads them back, frees them; 100 000
//! times. Run it under callgrind to count the instructions a packet's
//! buffer costs (`valgrind --tool=callgrind target/ci/examples/pool_loop`):
//! instruction counts are repeatable, unlike times.

use paraclick_packet::Packet;

fn main() {
    let mut sum = 0u64;
    let mut burst = Vec::with_capacity(32);
    for i in 0..100_000u32 {
        for j in 0..32u32 {
            let mut p = Packet::new(60).expect("the pool has room");
            p.data_mut()[0] = (i ^ j) as u8;
            burst.push(p);
        }
        for p in burst.drain(..) {
            sum += u64::from(p.data()[0]) + p.len() as u64;
        }
    }
    println!("{sum}");
}
