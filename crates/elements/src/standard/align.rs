//! # Align
//!
//! Align(MODULUS, OFFSET)
//!
//! Aligns packet data.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! Moves each packet's data, where needed, so that its first byte lies
//! OFFSET bytes past a MODULUS-byte boundary in memory. The data moves
//! within its buffer (into the headroom or the tailroom) and the header
//! annotations move with it; a packet with no room is copied into a new
//! buffer, or dropped (counted) if no buffer is available. Packet contents
//! and annotations are unchanged.
//!
//! Arguments:
//! - `MODULUS` (integer, mandatory): 2, 4 or 8.
//! - `OFFSET` (integer, mandatory): less than MODULUS.
//!
//! Click's click-align tool inserts Align elements where needed.
//!
//! Example:
//!
//!     ... -> Align(4, 2) -> ...

use paraclick_packet::Packet;
use paraclick_runtime::{Action, ClassSpec, ConfigCx, Cx, Verdict};

pub struct Align {
    modulus: usize,
    offset: usize,
}

/// Why this element drops packets (its `drop_reasons`).
const DROP_REASONS: &[&str] = &["cannot align"];

pub fn spec() -> ClassSpec {
    ClassSpec::action("Align", "1/1", "a", make)
        .drop_reasons(DROP_REASONS)
        .stateless()
        .click_alignment(paraclick_runtime::ClickAlignment::AlignsToArgs)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Align, String> {
    let mut a = cx.args();
    let modulus = a.read_mp::<usize>("MODULUS");
    let offset = a.read_mp::<usize>("OFFSET");
    a.complete()?;
    if ![2, 4, 8].contains(&modulus) {
        return Err("MODULUS must be 2, 4 or 8".into());
    }
    if offset >= modulus {
        return Err("OFFSET must be less than MODULUS".into());
    }
    Ok(Align { modulus, offset })
}

/// How far the data start is past the wanted alignment (0 if aligned).
fn misalign(p: &Packet, m: usize, off: usize) -> usize {
    (p.data().as_ptr() as usize + m - off) % m
}

/// Moves the data `back` bytes towards the buffer start (negative:
/// towards the end), keeping header annotations on the same bytes.
fn shift(p: &mut Packet, back: isize) -> Result<(), ()> {
    let mac = p.mac_header_offset();
    let net = p.network_header_offset();
    let nlen = p.network_header_length();
    let len = p.len();
    if back > 0 {
        let b = back as usize;
        p.push(b).map_err(|_| ())?;
        p.data_mut().copy_within(b..b + len, 0);
        p.take(b);
    } else {
        let f = (-back) as usize;
        p.put(f).map_err(|_| ())?;
        p.data_mut().copy_within(0..len, f);
        p.pull(f);
    }
    p.clear_headers();
    if let Some(m) = mac.filter(|&m| m >= 0) {
        p.set_mac_header(m as usize);
    }
    if let (Some(n), Some(l)) = (net.filter(|&n| n >= 0), nlen) {
        p.set_network_header(n as usize, l);
    }
    Ok(())
}

impl Action for Align {
    fn action(&self, _cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let (m, off) = (self.modulus, self.offset);
        let d = misalign(p, m, off);
        if d == 0 {
            return Verdict::Out(0);
        }
        let r = if p.headroom() >= d {
            shift(p, d as isize)
        } else if p.tailroom() >= m - d {
            shift(p, -((m - d) as isize))
        } else {
            // Grow the headroom (a new buffer), then align within it.
            p.push(m)
                .map_err(|_| ())
                .map(|_| p.pull(m))
                .and_then(|_| shift(p, misalign(p, m, off) as isize))
        };
        match r {
            Ok(()) if misalign(p, m, off) == 0 => Verdict::Out(0),
            _ => Verdict::DropFor(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::*;

    fn addr(p: &paraclick_packet::Packet) -> usize {
        p.data().as_ptr() as usize
    }

    #[test]
    fn aligns_and_keeps_data_and_headers() {
        for (m, off) in [(2, 0), (4, 2), (8, 0), (8, 5)] {
            let h = harness(&format!("Align({m}, {off})"), 1);
            let mut sent = Vec::new();
            for skip in 0..8 {
                let data: Vec<u8> = (0..60u8).collect();
                let mut p = pkt(&data);
                p.pull(skip);
                p.set_mac_header(0);
                p.set_network_header(14, 20);
                p.anno_mut().paint = skip as u8;
                sent.push(p.data().to_vec());
                h.push(0, vec![p]);
            }
            let out = h.output(0);
            assert_eq!(out.len(), 8);
            for (p, want) in out.iter().zip(&sent) {
                assert_eq!(addr(p) % m, off, "Align({m}, {off})");
                assert_eq!(p.data(), &want[..]);
                assert_eq!(p.mac_header_offset(), Some(0));
                assert_eq!(p.network_header_offset(), Some(14));
                assert_eq!(p.network_header_length(), Some(20));
                assert_eq!(p.transport_header().unwrap(), &want[34..]);
            }
            assert_eq!(h.drops(), 0);
        }
    }

    #[test]
    fn bad_config() {
        assert_err(
            try_harness("Align(3, 0)", 1),
            "e :: Align: MODULUS must be 2, 4 or 8",
        );
        assert_err(
            try_harness("Align(4, 4)", 1),
            "e :: Align: OFFSET must be less than MODULUS",
        );
        assert_err(
            try_harness("Align(4)", 1),
            "e :: Align: missing mandatory OFFSET argument",
        );
        assert!(try_harness("Align(4, 1)", 1).is_ok());
    }
}
