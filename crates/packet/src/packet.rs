//! The packet handle.

use crate::anno::{Anno, Timestamp};
use crate::pool::{self, Inner, BUFFER_SIZE, HEADROOM};
use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicIsize, Ordering};

/// A packet: a handle to a pooled buffer holding the data between `start`
/// and `end`, with headroom in front and tailroom behind, header offsets and
/// annotations. Moving a `Packet` moves one pointer; dropping it returns the
/// buffer to its home pool.
// Transparent: a packet has the layout of its `Box<Inner>`, so that a
// batch dropped whole can move its buffers onto the free list as one copy
// (`pool::release_batch`).
#[repr(transparent)]
pub struct Packet {
    inner: ManuallyDrop<Box<Inner>>,
}

/// The pool had no buffer to give (it is at capacity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoBuffer;

impl fmt::Display for NoBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("packet pool exhausted")
    }
}

impl std::error::Error for NoBuffer {}

/// Marked packets alive in this process (see [`marked_packets`]).
static MARKED: AtomicIsize = AtomicIsize::new(0);

/// How many packets carrying a tracer's mark ([`Packet::trace`]) are
/// alive in this process: a mark set or copied adds one, a marked packet
/// freed (sent, dropped, consumed) or unmarked takes one away. The tracer
/// turns itself off once its marks are taken and this is 0, so that no
/// packet pays for a trace that can no longer record anything.
#[inline]
pub fn marked_packets() -> isize {
    MARKED.load(Ordering::SeqCst)
}

/// A marked buffer was released or unmarked.
#[cold]
#[inline(never)]
pub(crate) fn marked_gone() {
    MARKED.fetch_sub(1, Ordering::SeqCst);
}

impl Drop for Packet {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `inner` is taken exactly once, here, and `self` is never
        // used again after `drop`.
        let b = unsafe { ManuallyDrop::take(&mut self.inner) };
        pool::free(b);
    }
}

impl Packet {
    /// The buffer, without returning it to the pool (the caller does).
    #[inline]
    pub(crate) fn into_inner(self) -> Box<Inner> {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped, so `inner` is taken exactly once
        // and never used again.
        unsafe { ManuallyDrop::take(&mut me.inner) }
    }

    /// The buffer, to read (the pool's batch release checks homes).
    #[inline]
    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// `b` as a packet of `len` bytes after `headroom`: the caller has
    /// made sure they fit (`headroom + len <= b.buf.len()`, the invariant
    /// of `Inner` the accessors rely on).
    #[inline]
    pub(crate) fn from_inner(mut b: Box<Inner>, headroom: usize, len: usize) -> Packet {
        debug_assert!(headroom + len <= b.buf.len());
        b.start = headroom as u32;
        b.end = (headroom + len) as u32;
        b.mac = -1;
        b.net = -1;
        b.trans = -1;
        b.anno = Anno::new();
        Packet {
            inner: ManuallyDrop::new(b),
        }
    }

    /// A buffer whose offsets and annotations its maker has written.
    #[inline(always)]
    pub(crate) fn from_filled(b: Box<Inner>) -> Packet {
        Packet {
            inner: ManuallyDrop::new(b),
        }
    }

    /// A packet of `len` bytes with default headroom. The contents are
    /// whatever the reused buffer held (as in Click); write them before use.
    #[inline]
    pub fn new(len: usize) -> Option<Packet> {
        Self::make(HEADROOM, len, 0)
    }

    /// A packet of `len` bytes with at least `headroom` bytes in front and
    /// `tailroom` bytes behind.
    #[inline]
    pub fn make(headroom: usize, len: usize, tailroom: usize) -> Option<Packet> {
        // Checked: the offsets are `u32` positions in the buffer, and the
        // data accessors rely on them lying in it (see `pool::Inner`).
        let need = headroom.checked_add(len)?.checked_add(tailroom)?;
        let b = if need <= BUFFER_SIZE {
            pool::alloc()?
        } else if need <= u32::MAX as usize {
            pool::alloc_large(need)?
        } else {
            return None;
        };
        Some(Self::from_inner(b, headroom, len))
    }

    /// A zero-filled packet of `len` bytes.
    pub fn zeroed(len: usize) -> Option<Packet> {
        let mut p = Self::new(len)?;
        p.data_mut().fill(0);
        Some(p)
    }

    /// A packet holding a copy of `data`.
    #[inline]
    pub fn from_slice(data: &[u8]) -> Option<Packet> {
        let mut p = Self::new(data.len())?;
        p.data_mut().copy_from_slice(data);
        Some(p)
    }

    /// A deep copy: data, header offsets and annotations (Click's `clone`;
    /// paraclick copies instead of sharing, which for the small packets of a
    /// router costs less than reference counting on every packet).
    pub fn clone_packet(&self) -> Option<Packet> {
        let i = &*self.inner;
        let head = i.start as usize;
        let len = self.len();
        let mut p = Self::make(head, len, 0)?;
        p.data_mut().copy_from_slice(self.data());
        let o = &mut *p.inner;
        let shift = o.start as i64 - i.start as i64;
        let mv = |x: i32| if x < 0 { -1 } else { (x as i64 + shift) as i32 };
        o.mac = mv(i.mac);
        o.net = mv(i.net);
        o.trans = mv(i.trans);
        o.anno = i.anno;
        if i.trace != 0 {
            p.set_trace(i.trace);
        }
        Some(p)
    }

    #[inline]
    pub fn len(&self) -> usize {
        (self.inner.end - self.inner.start) as usize
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.inner.end == self.inner.start
    }

    /// Starts loading the packet's buffer header (length, header offsets,
    /// annotations) into this core's cache, without waiting: a hint for a
    /// consumer that takes packets another core wrote. No effect on what
    /// the program computes.
    #[inline(always)]
    pub fn prefetch_meta(&self) {
        pool::prefetch_read(&**self.inner);
    }

    /// Starts loading the cache line holding the first byte of the
    /// packet's data (its outermost header), without waiting. It reads
    /// the buffer header: issue [`Packet::prefetch_meta`] for a burst's
    /// packets first, so that their loads overlap.
    #[inline(always)]
    pub fn prefetch_data(&self) {
        pool::prefetch_read_line(
            self.inner
                .buf
                .as_ptr()
                .wrapping_add(self.inner.start as usize),
        );
    }

    /// The bytes from position `from` of the buffer to the data's end,
    /// without a bounds check: `from <= end` (the caller's test) and
    /// `end <= buf.len()` (every packet's, see `pool::Inner`) make the
    /// range valid. The accessors below run on every packet at every
    /// element, where the two checks of a slice index cost four or five
    /// instructions each time.
    #[inline(always)]
    fn bytes_from(&self, from: u32) -> &[u8] {
        let i = &**self.inner;
        debug_assert!(from <= i.end && i.end as usize <= i.buf.len());
        // SAFETY: `from <= end` (the caller's test) and `end <= buf.len()`
        // (the invariant of `Inner`), so the range lies in the buffer.
        unsafe { i.buf.get_unchecked(from as usize..i.end as usize) }
    }

    /// [`Packet::bytes_from`], mutable.
    #[inline(always)]
    fn bytes_from_mut(&mut self, from: u32) -> &mut [u8] {
        let i = &mut **self.inner;
        debug_assert!(from <= i.end && i.end as usize <= i.buf.len());
        let end = i.end as usize;
        // SAFETY: as in `bytes_from`; `&mut self` makes the access unique.
        unsafe { i.buf.get_unchecked_mut(from as usize..end) }
    }

    #[inline]
    pub fn data(&self) -> &[u8] {
        // `start <= end` holds for every packet (see `pool::Inner`).
        self.bytes_from(self.inner.start)
    }

    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        self.bytes_from_mut(self.inner.start)
    }

    #[inline]
    pub fn headroom(&self) -> usize {
        self.inner.start as usize
    }

    #[inline]
    pub fn tailroom(&self) -> usize {
        self.inner.buf.len() - self.inner.end as usize
    }

    #[inline]
    pub fn anno(&self) -> &Anno {
        &self.inner.anno
    }

    #[inline]
    pub fn anno_mut(&mut self) -> &mut Anno {
        &mut self.inner.anno
    }

    /// The packet tracer's mark: the number of the trace that follows
    /// this packet, 0 if none. A copy ([`Packet::clone_packet`]) and a
    /// reallocated packet keep it; an element that builds a new packet
    /// standing for this one (a fragment, an ICMP error about it) copies
    /// it with [`Packet::set_trace`].
    #[inline]
    pub fn trace(&self) -> u32 {
        self.inner.trace
    }

    /// Sets the tracer's mark (see [`Packet::trace`]). The process counts
    /// marked packets alive ([`marked_packets`]), so the mark is not an
    /// annotation anyone may copy: it changes only here.
    #[inline]
    pub fn set_trace(&mut self, id: u32) {
        let old = std::mem::replace(&mut self.inner.trace, id);
        match (old != 0, id != 0) {
            (false, true) => {
                MARKED.fetch_add(1, Ordering::SeqCst);
            }
            (true, false) => marked_gone(),
            _ => {}
        }
    }

    #[inline]
    pub fn timestamp(&self) -> Timestamp {
        self.inner.anno.timestamp
    }

    #[inline]
    pub fn set_timestamp(&mut self, t: Timestamp) {
        self.inner.anno.timestamp = t;
    }

    /// Resets annotations and header offsets (as for a fresh packet).
    #[inline]
    pub fn clear_annotations(&mut self) {
        let i = &mut *self.inner;
        i.anno = Anno::new();
        i.mac = -1;
        i.net = -1;
        i.trans = -1;
    }

    /// Moves the data start `n` bytes back (Click's `push`): room for a new
    /// header. Reallocates with more headroom when needed.
    #[inline]
    pub fn push(&mut self, n: usize) -> Result<(), NoBuffer> {
        if n > self.headroom() {
            self.realloc(n + HEADROOM, 0)?;
        }
        self.inner.start -= n as u32;
        Ok(())
    }

    /// Removes `n` bytes from the front (Click's `pull`); clamps to the length.
    #[inline]
    pub fn pull(&mut self, n: usize) {
        let n = n.min(self.len()) as u32;
        self.inner.start += n;
    }

    /// Appends `n` bytes at the end (Click's `put`); reallocates if needed.
    /// The new bytes are zero.
    pub fn put(&mut self, n: usize) -> Result<(), NoBuffer> {
        if n > self.tailroom() {
            self.realloc(0, n)?;
        }
        let e = self.inner.end as usize;
        self.inner.buf[e..e + n].fill(0);
        self.inner.end += n as u32;
        Ok(())
    }

    /// Removes `n` bytes from the end (Click's `take`); clamps to the length.
    #[inline]
    pub fn take(&mut self, n: usize) {
        let n = n.min(self.len()) as u32;
        self.inner.end -= n;
    }

    /// Sets the length, growing with zeros or shrinking at the end.
    pub fn set_len(&mut self, len: usize) -> Result<(), NoBuffer> {
        let cur = self.len();
        if len > cur {
            self.put(len - cur)
        } else {
            self.take(cur - len);
            Ok(())
        }
    }

    #[cold]
    fn realloc(&mut self, extra_head: usize, extra_tail: usize) -> Result<(), NoBuffer> {
        let head = self.headroom() + extra_head;
        let len = self.len();
        let tail = self.tailroom() + extra_tail;
        let mut p = Self::make(head, len, tail).ok_or(NoBuffer)?;
        p.data_mut().copy_from_slice(self.data());
        let shift = p.inner.start as i64 - self.inner.start as i64;
        let mv = |x: i32| if x < 0 { -1 } else { (x as i64 + shift) as i32 };
        p.inner.mac = mv(self.inner.mac);
        p.inner.net = mv(self.inner.net);
        p.inner.trans = mv(self.inner.trans);
        p.inner.anno = self.inner.anno;
        // The mark moves with the packet: the old buffer goes unmarked.
        p.inner.trace = std::mem::take(&mut self.inner.trace);
        std::mem::swap(self, &mut p);
        Ok(())
    }

    // ----- header offsets (Click's header annotations) -----

    #[inline]
    fn rel(&self, abs: i32) -> Option<isize> {
        if abs < 0 {
            None
        } else {
            Some(abs as isize - self.inner.start as isize)
        }
    }

    /// Offset of the link-layer header from the data start, if set.
    #[inline]
    pub fn mac_header_offset(&self) -> Option<isize> {
        self.rel(self.inner.mac)
    }

    /// Offset of the network header from the data start, if set. Negative
    /// if the data start has moved past it.
    #[inline]
    pub fn network_header_offset(&self) -> Option<isize> {
        self.rel(self.inner.net)
    }

    #[inline]
    pub fn transport_header_offset(&self) -> Option<isize> {
        self.rel(self.inner.trans)
    }

    #[inline]
    pub fn has_network_header(&self) -> bool {
        self.inner.net >= 0
    }

    #[inline]
    pub fn has_transport_header(&self) -> bool {
        self.inner.trans >= 0
    }

    /// Marks the link-layer header at `off` bytes from the data start.
    #[inline]
    pub fn set_mac_header(&mut self, off: usize) {
        self.inner.mac = (self.inner.start as usize + off) as i32;
    }

    /// Marks the network header at `off` bytes from the data start, `hlen`
    /// bytes long (the transport header follows it).
    #[inline]
    pub fn set_network_header(&mut self, off: usize, hlen: usize) {
        let n = self.inner.start as usize + off;
        self.inner.net = n as i32;
        self.inner.trans = (n + hlen) as i32;
    }

    /// Changes the network header length (moves the transport header).
    #[inline]
    pub fn set_network_header_length(&mut self, hlen: usize) {
        if self.inner.net >= 0 {
            self.inner.trans = self.inner.net + hlen as i32;
        }
    }

    #[inline]
    pub fn clear_headers(&mut self) {
        self.inner.mac = -1;
        self.inner.net = -1;
        self.inner.trans = -1;
    }

    /// Bytes from the link-layer header to the end of the data.
    #[inline]
    pub fn mac_header(&self) -> Option<&[u8]> {
        let m = self.inner.mac;
        (m >= 0 && (m as u32) <= self.inner.end).then(|| self.bytes_from(m as u32))
    }

    /// Bytes from the network header to the end of the data.
    #[inline]
    pub fn network_header(&self) -> Option<&[u8]> {
        let n = self.inner.net;
        (n >= 0 && (n as u32) <= self.inner.end).then(|| self.bytes_from(n as u32))
    }

    /// The length of [`Packet::network_header`], without making the slice
    /// (no bounds check on the buffer).
    #[inline]
    pub fn network_len(&self) -> Option<usize> {
        let n = self.inner.net;
        (n >= 0 && (n as u32) <= self.inner.end).then(|| (self.inner.end - n as u32) as usize)
    }

    #[inline]
    pub fn network_header_mut(&mut self) -> Option<&mut [u8]> {
        let n = self.inner.net;
        if n >= 0 && (n as u32) <= self.inner.end {
            Some(self.bytes_from_mut(n as u32))
        } else {
            None
        }
    }

    /// Length of the network header (transport offset − network offset).
    #[inline]
    pub fn network_header_length(&self) -> Option<usize> {
        (self.inner.net >= 0 && self.inner.trans >= self.inner.net)
            .then(|| (self.inner.trans - self.inner.net) as usize)
    }

    /// Bytes from the transport header to the end of the data.
    #[inline]
    pub fn transport_header(&self) -> Option<&[u8]> {
        let t = self.inner.trans;
        (t >= 0 && (t as u32) <= self.inner.end).then(|| self.bytes_from(t as u32))
    }

    #[inline]
    pub fn transport_header_mut(&mut self) -> Option<&mut [u8]> {
        let t = self.inner.trans;
        if t >= 0 && (t as u32) <= self.inner.end {
            Some(self.bytes_from_mut(t as u32))
        } else {
            None
        }
    }

    /// The owner of the packet's buffer if it is an external one (an
    /// AF_XDP UMEM frame, see [`crate::pool::BufferOwner`]); `None` for a
    /// pooled buffer.
    #[inline]
    pub fn buffer_owner(&self) -> Option<&std::sync::Arc<dyn crate::pool::BufferOwner>> {
        self.inner.owner.as_ref()
    }

    /// The packet's external buffer, for its owner to take back without a
    /// copy (an AF_XDP transmit of a frame of the same UMEM): the data
    /// are at `data().as_ptr()` (read it first), the annotations are
    /// lost. A packet with a pooled buffer comes back unchanged.
    pub fn into_external(self) -> Result<crate::pool::ExtBuffer, Packet> {
        if self.inner.owner.is_some() {
            let mut inner = self.into_inner();
            if inner.trace != 0 {
                // A marked packet's end: the tracer counts them alive.
                inner.trace = 0;
                marked_gone();
            }
            Ok(crate::pool::ExtBuffer(inner))
        } else {
            Err(self)
        }
    }

    /// The whole buffer and the data range in it (for elements that must
    /// see the headroom, such as Unstrip).
    #[inline]
    pub fn buffer_len(&self) -> usize {
        self.inner.buf.len()
    }
}

impl fmt::Debug for Packet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packet")
            .field("len", &self.len())
            .field("headroom", &self.headroom())
            .field("net", &self.network_header_offset())
            .field("anno", self.anno())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `network_len` is the network header slice's length in every case:
    /// unset, set, with the data start past it, and with the end cut
    /// before it.
    #[test]
    fn network_len_is_the_network_header_length() {
        let mut p = Packet::from_slice(&[0u8; 60]).unwrap();
        let same = |p: &Packet| assert_eq!(p.network_len(), p.network_header().map(<[u8]>::len));
        same(&p);
        assert_eq!(p.network_len(), None);
        p.set_network_header(14, 20);
        same(&p);
        assert_eq!(p.network_len(), Some(46));
        p.pull(20);
        same(&p);
        assert_eq!(p.network_len(), Some(46));
        let mut p = Packet::from_slice(&[0u8; 60]).unwrap();
        p.set_network_header(14, 20);
        p.take(40);
        same(&p);
        assert_eq!(p.network_len(), Some(6));
        p.take(10);
        same(&p);
        assert_eq!(p.network_len(), None);
    }

    #[test]
    fn push_pull_put_take() {
        let mut p = Packet::from_slice(&[1, 2, 3, 4]).unwrap();
        assert_eq!(p.headroom(), HEADROOM);
        p.push(2).unwrap();
        assert_eq!(p.len(), 6);
        p.data_mut()[0] = 9;
        p.pull(2);
        assert_eq!(p.data(), &[1, 2, 3, 4]);
        p.put(2).unwrap();
        assert_eq!(p.data(), &[1, 2, 3, 4, 0, 0]);
        p.take(3);
        assert_eq!(p.data(), &[1, 2, 3]);
        p.pull(100);
        assert!(p.is_empty());
        p.take(5);
        assert!(p.is_empty());
    }

    #[test]
    fn push_beyond_headroom_reallocates_and_keeps_headers() {
        let mut p = Packet::from_slice(&[7; 40]).unwrap();
        p.set_network_header(14, 20);
        p.anno_mut().paint = 3;
        p.push(HEADROOM + 10).unwrap();
        assert_eq!(p.len(), 40 + HEADROOM + 10);
        assert_eq!(
            p.network_header_offset(),
            Some((HEADROOM + 10 + 14) as isize)
        );
        assert_eq!(p.anno().paint, 3);
        assert_eq!(&p.data()[HEADROOM + 10..], &[7; 40]);
    }

    #[test]
    fn header_offsets_survive_strip() {
        let mut p = Packet::zeroed(60).unwrap();
        p.set_mac_header(0);
        p.set_network_header(14, 20);
        p.pull(14);
        assert_eq!(p.network_header_offset(), Some(0));
        assert_eq!(p.transport_header_offset(), Some(20));
        assert_eq!(p.mac_header_offset(), Some(-14));
        assert_eq!(p.network_header().unwrap().len(), 46);
        assert_eq!(p.network_header_length(), Some(20));
        p.pull(30);
        assert_eq!(p.network_header_offset(), Some(-30));
        // The header is still where it was: 46 bytes from it to the end.
        assert_eq!(p.network_header().unwrap().len(), 46);
        assert_eq!(p.len(), 16);
    }

    #[test]
    fn clone_is_deep() {
        let mut p = Packet::from_slice(&[1, 2, 3]).unwrap();
        p.set_network_header(1, 1);
        p.anno_mut().paint = 5;
        let mut q = p.clone_packet().unwrap();
        q.data_mut()[0] = 42;
        assert_eq!(p.data(), &[1, 2, 3]);
        assert_eq!(q.data(), &[42, 2, 3]);
        assert_eq!(q.anno().paint, 5);
        assert_eq!(q.network_header_offset(), Some(1));
    }

    /// The only test here that marks packets: the count is the process's.
    #[test]
    fn marked_packets_are_counted_from_mark_to_free() {
        let base = marked_packets();
        let mut p = Packet::from_slice(&[1; 40]).unwrap();
        assert_eq!(marked_packets(), base, "a fresh packet is unmarked");
        p.set_trace(7);
        p.set_trace(8);
        assert_eq!(marked_packets(), base + 1, "marking twice counts once");
        let q = p.clone_packet().unwrap();
        assert_eq!(q.trace(), 8, "a copy keeps the mark");
        assert_eq!(marked_packets(), base + 2, "and counts");
        p.push(HEADROOM + 10).unwrap();
        assert_eq!(p.trace(), 8, "a reallocated packet keeps it");
        assert_eq!(marked_packets(), base + 2, "and is still one packet");
        drop(p);
        assert_eq!(marked_packets(), base + 1);
        let mut b = crate::Batch::new();
        b.push(q);
        b.push(Packet::from_slice(&[2; 40]).unwrap());
        drop(b);
        assert_eq!(marked_packets(), base, "a batch's marked packet freed");
        let mut r = Packet::from_slice(&[3; 40]).unwrap();
        r.set_trace(9);
        r.set_trace(0);
        assert_eq!(marked_packets(), base, "unmarked");
        drop(r);
        assert_eq!(marked_packets(), base);
        let mut s = Packet::from_slice(&[4; 40]).unwrap();
        s.set_trace(1);
        drop(s);
        let t = Packet::from_slice(&[5; 40]).unwrap();
        assert_eq!(t.trace(), 0, "a recycled buffer comes unmarked");
        // Freed on another thread: released there, counted there.
        let mut u = Packet::from_slice(&[6; 40]).unwrap();
        u.set_trace(2);
        std::thread::spawn(move || drop(u)).join().unwrap();
        assert_eq!(marked_packets(), base);
    }

    /// Sizes whose sum overflows, or whose offsets would not fit the
    /// buffer's `u32` positions, are refused, not wrapped: the data
    /// accessors rely on the offsets lying in the buffer.
    #[test]
    fn sizes_past_the_offsets_range_are_refused() {
        assert!(Packet::make(usize::MAX, 2, 0).is_none());
        assert!(Packet::make(HEADROOM, usize::MAX, 1).is_none());
        assert!(Packet::make(u32::MAX as usize, 1, 0).is_none());
        assert!(crate::Batch::alloc(2, usize::MAX, 2).is_empty());
        assert!(crate::Batch::alloc_copies(2, usize::MAX, &[1; 4], Default::default()).is_empty());
        let p = Packet::make(HEADROOM, 10, 0).unwrap();
        assert_eq!(p.len(), 10);
    }

    #[test]
    fn large_packets() {
        let p = Packet::make(HEADROOM, 9000, 0).unwrap();
        assert_eq!(p.len(), 9000);
        let mut q = Packet::from_slice(&[1; 1500]).unwrap();
        q.put(3000).unwrap();
        assert_eq!(q.len(), 4500);
        assert_eq!(q.data()[0], 1);
    }

    #[test]
    fn new_packet_has_fresh_annotations() {
        let mut p = Packet::new(10).unwrap();
        p.anno_mut().paint = 9;
        p.set_network_header(0, 4);
        drop(p);
        let q = Packet::new(10).unwrap();
        assert_eq!(q.anno().paint, 0);
        assert!(!q.has_network_header());
    }
}
