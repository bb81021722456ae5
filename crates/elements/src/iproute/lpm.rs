//! The longest-prefix-match table behind every IP route lookup element.
//!
//! ## Structure: a 16-8-8 multibit trie over one flat arena
//!
//! The table is a multibit trie with fixed strides of 16, 8 and 8 bits and
//! controlled prefix expansion with leaf pushing (Srinivasan and Varghese,
//! "Fast Address Lookups Using Controlled Prefix Expansion", 1999; the
//! two-level DIR-24-8 of Gupta, Lin and McKeown is the same idea with
//! strides 24 and 8). All nodes live in one `Vec<u32>`:
//!
//! - slots `0..65536` are the first level, indexed by the top 16 bits;
//! - after them come chunks of 256 slots, indexed by the next 8 bits
//!   (second level) or the last 8 bits (third level).
//!
//! A slot holds either a next-hop index (a leaf; 0 means no route) or, with
//! the top bit set, the number of a chunk. A lookup is therefore at most
//! three dependent loads from the arena plus one from the (small, hot)
//! next-hop array, whatever the number of prefixes: the cost is independent
//! of the table size, which is what a full Internet table (about 1M
//! prefixes) needs.
//!
//! Why not DIR-24-8? Its first level is 2^24 entries (32-64 MB) for every
//! table, even a three-route one, and a router configuration can hold
//! several lookup elements. The 16-bit first level is 256 KB (it stays in
//! L2), and memory grows with the table: a chunk exists only below a /16
//! (or /24) that holds longer prefixes. The price is one more dependent
//! load for prefixes longer than /16 than DIR-24-8 pays for those up to
//! /24; a /25-or-longer costs both schemes their last load.
//!
//! ## Updates
//!
//! Each slot also records, in a parallel `Vec<u8>` that lookups never
//! touch, the length of the prefix whose next hop it holds. Inserting
//! `P/len` overwrites the slots of P's range whose recorded length is at
//! most `len` (descending into chunks: leaf pushing); removing it rewrites
//! the slots whose recorded length is exactly `len` with the best shorter
//! route covering P. A chunk counts the routes whose length falls at its
//! level plus its child chunks; when that count drops to zero every slot
//! holds the same inherited value, so the chunk folds back into its parent
//! slot and goes on a free list for reuse. Removing every route returns the
//! arena to its first level.
//!
//! Next hops (gateway, output port) are interned: slots hold a small index
//! into a reference-counted next-hop array, so a full table with a few
//! dozen next hops keeps that array in L1.

use std::collections::HashMap;

/// Slots of the first level (indexed by the top 16 bits).
const L1: usize = 1 << 16;
/// A slot holding a chunk number rather than a next-hop index.
const CHILD: u32 = 0x8000_0000;

/// Where a route sends packets: a gateway (0 for none) and an output port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NextHop {
    pub gw: u32,
    pub port: u32,
}

/// A route as configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Route {
    /// Network address, host bits cleared.
    pub addr: u32,
    pub len: u8,
    pub gw: u32,
    pub port: u32,
}

impl Route {
    /// `addr/len` with the host bits of `addr` cleared.
    pub fn new(addr: u32, len: u8, gw: u32, port: u32) -> Route {
        Route {
            addr: addr & mask(len),
            len,
            gw,
            port,
        }
    }

    pub fn hop(&self) -> NextHop {
        NextHop {
            gw: self.gw,
            port: self.port,
        }
    }
}

/// The netmask of a prefix length (0..=32).
#[inline]
pub fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

#[derive(Clone, Copy, Debug)]
struct RouteInfo {
    hop: u32,
    seq: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct ChunkMeta {
    /// Routes whose length falls at this chunk's level, plus child chunks.
    count: u32,
    /// The arena slot pointing at this chunk.
    parent: u32,
}

/// A longest-prefix-match table: see the module documentation.
pub struct Lpm {
    slots: Vec<u32>,
    plens: Vec<u8>,
    chunks: Vec<ChunkMeta>,
    free_chunks: Vec<u32>,
    hops: Vec<NextHop>,
    hop_refs: Vec<u32>,
    hop_ids: HashMap<NextHop, u32>,
    free_hops: Vec<u32>,
    routes: HashMap<(u32, u8), RouteInfo>,
    seq: u64,
}

impl Default for Lpm {
    fn default() -> Self {
        Lpm::new()
    }
}

impl Lpm {
    /// An empty table (256 KB of first level, plus 64 KB of lengths).
    pub fn new() -> Lpm {
        Lpm {
            slots: vec![0; L1],
            plens: vec![0; L1],
            chunks: Vec::new(),
            free_chunks: Vec::new(),
            // Next hop 0 is "no route".
            hops: vec![NextHop { gw: 0, port: 0 }],
            hop_refs: vec![0],
            hop_ids: HashMap::new(),
            free_hops: Vec::new(),
            routes: HashMap::new(),
            seq: 0,
        }
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Chunks in use (not on the free list).
    pub fn chunks_in_use(&self) -> usize {
        self.chunks.len() - self.free_chunks.len()
    }

    /// Bytes of lookup structure (arena and next hops), for reports.
    pub fn lookup_bytes(&self) -> usize {
        self.slots.len() * 4 + self.hops.len() * std::mem::size_of::<NextHop>()
    }

    /// The next-hop index for `addr` (0: no route). Three loads at most.
    #[inline(always)]
    pub fn lookup_index(&self, addr: u32) -> u32 {
        let e = self.slots[(addr >> 16) as usize];
        if e & CHILD == 0 {
            return e;
        }
        let e = self.slots[chunk_base(e) + ((addr >> 8) & 0xff) as usize];
        if e & CHILD == 0 {
            return e;
        }
        self.slots[chunk_base(e) + (addr & 0xff) as usize]
    }

    /// [`Lpm::lookup_index`] for many addresses; `out` gets one next-hop
    /// index per address (it must be at least as long as `addrs`).
    ///
    /// The lookups are independent, so the CPU overlaps their cache misses
    /// on its own. (Going level by level over groups of addresses, to make
    /// that overlap explicit, measured 20% slower in `lookup_bench`: the
    /// out-of-order core already runs several lookups ahead.)
    #[inline]
    pub fn lookup_batch(&self, addrs: &[u32], out: &mut [u32]) {
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = self.lookup_index(a);
        }
    }

    /// The next hop of a nonzero index from [`Lpm::lookup_index`].
    #[inline(always)]
    pub fn hop(&self, index: u32) -> NextHop {
        self.hops[index as usize]
    }

    /// Longest-prefix match for `addr`.
    #[inline]
    pub fn lookup(&self, addr: u32) -> Option<NextHop> {
        match self.lookup_index(addr) {
            0 => None,
            i => Some(self.hop(i)),
        }
    }

    /// The route for exactly `addr/len` (host bits ignored).
    pub fn get(&self, addr: u32, len: u8) -> Option<Route> {
        let a = addr & mask(len);
        self.routes.get(&(a, len)).map(|ri| {
            let h = self.hops[ri.hop as usize];
            Route {
                addr: a,
                len,
                gw: h.gw,
                port: h.port,
            }
        })
    }

    /// Every route, in the order they were first added.
    pub fn routes_in_insertion_order(&self) -> Vec<Route> {
        let mut v: Vec<(u64, Route)> = self
            .routes
            .iter()
            .map(|(&(addr, len), ri)| {
                let h = self.hops[ri.hop as usize];
                (
                    ri.seq,
                    Route {
                        addr,
                        len,
                        gw: h.gw,
                        port: h.port,
                    },
                )
            })
            .collect();
        v.sort_unstable_by_key(|(s, _)| *s);
        v.into_iter().map(|(_, r)| r).collect()
    }

    /// Every route, sorted by address, then prefix length.
    pub fn routes_sorted(&self) -> Vec<Route> {
        let mut v = self.routes_in_insertion_order();
        v.sort_unstable_by_key(|r| (r.addr, r.len));
        v
    }

    /// Removes every route.
    pub fn clear(&mut self) {
        *self = Lpm::new();
    }

    /// Adds or replaces the route for `r.addr/r.len`; returns the route it
    /// replaced.
    pub fn insert(&mut self, r: Route) -> Option<Route> {
        let len = r.len.min(32);
        let addr = r.addr & mask(len);
        let hop = self.hop_ref(r.hop());
        let key = (addr, len);
        let old = match self.routes.get_mut(&key) {
            Some(ri) => {
                let old_hop = ri.hop;
                ri.hop = hop;
                let h = self.hops[old_hop as usize];
                self.hop_unref(old_hop);
                Some(Route {
                    addr,
                    len,
                    gw: h.gw,
                    port: h.port,
                })
            }
            None => {
                self.seq += 1;
                self.routes.insert(key, RouteInfo { hop, seq: self.seq });
                self.make_path(addr, len);
                None
            }
        };
        self.paint(addr, len, hop, len, Cond::AtMost(len));
        old
    }

    /// Removes the route for `addr/len`; returns it.
    pub fn remove(&mut self, addr: u32, len: u8) -> Option<Route> {
        let len = len.min(32);
        let addr = addr & mask(len);
        let ri = self.routes.remove(&(addr, len))?;
        let (rhop, rlen) = self.covering(addr, len);
        self.paint(addr, len, rhop, rlen, Cond::Exactly(len));
        self.release_path(addr, len);
        let h = self.hops[ri.hop as usize];
        self.hop_unref(ri.hop);
        Some(Route {
            addr,
            len,
            gw: h.gw,
            port: h.port,
        })
    }

    /// The best route strictly shorter than `len` covering `addr`, as
    /// (next-hop index, length); (0, 0) if none.
    fn covering(&self, addr: u32, len: u8) -> (u32, u8) {
        for l in (0..len).rev() {
            if let Some(ri) = self.routes.get(&(addr & mask(l), l)) {
                return (ri.hop, l);
            }
        }
        (0, 0)
    }

    fn hop_ref(&mut self, h: NextHop) -> u32 {
        if let Some(&i) = self.hop_ids.get(&h) {
            self.hop_refs[i as usize] += 1;
            return i;
        }
        let i = match self.free_hops.pop() {
            Some(i) => {
                self.hops[i as usize] = h;
                self.hop_refs[i as usize] = 1;
                i
            }
            None => {
                self.hops.push(h);
                self.hop_refs.push(1);
                (self.hops.len() - 1) as u32
            }
        };
        self.hop_ids.insert(h, i);
        i
    }

    fn hop_unref(&mut self, i: u32) {
        let r = &mut self.hop_refs[i as usize];
        *r -= 1;
        if *r == 0 {
            let h = self.hops[i as usize];
            self.hop_ids.remove(&h);
            self.free_hops.push(i);
        }
    }

    /// The slot range at the level where a `len`-bit prefix ends, making
    /// sure the chunks on the way exist (they must, for a stored route).
    fn range(&self, addr: u32, len: u8) -> (usize, usize) {
        let s1 = (addr >> 16) as usize;
        if len <= 16 {
            return (s1, 1 << (16 - len));
        }
        let base2 = chunk_base(self.slots[s1]);
        let s2 = base2 + ((addr >> 8) & 0xff) as usize;
        if len <= 24 {
            return (s2, 1 << (24 - len));
        }
        let base3 = chunk_base(self.slots[s2]);
        (base3 + (addr & 0xff) as usize, 1 << (32 - len))
    }

    /// A new route of length `len` at `addr`: creates the chunks it needs
    /// and counts it in the chunk of its level.
    fn make_path(&mut self, addr: u32, len: u8) {
        if len <= 16 {
            return;
        }
        let s1 = (addr >> 16) as usize;
        let c2 = self.ensure_chunk(s1);
        if len <= 24 {
            self.chunks[c2].count += 1;
            return;
        }
        let s2 = chunk_base_of(c2) + ((addr >> 8) & 0xff) as usize;
        let c3 = self.ensure_chunk(s2);
        self.chunks[c3].count += 1;
    }

    /// A route of length `len` at `addr` is gone: uncounts it and folds
    /// chunks that no longer hold anything of their own.
    fn release_path(&mut self, addr: u32, len: u8) {
        if len <= 16 {
            return;
        }
        let s1 = (addr >> 16) as usize;
        let c2 = chunk_index(self.slots[s1]);
        let c = if len <= 24 {
            c2
        } else {
            let s2 = chunk_base_of(c2) + ((addr >> 8) & 0xff) as usize;
            chunk_index(self.slots[s2])
        };
        self.chunks[c].count -= 1;
        if self.chunks[c].count == 0 {
            self.fold(c);
        }
    }

    /// The chunk under `slot`, creating it (filled with the slot's leaf)
    /// if the slot is a leaf.
    fn ensure_chunk(&mut self, slot: usize) -> usize {
        let e = self.slots[slot];
        if e & CHILD != 0 {
            return chunk_index(e);
        }
        let plen = self.plens[slot];
        let c = match self.free_chunks.pop() {
            Some(c) => c as usize,
            None => {
                self.chunks.push(ChunkMeta::default());
                self.slots.resize(self.slots.len() + 256, 0);
                self.plens.resize(self.plens.len() + 256, 0);
                self.chunks.len() - 1
            }
        };
        let base = chunk_base_of(c);
        self.slots[base..base + 256].fill(e);
        self.plens[base..base + 256].fill(plen);
        self.chunks[c] = ChunkMeta {
            count: 0,
            parent: slot as u32,
        };
        self.slots[slot] = CHILD | c as u32;
        if slot >= L1 {
            self.chunks[(slot - L1) >> 8].count += 1;
        }
        c
    }

    /// Folds chunk `c`, whose slots all hold the same inherited leaf, back
    /// into its parent slot.
    fn fold(&mut self, c: usize) {
        let base = chunk_base_of(c);
        let (leaf, plen) = (self.slots[base], self.plens[base]);
        debug_assert!(self.slots[base..base + 256].iter().all(|&e| e == leaf));
        let parent = self.chunks[c].parent as usize;
        self.slots[parent] = leaf;
        self.plens[parent] = plen;
        self.free_chunks.push(c as u32);
        if self.free_chunks.len() == self.chunks.len() {
            // Everything folded: give the memory back.
            self.chunks.clear();
            self.free_chunks.clear();
            self.slots.truncate(L1);
            self.slots.shrink_to_fit();
            self.plens.truncate(L1);
            self.plens.shrink_to_fit();
            return;
        }
        if parent >= L1 {
            let pc = (parent - L1) >> 8;
            self.chunks[pc].count -= 1;
            if self.chunks[pc].count == 0 {
                self.fold(pc);
            }
        }
    }

    /// Writes (`hop`, `plen`) into every slot of `addr/len`'s range whose
    /// recorded length satisfies `cond`, descending into chunks.
    fn paint(&mut self, addr: u32, len: u8, hop: u32, plen: u8, cond: Cond) {
        let (start, n) = self.range(addr, len);
        for s in start..start + n {
            self.paint_slot(s, hop, plen, cond);
        }
    }

    fn paint_slot(&mut self, s: usize, hop: u32, plen: u8, cond: Cond) {
        let e = self.slots[s];
        if e & CHILD != 0 {
            let base = chunk_base(e);
            for t in base..base + 256 {
                self.paint_slot(t, hop, plen, cond);
            }
        } else if cond.holds(self.plens[s]) {
            self.slots[s] = hop;
            self.plens[s] = plen;
        }
    }
}

#[derive(Clone, Copy)]
enum Cond {
    AtMost(u8),
    Exactly(u8),
}

impl Cond {
    #[inline]
    fn holds(self, l: u8) -> bool {
        match self {
            Cond::AtMost(x) => l <= x,
            Cond::Exactly(x) => l == x,
        }
    }
}

#[inline(always)]
fn chunk_index(e: u32) -> usize {
    (e & !CHILD) as usize
}

#[inline(always)]
fn chunk_base_of(c: usize) -> usize {
    L1 + (c << 8)
}

#[inline(always)]
fn chunk_base(e: u32) -> usize {
    chunk_base_of(chunk_index(e))
}

/// Test and benchmark support: random routing tables shaped like real ones.
pub mod gen {
    use super::{mask, Route};

    /// The generator: `fastrand`'s, seeded (`Rng::with_seed`) for
    /// reproducible tables.
    pub use fastrand::Rng;

    /// Relative frequency of each prefix length (index = length) in a
    /// present-day BGP table (about 60% /24, then /22, /23, /21, /20, ...),
    /// with a little weight everywhere so that every length occurs.
    pub const LENGTH_WEIGHTS: [u32; 33] = [
        1, 1, 1, 1, 1, 1, 1, 2, // /0../7
        20, 5, 10, 25, 60, 150, 300, 550, // /8../15
        1300, 900, 1600, 3200, 4200, 5500, 11000, 9000, // /16../23
        58000, 150, 150, 100, 100, 100, 100, 50,  // /24../31
        300, // /32
    ];

    /// A prefix length drawn from [`LENGTH_WEIGHTS`].
    pub fn random_len(rng: &mut Rng) -> u8 {
        let total: u32 = LENGTH_WEIGHTS.iter().sum();
        let mut x = rng.u32(..total);
        for (l, &w) in LENGTH_WEIGHTS.iter().enumerate() {
            if x < w {
                return l as u8;
            }
            x -= w;
        }
        24
    }

    /// A random route with a length drawn from [`LENGTH_WEIGHTS`], one of
    /// `nports` ports and one of `ngws` gateways (or none).
    pub fn random_route(rng: &mut Rng, nports: u32, ngws: u32) -> Route {
        let len = random_len(rng);
        let addr = rng.u32(..) & mask(len);
        let g = rng.u32(..=ngws);
        let gw = if g == 0 { 0 } else { 0x0a00_0000 | g };
        Route::new(addr, len, gw, rng.u32(..nports))
    }

    /// An address inside `r` (random host bits).
    pub fn addr_in(rng: &mut Rng, r: &Route) -> u32 {
        r.addr | (rng.u32(..) & !mask(r.len))
    }
}

#[cfg(test)]
mod tests {
    use super::gen::{addr_in, random_route};
    use super::*;
    use crate::test_kit::Rng;

    /// Reference longest-prefix match: probe every length, longest first.
    struct Reference {
        map: HashMap<(u32, u8), NextHop>,
    }

    impl Reference {
        fn new() -> Self {
            Reference {
                map: HashMap::new(),
            }
        }
        fn insert(&mut self, r: Route) {
            self.map.insert((r.addr, r.len), r.hop());
        }
        fn remove(&mut self, a: u32, l: u8) -> bool {
            self.map.remove(&(a & mask(l), l)).is_some()
        }
        fn lookup(&self, a: u32) -> Option<NextHop> {
            (0..=32u8)
                .rev()
                .find_map(|l| self.map.get(&(a & mask(l), l)).copied())
        }
    }

    /// Linear scan over a route list: the plainest possible definition.
    fn linear(routes: &[Route], a: u32) -> Option<NextHop> {
        let mut best: Option<&Route> = None;
        for r in routes {
            if a & mask(r.len) == r.addr && best.is_none_or(|b| r.len > b.len) {
                best = Some(r);
            }
        }
        best.map(|r| r.hop())
    }

    #[test]
    fn mask_values() {
        assert_eq!(mask(0), 0);
        assert_eq!(mask(1), 0x8000_0000);
        assert_eq!(mask(24), 0xffff_ff00);
        assert_eq!(mask(32), u32::MAX);
    }

    #[test]
    fn small_table_by_hand() {
        let mut t = Lpm::new();
        let ip = |a: u8, b: u8, c: u8, d: u8| u32::from_be_bytes([a, b, c, d]);
        assert_eq!(t.lookup(ip(1, 2, 3, 4)), None);
        t.insert(Route::new(0, 0, ip(18, 26, 4, 1), 1));
        t.insert(Route::new(ip(18, 26, 4, 0), 24, 0, 2));
        t.insert(Route::new(ip(18, 26, 4, 24), 32, 0, 0));
        t.insert(Route::new(ip(18, 26, 4, 128), 25, 0, 3));
        t.insert(Route::new(ip(18, 0, 0, 0), 8, 0, 4));
        let hop = |gw, port| Some(NextHop { gw, port });
        assert_eq!(t.lookup(ip(1, 2, 3, 4)), hop(ip(18, 26, 4, 1), 1));
        assert_eq!(t.lookup(ip(18, 26, 4, 24)), hop(0, 0));
        assert_eq!(t.lookup(ip(18, 26, 4, 25)), hop(0, 2));
        assert_eq!(t.lookup(ip(18, 26, 4, 200)), hop(0, 3));
        assert_eq!(t.lookup(ip(18, 26, 5, 1)), hop(0, 4));
        assert_eq!(t.lookup(ip(18, 255, 5, 1)), hop(0, 4));
        assert_eq!(t.lookup(ip(19, 0, 0, 1)), hop(ip(18, 26, 4, 1), 1));
        assert_eq!(t.len(), 5);
        // Replace, then remove: the covering routes come back.
        let old = t.insert(Route::new(ip(18, 26, 4, 0), 24, ip(9, 9, 9, 9), 5));
        assert_eq!(old, Some(Route::new(ip(18, 26, 4, 0), 24, 0, 2)));
        assert_eq!(t.lookup(ip(18, 26, 4, 25)), hop(ip(9, 9, 9, 9), 5));
        assert_eq!(t.lookup(ip(18, 26, 4, 24)), hop(0, 0));
        assert!(t.remove(ip(18, 26, 4, 0), 24).is_some());
        assert_eq!(t.lookup(ip(18, 26, 4, 25)), hop(0, 4));
        assert_eq!(t.lookup(ip(18, 26, 4, 24)), hop(0, 0));
        assert!(t.remove(ip(18, 26, 4, 0), 24).is_none());
        assert!(t.remove(0, 0).is_some());
        assert_eq!(t.lookup(ip(1, 2, 3, 4)), None);
        assert_eq!(t.lookup(ip(18, 26, 4, 200)), hop(0, 3));
        for (a, l) in [
            (ip(18, 26, 4, 24), 32),
            (ip(18, 26, 4, 128), 25),
            (ip(18, 0, 0, 0), 8),
        ] {
            assert!(t.remove(a, l).is_some());
        }
        assert!(t.is_empty());
        assert_eq!(t.chunks_in_use(), 0);
        assert_eq!(t.slots.len(), L1);
        assert!(t.slots.iter().all(|&e| e == 0));
        assert_eq!(t.hop_ids.len(), 0);
    }

    #[test]
    fn host_bits_are_ignored() {
        let mut t = Lpm::new();
        t.insert(Route::new(0x0a01_0203, 8, 0, 1));
        assert_eq!(t.get(0x0a00_0000, 8).unwrap().addr, 0x0a00_0000);
        assert_eq!(t.lookup(0x0aff_ffff).unwrap().port, 1);
        assert!(t.remove(0x0a09_0909, 8).is_some());
    }

    #[test]
    fn matches_linear_scan_small() {
        let mut rng = Rng::new(7);
        let routes: Vec<Route> = {
            let mut m = HashMap::new();
            for _ in 0..2000 {
                let r = random_route(&mut rng.0, 8, 4);
                m.insert((r.addr, r.len), r);
            }
            m.into_values().collect()
        };
        let mut t = Lpm::new();
        for r in &routes {
            t.insert(*r);
        }
        for i in 0..20_000 {
            let a = if i % 2 == 0 {
                rng.next_u32()
            } else {
                let k = rng.below(routes.len());
                addr_in(&mut rng.0, &routes[k])
            };
            assert_eq!(t.lookup(a), linear(&routes, a), "addr {a:08x}");
        }
    }

    #[test]
    fn matches_reference_100k() {
        let mut rng = Rng::new(42);
        let mut t = Lpm::new();
        let mut reference = Reference::new();
        let mut routes = Vec::new();
        for _ in 0..100_000 {
            let r = random_route(&mut rng.0, 16, 40);
            t.insert(r);
            reference.insert(r);
            routes.push(r);
        }
        assert_eq!(t.len(), reference.map.len());
        let mut hits = 0;
        for i in 0..100_000 {
            let a = if i % 2 == 0 {
                rng.next_u32()
            } else {
                let k = rng.below(routes.len());
                addr_in(&mut rng.0, &routes[k])
            };
            let want = reference.lookup(a);
            hits += want.is_some() as usize;
            assert_eq!(t.lookup(a), want, "addr {a:08x}");
        }
        assert!(hits > 50_000, "lookups should mostly hit ({hits})");
        // The batched lookup agrees with the one-by-one lookup.
        let addrs: Vec<u32> = (0..10_007)
            .map(|i| {
                if i % 2 == 0 {
                    rng.next_u32()
                } else {
                    let k = rng.below(routes.len());
                    addr_in(&mut rng.0, &routes[k])
                }
            })
            .collect();
        let mut out = vec![0u32; addrs.len()];
        t.lookup_batch(&addrs, &mut out);
        for (&a, &i) in addrs.iter().zip(&out) {
            assert_eq!(i, t.lookup_index(a));
            assert_eq!((i != 0).then(|| t.hop(i)), reference.lookup(a));
        }
        // Every route's own address finds a route at least as specific.
        for r in routes.iter().take(10_000) {
            assert_eq!(t.lookup(r.addr), reference.lookup(r.addr));
        }
    }

    #[test]
    fn add_remove_interleavings() {
        let mut rng = Rng::new(99);
        let mut t = Lpm::new();
        let mut reference = Reference::new();
        let mut live: Vec<(u32, u8)> = Vec::new();
        for step in 0..60_000 {
            match rng.below(10) {
                0..=4 => {
                    // Clustered prefixes make overlaps (and chunk folds) common.
                    let mut r = random_route(&mut rng.0, 6, 3);
                    if rng.below(2) == 0 {
                        r = Route::new(0x0a00_0000 | (r.addr >> 12), r.len.max(8), r.gw, r.port);
                    }
                    if t.get(r.addr, r.len).is_none() {
                        live.push((r.addr, r.len));
                    }
                    t.insert(r);
                    reference.insert(r);
                }
                5..=8 if !live.is_empty() => {
                    let i = rng.below(live.len());
                    let (a, l) = live.swap_remove(i);
                    assert!(t.remove(a, l).is_some());
                    assert!(reference.remove(a, l));
                }
                _ => {
                    // Removing what is not there changes nothing.
                    let a = rng.next_u32();
                    let l = (rng.below(33)) as u8;
                    let present = reference.map.contains_key(&(a & mask(l), l));
                    if !present {
                        assert!(t.remove(a, l).is_none());
                    }
                }
            }
            if step % 500 == 0 {
                for _ in 0..200 {
                    let a = if rng.below(2) == 0 || live.is_empty() {
                        0x0a00_0000 | (rng.next_u32() >> 8)
                    } else {
                        let (pa, pl) = live[rng.below(live.len())];
                        pa | (rng.next_u32() & !mask(pl))
                    };
                    assert_eq!(t.lookup(a), reference.lookup(a), "step {step} addr {a:08x}");
                }
            }
        }
        for _ in 0..20_000 {
            let a = 0x0a00_0000 | (rng.next_u32() >> 8);
            assert_eq!(t.lookup(a), reference.lookup(a));
        }
        // Remove everything: the arena returns to one level, all empty.
        for (a, l) in live.drain(..) {
            assert!(t.remove(a, l).is_some());
        }
        assert!(t.is_empty());
        assert_eq!(t.chunks_in_use(), 0);
        assert_eq!(t.slots.len(), L1);
        assert!(t.slots.iter().all(|&e| e == 0));
        assert!(t.plens.iter().all(|&l| l == 0));
        assert!(t.hop_ids.is_empty());
    }

    #[test]
    fn chunks_fold_and_are_reused() {
        let mut t = Lpm::new();
        t.insert(Route::new(0x0a00_0000, 8, 0, 1));
        t.insert(Route::new(0x0a01_0200, 24, 0, 2));
        t.insert(Route::new(0x0a01_0280, 25, 0, 3));
        assert_eq!(t.chunks_in_use(), 2);
        t.remove(0x0a01_0280, 25);
        assert_eq!(t.chunks_in_use(), 1);
        assert_eq!(t.lookup(0x0a01_0281).unwrap().port, 2);
        t.insert(Route::new(0x0a02_0000, 20, 0, 4));
        assert_eq!(t.chunks_in_use(), 2);
        t.remove(0x0a01_0200, 24);
        assert_eq!(t.chunks_in_use(), 1);
        assert_eq!(t.lookup(0x0a01_0281).unwrap().port, 1);
        assert_eq!(t.lookup(0x0a02_0f01).unwrap().port, 4);
        assert_eq!(t.lookup(0x0a02_1001).unwrap().port, 1);
    }

    #[test]
    fn insertion_order_and_sorted_dumps() {
        let mut t = Lpm::new();
        t.insert(Route::new(0x0b00_0000, 8, 0, 1));
        t.insert(Route::new(0x0a00_0000, 8, 0, 2));
        t.insert(Route::new(0x0a00_0000, 16, 0, 3));
        t.insert(Route::new(0x0b00_0000, 8, 7, 4)); // replaced in place
        let order: Vec<_> = t
            .routes_in_insertion_order()
            .iter()
            .map(|r| r.port)
            .collect();
        assert_eq!(order, vec![4, 2, 3]);
        let sorted: Vec<_> = t.routes_sorted().iter().map(|r| r.port).collect();
        assert_eq!(sorted, vec![2, 3, 4]);
    }
}
