//! Batches: the unit that moves along a connection.

use crate::Packet;
use thin_vec::ThinVec;

/// The storage of a batch: one pointer wide, so a batch moves between
/// elements in a register.
pub type BatchVec = ThinVec<Packet>;

/// Capacity of a fresh batch vector.
pub const BATCH_CAPACITY: usize = 64;
pub(crate) const MAX_RECYCLED: usize = 256;

/// A batch of packets. Batches are moved, never copied; their storage is
/// recycled through a per-thread list, so making and dropping batches on the
/// packet path does not allocate.
pub struct Batch {
    v: BatchVec,
}

impl Batch {
    /// An empty batch.
    #[inline]
    pub fn new() -> Batch {
        let v = crate::pool::take_vec().unwrap_or_else(|| ThinVec::with_capacity(BATCH_CAPACITY));
        Batch { v }
    }

    /// A batch of up to `n` new packets of `len` bytes with `headroom`
    /// bytes in front, allocated with one visit to the thread's pool (fewer
    /// packets if the pool runs out). As with [`Packet::new`], the contents
    /// are whatever the reused buffers held: write them before use.
    #[inline]
    pub fn alloc(n: usize, headroom: usize, len: usize) -> Batch {
        if headroom
            .checked_add(len)
            .is_some_and(|n| n <= crate::pool::BUFFER_SIZE)
        {
            return Batch {
                v: crate::pool::alloc_batch(n, headroom, len),
            };
        }
        (0..n)
            .map_while(|_| Packet::make(headroom, len, 0))
            .collect()
    }

    /// A batch of up to `n` new packets, each a copy of `data` with
    /// `headroom` bytes in front, timestamped `ts`, its other annotations
    /// and header offsets fresh: [`Batch::alloc`] and the copies in one
    /// pass (a source's batch). Fewer packets if the pool runs out.
    #[inline]
    pub fn alloc_copies(n: usize, headroom: usize, data: &[u8], ts: crate::Timestamp) -> Batch {
        if headroom
            .checked_add(data.len())
            .is_some_and(|n| n <= crate::pool::BUFFER_SIZE)
        {
            return Batch {
                v: crate::pool::alloc_batch_copies(n, headroom, data, ts),
            };
        }
        (0..n)
            .map_while(|_| {
                let mut p = Packet::make(headroom, data.len(), 0)?;
                p.data_mut().copy_from_slice(data);
                p.set_timestamp(ts);
                Some(p)
            })
            .collect()
    }

    /// A batch holding one packet.
    #[inline]
    pub fn one(p: Packet) -> Batch {
        let mut b = Batch::new();
        b.v.push(p);
        b
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.v.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    #[inline]
    pub fn push(&mut self, p: Packet) {
        self.v.push(p);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        self.v.pop()
    }

    #[inline]
    pub fn iter(&self) -> std::slice::Iter<'_, Packet> {
        self.v.iter()
    }

    #[inline]
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Packet> {
        self.v.iter_mut()
    }

    #[inline]
    pub fn as_slice(&self) -> &[Packet] {
        &self.v
    }

    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [Packet] {
        &mut self.v
    }

    /// Removes and yields every packet, keeping the storage.
    #[inline]
    pub fn drain(&mut self) -> thin_vec::Drain<'_, Packet> {
        self.v.drain(..)
    }

    /// Keeps the packets for which `f` returns true, in order.
    #[inline]
    pub fn retain_mut(&mut self, f: impl FnMut(&mut Packet) -> bool) {
        self.v.retain_mut(f)
    }

    /// Moves all packets of `other` to the end of `self`.
    #[inline]
    pub fn append(&mut self, other: &mut Batch) {
        self.v.append(&mut other.v)
    }

    /// Splits off the packets from index `at` on.
    pub fn split_off(&mut self, at: usize) -> Batch {
        let mut b = Batch::new();
        b.v.extend(self.v.drain(at.min(self.v.len())..));
        b
    }

    /// Direct access to the vector, for batch adapters that compact in place.
    #[inline]
    pub fn vec_mut(&mut self) -> &mut BatchVec {
        &mut self.v
    }

    /// Total bytes of the packets in the batch.
    pub fn bytes(&self) -> usize {
        self.v.iter().map(|p| p.len()).sum()
    }
}

impl Default for Batch {
    fn default() -> Self {
        Batch::new()
    }
}

impl Drop for Batch {
    #[inline]
    fn drop(&mut self) {
        let cap = self.v.capacity();
        if cap == 0 {
            return;
        }
        let keep = cap <= 4 * BATCH_CAPACITY;
        // Whatever the pool could not take is dropped here, packets first.
        drop(crate::pool::release_batch(
            std::mem::take(&mut self.v),
            keep,
        ));
    }
}

impl From<Vec<Packet>> for Batch {
    fn from(v: Vec<Packet>) -> Batch {
        let mut b = Batch::new();
        b.v.extend(v);
        b
    }
}

impl FromIterator<Packet> for Batch {
    fn from_iter<I: IntoIterator<Item = Packet>>(iter: I) -> Batch {
        let mut b = Batch::new();
        b.v.extend(iter);
        b
    }
}

impl Extend<Packet> for Batch {
    fn extend<I: IntoIterator<Item = Packet>>(&mut self, iter: I) {
        self.v.extend(iter)
    }
}

impl IntoIterator for Batch {
    type Item = Packet;
    type IntoIter = thin_vec::IntoIter<Packet>;

    /// Consumes the batch (its storage is not recycled; hot paths use
    /// [`Batch::drain`]).
    fn into_iter(mut self) -> Self::IntoIter {
        std::mem::take(&mut self.v).into_iter()
    }
}

impl<'a> IntoIterator for &'a mut Batch {
    type Item = &'a mut Packet;
    type IntoIter = std::slice::IterMut<'a, Packet>;
    fn into_iter(self) -> Self::IntoIter {
        self.v.iter_mut()
    }
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Batch({} packets)", self.v.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_recycle_storage() {
        std::thread::spawn(|| {
            let mut b = Batch::new();
            b.push(Packet::new(1).unwrap());
            let ptr = b.v.as_ptr();
            drop(b);
            let b2 = Batch::new();
            assert_eq!(b2.v.as_ptr(), ptr, "storage reused");
            assert!(b2.is_empty());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn split_and_append() {
        let mut b: Batch = (0..5u8)
            .map(|i| Packet::from_slice(&[i]).unwrap())
            .collect();
        let mut t = b.split_off(3);
        assert_eq!(b.len(), 3);
        assert_eq!(t.len(), 2);
        b.append(&mut t);
        let v: Vec<u8> = b.iter().map(|p| p.data()[0]).collect();
        assert_eq!(v, vec![0, 1, 2, 3, 4]);
        b.retain_mut(|p| p.data()[0] % 2 == 0);
        assert_eq!(b.len(), 3);
    }
}
