//! Packets for paraclick: pooled buffers with headroom, Click's annotations,
//! batches, and typed header views (`wire`).
//!
//! A [`Packet`] is a handle to a buffer owned by the pool of the thread that
//! allocated it. Moving a packet from element to element moves one pointer.
//! Dropping it returns the buffer to its home pool: directly when dropped on
//! the home thread, in batches of [`pool::REMOTE_BATCH`] when dropped on
//! another thread (SMP Click §4.4). A packet may also hold an external
//! buffer lent by a [`pool::BufferOwner`] (an AF_XDP UMEM frame), which
//! goes back to its owner, in batches, when the packet is freed.

pub mod anno;
pub mod batch;
pub mod clock;
pub mod packet;
pub mod pool;
pub mod wire;

pub use anno::{Anno, PacketType, Timestamp};
pub use batch::Batch;
pub use packet::Packet;
