//! TPACKET_V3 and TPACKET_V2 receive rings: the layouts the kernel writes
//! into an AF_PACKET `PACKET_RX_RING`, parsed with a bounds check on every
//! offset, and the mmap'd ring itself. Not an element.
//!
//! A V3 ring is an array of blocks. The kernel fills the block it owns with
//! frames one after another, then "retires" it (when it is full or when the
//! retire timeout expires) by setting `TP_STATUS_USER` in the block header;
//! from then on the block belongs to user space, which reads its frames and
//! hands it back by storing `TP_STATUS_KERNEL`. Blocks are handed out and
//! back in ring order.
//!
//! Layout (from `<linux/if_packet.h>`):
//!
//! ```text
//! block:  tpacket_block_desc { version u32, offset_to_priv u32,
//!           tpacket_hdr_v1 { block_status u32 @8, num_pkts u32 @12,
//!             offset_to_first_pkt u32 @16, blk_len u32 @20, seq_num u64 @24,
//!             ts_first_pkt @32, ts_last_pkt @40 } }            (48 bytes)
//! frame:  tpacket3_hdr { tp_next_offset u32 @0, tp_sec @4, tp_nsec @8,
//!           tp_snaplen @12, tp_len @16, tp_status @20, tp_mac u16 @24,
//!           tp_net u16 @26, tp_rxhash @28, tp_vlan_tci @32,
//!           tp_vlan_tpid u16 @36, pad }                         (48 bytes)
//!         sockaddr_ll @48 { family, protocol, ifindex @52, hatype,
//!           pkttype u8 @58, halen, addr[8] }
//!         [virtio_net_hdr, 10 bytes, just before the frame data when
//!          PACKET_VNET_HDR is on]
//!         frame data @tp_mac, tp_snaplen bytes (tp_len on the wire)
//! ```
//!
//! A V2 ring is an array of fixed-size frame slots instead, each handed
//! over on its own as soon as the kernel has written it (no timeout), with
//! the same ownership protocol on the slot's `tp_status`:
//!
//! ```text
//! slot:   tpacket2_hdr { tp_status u32 @0, tp_len @4, tp_snaplen @8,
//!           tp_mac u16 @12, tp_net u16 @14, tp_sec @16, tp_nsec @20,
//!           tp_vlan_tci u16 @24, tp_vlan_tpid u16 @26, pad }    (32 bytes)
//!         sockaddr_ll @32 { family, protocol, ifindex @36, hatype,
//!           pkttype u8 @42, halen, addr[8] }
//!         [virtio_net_hdr just before the data], data @tp_mac
//! ```
//!
//! A frame longer than its slot is cut to fit; with `PACKET_COPY_THRESH`
//! the kernel then also queues the whole frame on the socket (read with
//! `recvmsg`) and marks the slot `TP_STATUS_COPY`.

use super::offload::VnetHdr;
use std::sync::atomic::{AtomicU32, Ordering};

/// Block status values.
pub const TP_STATUS_KERNEL: u32 = 0;
pub const TP_STATUS_USER: u32 = 1;
/// Frame status bits.
pub const TP_STATUS_COPY: u32 = 1 << 1;
pub const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
pub const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;

/// `sll_pkttype` values (they equal Click's packet type numbers).
pub const PACKET_HOST: u8 = 0;
pub const PACKET_BROADCAST: u8 = 1;
pub const PACKET_MULTICAST: u8 = 2;
pub const PACKET_OTHERHOST: u8 = 3;
pub const PACKET_OUTGOING: u8 = 4;

pub const BLOCK_STATUS_OFF: usize = 8;
const BLOCK_NUM_PKTS_OFF: usize = 12;
const BLOCK_FIRST_OFF: usize = 16;
const BLOCK_LEN_OFF: usize = 20;
/// Size of the block descriptor.
pub const BLOCK_DESC_LEN: usize = 48;

const F_NEXT: usize = 0;
const F_SEC: usize = 4;
const F_NSEC: usize = 8;
const F_SNAPLEN: usize = 12;
const F_LEN: usize = 16;
const F_STATUS: usize = 20;
const F_MAC: usize = 24;
const F_RXHASH: usize = 28;
const F_VLAN_TCI: usize = 32;
const F_VLAN_TPID: usize = 36;
/// `TPACKET_ALIGN(sizeof(struct tpacket3_hdr))`: where the sockaddr_ll is.
pub const FRAME_HDR_LEN: usize = 48;
const SLL_LEN: usize = 20;
/// Size of `struct virtio_net_hdr`.
pub const VNET_HDR_LEN: usize = 10;

#[inline]
fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off + 4)?;
    Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

#[inline]
fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off + 2)?;
    Some(u16::from_ne_bytes([s[0], s[1]]))
}

/// The header of a block (user-owned, so stable while read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub status: u32,
    pub num_pkts: u32,
    pub first: u32,
    pub len: u32,
}

impl BlockHeader {
    pub fn parse(block: &[u8]) -> Option<BlockHeader> {
        Some(BlockHeader {
            status: u32_at(block, BLOCK_STATUS_OFF)?,
            num_pkts: u32_at(block, BLOCK_NUM_PKTS_OFF)?,
            first: u32_at(block, BLOCK_FIRST_OFF)?,
            len: u32_at(block, BLOCK_LEN_OFF)?,
        })
    }
}

/// One received frame, borrowed from its block.
#[derive(Debug)]
pub struct Frame<'a> {
    /// The captured bytes, link header first (`tp_snaplen` of them).
    pub data: &'a [u8],
    /// The frame's length on the wire (`tp_len`); more than `data.len()`
    /// when the frame was truncated to fit the ring.
    pub wire_len: u32,
    pub sec: u32,
    pub nsec: u32,
    pub pkttype: u8,
    pub ifindex: i32,
    pub rxhash: u32,
    /// The VLAN tag the kernel took off the frame: (TPID, TCI).
    pub vlan: Option<(u16, u16)>,
    /// The virtio-net header (sockets with `PACKET_VNET_HDR`).
    pub vnet: Option<VnetHdr>,
}

impl Frame<'_> {
    /// Whether the frame was cut short (longer than the ring's frames).
    pub fn truncated(&self) -> bool {
        (self.data.len() as u64) < self.wire_len as u64
    }
}

/// Where a frame header's fields are, per TPACKET version: the two
/// versions differ in offsets, not in what the fields mean.
struct Layout {
    /// The header's length, `TPACKET_ALIGN`ed: where the sockaddr_ll is.
    hdr_len: usize,
    status: usize,
    len: usize,
    snaplen: usize,
    mac: usize,
    sec: usize,
    nsec: usize,
    /// The receive hash, where the version has one.
    rxhash: Option<usize>,
    vlan_tci: usize,
    /// V3's TCI field is 32 bits wide, V2's 16: the tag is the low 16.
    vlan_tci_u32: bool,
    vlan_tpid: usize,
}

/// `struct tpacket3_hdr` (after the block descriptor).
const V3: Layout = Layout {
    hdr_len: FRAME_HDR_LEN,
    status: F_STATUS,
    len: F_LEN,
    snaplen: F_SNAPLEN,
    mac: F_MAC,
    sec: F_SEC,
    nsec: F_NSEC,
    rxhash: Some(F_RXHASH),
    vlan_tci: F_VLAN_TCI,
    vlan_tci_u32: true,
    vlan_tpid: F_VLAN_TPID,
};

/// TPACKET_V2 slot offsets (`struct tpacket2_hdr`).
const V2: Layout = Layout {
    hdr_len: V2_HDR_LEN,
    status: 0,
    len: 4,
    snaplen: 8,
    mac: 12,
    sec: 16,
    nsec: 20,
    // V2 has no receive hash field (V3 fills its own only on request,
    // which FromDevice does not make).
    rxhash: None,
    vlan_tci: 24,
    vlan_tci_u32: false,
    vlan_tpid: 26,
};

/// `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`: where the sockaddr_ll is.
pub const V2_HDR_LEN: usize = 32;

/// The frame whose header starts `h`, its fields where `at` says, and
/// the header's status word; `None` if any field points outside `h`.
#[inline(always)]
fn parse_header<'a>(h: &'a [u8], at: &Layout, vnet: bool) -> Option<(Frame<'a>, u32)> {
    if h.len() < at.hdr_len + SLL_LEN {
        return None;
    }
    let status = u32_at(h, at.status)?;
    let snaplen = u32_at(h, at.snaplen)? as usize;
    let mac = u16_at(h, at.mac)? as usize;
    let need_before = at.hdr_len + SLL_LEN + if vnet { VNET_HDR_LEN } else { 0 };
    if mac < need_before || mac.checked_add(snaplen)? > h.len() {
        return None;
    }
    let vlan = if status & TP_STATUS_VLAN_VALID != 0 {
        let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 {
            u16_at(h, at.vlan_tpid)?
        } else {
            0x8100
        };
        let tci = if at.vlan_tci_u32 {
            u32_at(h, at.vlan_tci)? as u16
        } else {
            u16_at(h, at.vlan_tci)?
        };
        Some((tpid, tci))
    } else {
        None
    };
    let vnet = if vnet {
        VnetHdr::parse(&h[mac - VNET_HDR_LEN..mac])
    } else {
        None
    };
    let rxhash = match at.rxhash {
        Some(o) => u32_at(h, o)?,
        None => 0,
    };
    Some((
        Frame {
            data: &h[mac..mac + snaplen],
            wire_len: u32_at(h, at.len)?,
            sec: u32_at(h, at.sec)?,
            nsec: u32_at(h, at.nsec)?,
            pkttype: h[at.hdr_len + 10],
            ifindex: u32_at(h, at.hdr_len + 4)? as i32,
            rxhash,
            vlan,
            vnet,
        },
        status,
    ))
}

/// Parses the frame at offset `off` of `block` (the block's used part).
/// Returns the frame and its `tp_next_offset`, or `None` if any field
/// points outside the block.
pub fn parse_frame(block: &[u8], off: usize, vnet: bool) -> Option<(Frame<'_>, u32)> {
    if off < BLOCK_DESC_LEN || off > block.len() {
        return None;
    }
    let h = &block[off..];
    let (frame, _) = parse_header(h, &V3, vnet)?;
    Some((frame, u32_at(h, F_NEXT)?))
}

/// Parses the TPACKET_V2 slot `slot` (user-owned). Returns the frame and
/// the slot's status (`TP_STATUS_COPY`: the frame in the slot is cut
/// short, and the whole of it waits on the socket), or `None` if a field
/// points outside the slot.
pub fn parse_slot_v2(slot: &[u8], vnet: bool) -> Option<(Frame<'_>, u32)> {
    parse_header(slot, &V2, vnet)
}

/// Where a reader stands in a block: the next frame's offset and how many
/// frames remain. Kept between task runs, so a block can be read a burst
/// at a time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    pub off: usize,
    pub left: u32,
}

impl Cursor {
    /// The cursor at the first frame of a block, or `None` for a block
    /// whose header is unusable.
    pub fn start(block: &[u8]) -> Option<Cursor> {
        let h = BlockHeader::parse(block)?;
        Some(Cursor {
            off: h.first as usize,
            left: h.num_pkts,
        })
    }

    pub fn done(&self) -> bool {
        self.left == 0
    }

    /// Reads the next frame and advances. `None` when the block is done or
    /// malformed; a malformed block is finished (`left` becomes 0) and
    /// `Err` tells how many frames were lost with it.
    pub fn next_frame<'a>(
        &mut self,
        block: &'a [u8],
        vnet: bool,
    ) -> Option<Result<Frame<'a>, u32>> {
        if self.left == 0 {
            return None;
        }
        let used = BlockHeader::parse(block)
            .map(|h| (h.len as usize).min(block.len()))
            .unwrap_or(0);
        match parse_frame(&block[..used], self.off, vnet) {
            Some((f, next)) => {
                self.left -= 1;
                if self.left > 0 {
                    // Frames only move forward; a zero offset would loop.
                    // An impossible offset makes the next call report the
                    // frames left as lost.
                    self.off = if next == 0 {
                        usize::MAX
                    } else {
                        self.off.saturating_add(next as usize)
                    };
                }
                Some(Ok(f))
            }
            None => {
                let lost = self.left;
                self.left = 0;
                Some(Err(lost))
            }
        }
    }
}

/// An mmap'd receive ring: `nblocks` units of `block_size` bytes, each
/// with its status word at `status_off`: the blocks of a TPACKET_V3 ring
/// (status in the block header, [`BLOCK_STATUS_OFF`]) or the frame slots
/// of a TPACKET_V2 ring (status first). The mapping is released on drop
/// (before the socket closes).
pub struct RxRing {
    base: *mut u8,
    block_size: usize,
    nblocks: usize,
    status_off: usize,
}

// SAFETY: the ring is a plain memory mapping owned by this value. Blocks
// are only read while user space owns them (status TP_STATUS_USER, read
// with Acquire), and the element serializes its readers (one reader at a
// time, under a try-lock), so sharing the handle between threads is sound.
unsafe impl Send for RxRing {}
// SAFETY: as above.
unsafe impl Sync for RxRing {}

impl RxRing {
    /// Takes ownership of a mapping of `nblocks * block_size` bytes.
    ///
    /// # Safety
    /// `base` must be the start of a live, readable and writable mapping of
    /// exactly `nblocks * block_size` bytes that stays mapped until this
    /// value is dropped (which unmaps it), laid out as a TPACKET_V3 ring
    /// (`status_off` [`BLOCK_STATUS_OFF`]) or, with `block_size` the frame
    /// size, a TPACKET_V2 ring whose slots are contiguous (`status_off`
    /// 0); `block_size` a multiple of 4 and `base` page aligned.
    pub unsafe fn from_raw(
        base: *mut u8,
        block_size: usize,
        nblocks: usize,
        status_off: usize,
    ) -> RxRing {
        RxRing {
            base,
            block_size,
            nblocks,
            status_off,
        }
    }

    pub fn nblocks(&self) -> usize {
        self.nblocks
    }

    fn status(&self, i: usize) -> &AtomicU32 {
        assert!(i < self.nblocks);
        // SAFETY: unit `i` lies inside the mapping (checked above); its
        // status word is 4-byte aligned (units are multiples of 4 bytes
        // from a page-aligned base, the field at offset 8 of a block or 0
        // of a slot) and is shared with the kernel, so it is accessed only
        // atomically.
        unsafe { &*(self.base.add(i * self.block_size + self.status_off) as *const AtomicU32) }
    }

    /// Block `i`, if user space owns it.
    pub fn user_block(&self, i: usize) -> Option<UserBlock<'_>> {
        if self.status(i).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
            return None;
        }
        Some(UserBlock { ring: self, idx: i })
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: `base` and the length are those of the mapping handed to
        // `from_raw`, which nothing else unmaps; no `UserBlock` can outlive
        // `self` (it borrows it).
        let _ = unsafe { rustix::mm::munmap(self.base.cast(), self.block_size * self.nblocks) };
    }
}

/// A block user space owns. Its bytes can be read until it is released.
pub struct UserBlock<'r> {
    ring: &'r RxRing,
    idx: usize,
}

impl UserBlock<'_> {
    /// The block's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the block is inside the mapping; user space owns it (its
        // status had TP_STATUS_USER, loaded with Acquire, so the kernel's
        // writes to it are visible), and the kernel does not write a block
        // user space owns. The borrow ends before `release` hands it back.
        unsafe {
            std::slice::from_raw_parts(
                self.ring.base.add(self.idx * self.ring.block_size),
                self.ring.block_size,
            )
        }
    }

    /// Hands the block back to the kernel.
    pub fn release(self) {
        self.ring
            .status(self.idx)
            .store(TP_STATUS_KERNEL, Ordering::Release);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A frame to put into a synthetic block.
    pub(crate) struct TestFrame<'a> {
        pub data: &'a [u8],
        pub wire_len: u32,
        pub pkttype: u8,
        pub status: u32,
        pub vlan_tci: u32,
        pub vnet: Option<[u8; VNET_HDR_LEN]>,
    }

    impl<'a> TestFrame<'a> {
        pub(crate) fn new(data: &'a [u8]) -> TestFrame<'a> {
            TestFrame {
                data,
                wire_len: data.len() as u32,
                pkttype: PACKET_HOST,
                status: TP_STATUS_USER,
                vlan_tci: 0,
                vnet: None,
            }
        }
    }

    fn put32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }

    fn put16(b: &mut [u8], off: usize, v: u16) {
        b[off..off + 2].copy_from_slice(&v.to_ne_bytes());
    }

    /// Where the sockaddr_ll's fields are after a V3 frame header.
    const SLL_IFINDEX: usize = FRAME_HDR_LEN + 4;
    const SLL_PKTTYPE: usize = FRAME_HDR_LEN + 10;
    /// `struct tpacket2_hdr`'s fields, from the kernel's header (written
    /// out here, not taken from the parser's table, so that a wrong
    /// offset there fails the V2 tests).
    const V2_LEN: usize = 4;
    const V2_SNAPLEN: usize = 8;
    const V2_MAC: usize = 12;
    const V2_SEC: usize = 16;
    const V2_NSEC: usize = 20;
    const V2_VLAN_TCI: usize = 24;
    const V2_SLL_IFINDEX: usize = V2_HDR_LEN + 4;
    const V2_SLL_PKTTYPE: usize = V2_HDR_LEN + 10;

    /// Builds a block the way the kernel lays one out: frames 16-byte
    /// aligned, mac offset rounded so the network header is aligned.
    pub(crate) fn build_block(size: usize, frames: &[TestFrame<'_>], vnet: bool) -> Vec<u8> {
        let mut b = vec![0u8; size];
        let first = BLOCK_DESC_LEN;
        let mut off = first;
        let mut offs = Vec::new();
        for f in frames {
            let mac = (FRAME_HDR_LEN + SLL_LEN + if vnet { VNET_HDR_LEN } else { 0 } + 15) & !15;
            let mac = mac + 2; // like the kernel: IP header 16-byte aligned
            let h = off;
            put32(&mut b, h + F_SEC, 1000);
            put32(&mut b, h + F_NSEC, 500);
            put32(&mut b, h + F_SNAPLEN, f.data.len() as u32);
            put32(&mut b, h + F_LEN, f.wire_len);
            put32(&mut b, h + F_STATUS, f.status);
            put16(&mut b, h + F_MAC, mac as u16);
            put16(&mut b, h + F_MAC + 2, (mac + 14) as u16);
            put32(&mut b, h + F_RXHASH, 0xabcd);
            put32(&mut b, h + F_VLAN_TCI, f.vlan_tci);
            put16(&mut b, h + SLL_IFINDEX, 7);
            b[h + SLL_PKTTYPE] = f.pkttype;
            if let Some(v) = f.vnet {
                b[h + mac - VNET_HDR_LEN..h + mac].copy_from_slice(&v);
            }
            b[h + mac..h + mac + f.data.len()].copy_from_slice(f.data);
            offs.push(off);
            off = (h + mac + f.data.len() + 15) & !15;
        }
        for w in offs.windows(2) {
            put32(&mut b, w[0] + F_NEXT, (w[1] - w[0]) as u32);
        }
        put32(&mut b, 0, 1);
        put32(&mut b, BLOCK_STATUS_OFF, TP_STATUS_USER);
        put32(&mut b, BLOCK_NUM_PKTS_OFF, frames.len() as u32);
        put32(&mut b, BLOCK_FIRST_OFF, first as u32);
        put32(&mut b, BLOCK_LEN_OFF, off as u32);
        b
    }

    /// Builds a TPACKET_V2 slot the way the kernel fills one (data 76
    /// bytes in with a virtio-net header, 66 without).
    pub(crate) fn build_slot(size: usize, f: &TestFrame<'_>, vnet: bool) -> Vec<u8> {
        let mut b = vec![0u8; size];
        let mac =
            ((V2_HDR_LEN + SLL_LEN + 16 + 15) & !15) + if vnet { VNET_HDR_LEN } else { 0 } - 14;
        let snap = f.data.len().min(size - mac);
        put32(&mut b, 0, f.status);
        put32(&mut b, V2_LEN, f.wire_len);
        put32(&mut b, V2_SNAPLEN, snap as u32);
        put16(&mut b, V2_MAC, mac as u16);
        put32(&mut b, V2_SEC, 1000);
        put32(&mut b, V2_NSEC, 500);
        put16(&mut b, V2_VLAN_TCI, f.vlan_tci as u16);
        put32(&mut b, V2_SLL_IFINDEX, 7);
        b[V2_SLL_PKTTYPE] = f.pkttype;
        if let Some(v) = f.vnet {
            b[mac - VNET_HDR_LEN..mac].copy_from_slice(&v);
        }
        b[mac..mac + snap].copy_from_slice(&f.data[..snap]);
        b
    }

    #[test]
    fn v2_slots_give_their_frame_and_status() {
        let d: Vec<u8> = (0..200).map(|i| i as u8).collect();
        let mut f = TestFrame::new(&d);
        f.pkttype = PACKET_BROADCAST;
        f.status |= TP_STATUS_VLAN_VALID;
        f.vlan_tci = 0x3009;
        let mut v = [0u8; VNET_HDR_LEN];
        v[0] = 1;
        v[6..8].copy_from_slice(&34u16.to_ne_bytes());
        f.vnet = Some(v);
        let slot = build_slot(2048, &f, true);
        let (fr, status) = parse_slot_v2(&slot, true).unwrap();
        assert_eq!(fr.data, &d[..]);
        assert_eq!(status & TP_STATUS_COPY, 0);
        assert_eq!(
            (fr.sec, fr.nsec, fr.pkttype, fr.ifindex, fr.wire_len),
            (1000, 500, PACKET_BROADCAST, 7, 200)
        );
        assert_eq!(fr.vlan, Some((0x8100, 0x3009)));
        assert_eq!(fr.vnet.unwrap().csum_start, 34);
        assert!(!fr.truncated());
        // A frame longer than the slot: cut, its status says the whole
        // of it waits on the socket.
        let big = vec![7u8; 3000];
        let mut f = TestFrame::new(&big);
        f.status |= TP_STATUS_COPY;
        let slot = build_slot(2048, &f, true);
        let (fr, status) = parse_slot_v2(&slot, true).unwrap();
        assert_ne!(status & TP_STATUS_COPY, 0);
        assert!(fr.truncated() && fr.data.len() == 2048 - 76);
        // Fields pointing outside the slot, or into its headers: refused,
        // never a panic.
        let good = build_slot(2048, &TestFrame::new(&d), false);
        assert!(parse_slot_v2(&good, false).is_some());
        let mut b = good.clone();
        put32(&mut b, V2_SNAPLEN, 1 << 20);
        assert!(parse_slot_v2(&b, false).is_none());
        let mut b = good.clone();
        put16(&mut b, V2_MAC, 20);
        assert!(parse_slot_v2(&b, false).is_none());
        // A vnet socket needs the header's room before the data.
        assert!(parse_slot_v2(&good, true).is_some());
        put16(&mut b, V2_MAC, (V2_HDR_LEN + SLL_LEN + 4) as u16);
        assert!(parse_slot_v2(&b, true).is_none());
        assert!(parse_slot_v2(&good[..40], false).is_none());
    }

    fn read_all(block: &[u8], vnet: bool) -> (Vec<Vec<u8>>, u32) {
        let mut c = Cursor::start(block).unwrap();
        let mut out = Vec::new();
        let mut lost = 0;
        while let Some(r) = c.next_frame(block, vnet) {
            match r {
                Ok(f) => out.push(f.data.to_vec()),
                Err(n) => lost += n,
            }
        }
        (out, lost)
    }

    #[test]
    fn frames_of_a_block_in_order_with_their_metadata() {
        let a = [1u8; 60];
        let b: Vec<u8> = (0..=255).collect();
        let c = [3u8; 1514];
        let mut fb = TestFrame::new(&b);
        fb.pkttype = PACKET_BROADCAST;
        let mut fc = TestFrame::new(&c);
        fc.status |= TP_STATUS_VLAN_VALID;
        fc.vlan_tci = 0x1005;
        fc.wire_len = 2000;
        let block = build_block(8192, &[TestFrame::new(&a), fb, fc], false);
        let h = BlockHeader::parse(&block).unwrap();
        assert_eq!(h.num_pkts, 3);
        assert_eq!(h.status, TP_STATUS_USER);
        let mut cur = Cursor::start(&block).unwrap();
        let f = cur.next_frame(&block, false).unwrap().unwrap();
        assert_eq!(f.data, &a[..]);
        assert_eq!(
            (f.sec, f.nsec, f.pkttype, f.ifindex),
            (1000, 500, PACKET_HOST, 7)
        );
        assert_eq!(f.rxhash, 0xabcd);
        assert!(f.vlan.is_none() && !f.truncated() && f.vnet.is_none());
        let f = cur.next_frame(&block, false).unwrap().unwrap();
        assert_eq!(f.data, &b[..]);
        assert_eq!(f.pkttype, PACKET_BROADCAST);
        // The cursor can stop between frames and resume.
        let saved = cur;
        let f = cur.next_frame(&block, false).unwrap().unwrap();
        assert_eq!(f.data.len(), 1514);
        assert_eq!(f.vlan, Some((0x8100, 0x1005)));
        assert!(f.truncated());
        assert!(cur.done());
        assert!(cur.next_frame(&block, false).is_none());
        let mut again = saved;
        assert_eq!(
            again.next_frame(&block, false).unwrap().unwrap().data,
            &c[..]
        );
    }

    #[test]
    fn vnet_header_is_read_from_before_the_frame() {
        let d = [9u8; 100];
        let mut f = TestFrame::new(&d);
        // NEEDS_CSUM, GSO TCPV4, hdr_len 54, gso_size 1448, csum 34/16.
        let mut v = [0u8; VNET_HDR_LEN];
        v[0] = 1;
        v[1] = 1;
        v[2..4].copy_from_slice(&54u16.to_ne_bytes());
        v[4..6].copy_from_slice(&1448u16.to_ne_bytes());
        v[6..8].copy_from_slice(&34u16.to_ne_bytes());
        v[8..10].copy_from_slice(&16u16.to_ne_bytes());
        f.vnet = Some(v);
        let block = build_block(4096, &[f], true);
        let mut cur = Cursor::start(&block).unwrap();
        let fr = cur.next_frame(&block, true).unwrap().unwrap();
        assert_eq!(fr.data, &d[..]);
        let vh = fr.vnet.unwrap();
        assert!(vh.needs_csum());
        assert_eq!(
            (vh.gso_type, vh.gso_size, vh.csum_start, vh.csum_offset),
            (1, 1448, 34, 16)
        );
    }

    #[test]
    fn corrupt_blocks_are_finished_without_panicking() {
        let d = [5u8; 64];
        let good = build_block(2048, &[TestFrame::new(&d), TestFrame::new(&d)], false);
        assert_eq!(read_all(&good, false), (vec![d.to_vec(), d.to_vec()], 0));

        // A snaplen running past the block.
        let mut b = good.clone();
        put32(&mut b, BLOCK_DESC_LEN + F_SNAPLEN, 1 << 20);
        assert_eq!(read_all(&b, false), (vec![], 2));

        // A second frame offset pointing outside the block.
        let mut b = good.clone();
        put32(&mut b, BLOCK_DESC_LEN + F_NEXT, 1 << 30);
        assert_eq!(read_all(&b, false), (vec![d.to_vec()], 1));

        // A zero next offset with frames left would loop: stop.
        let mut b = good.clone();
        put32(&mut b, BLOCK_DESC_LEN + F_NEXT, 0);
        assert_eq!(read_all(&b, false), (vec![d.to_vec()], 1));

        // More packets claimed than the block holds.
        let mut b = good.clone();
        put32(&mut b, BLOCK_NUM_PKTS_OFF, 1000);
        let (frames, lost) = read_all(&b, false);
        assert_eq!(frames.len(), 2);
        assert_eq!(lost, 998);

        // First frame inside the block descriptor; a mac offset inside the
        // frame header; blk_len shorter than the frames.
        let mut b = good.clone();
        put32(&mut b, BLOCK_FIRST_OFF, 8);
        assert_eq!(read_all(&b, false), (vec![], 2));
        let mut b = good.clone();
        put16(&mut b, BLOCK_DESC_LEN + F_MAC, 10);
        assert_eq!(read_all(&b, false), (vec![], 2));
        let mut b = good.clone();
        put32(&mut b, BLOCK_LEN_OFF, 100);
        assert_eq!(read_all(&b, false), (vec![], 2));

        // A vnet socket needs room for the header before the data.
        let tight = build_block(2048, &[TestFrame::new(&d)], false);
        let mac = u16_at(&tight, BLOCK_DESC_LEN + F_MAC).unwrap() as usize;
        assert!(mac >= FRAME_HDR_LEN + SLL_LEN + VNET_HDR_LEN);

        // Truncated block buffers.
        assert!(BlockHeader::parse(&good[..10]).is_none());
        assert!(Cursor::start(&good[..20]).is_none());
        for cut in [0, 47, 48, 60, 100, 150] {
            let (frames, _) = {
                let b = &good[..cut.max(24)];
                match Cursor::start(b) {
                    Some(mut c) => {
                        let mut n = 0;
                        while let Some(r) = c.next_frame(b, false) {
                            if r.is_ok() {
                                n += 1;
                            }
                        }
                        (n, 0)
                    }
                    None => (0, 0),
                }
            };
            assert_eq!(frames, 0, "cut {cut}");
        }
    }
}
