//! # AnnotationInfo
//!
//! AnnotationInfo(NAME OFFSET \[SIZE], ... [, keyword CHECK_OVERLAP ANNO...])
//!
//! Defines names for packet annotations.
//!
//! Ports: none.
//!
//! Each argument `NAME OFFSET [SIZE]` names the SIZE bytes (1 to 8,
//! default 1) of the packet's user annotation area that start at byte
//! OFFSET (the area is 24 bytes: OFFSET plus SIZE is at most 24). An
//! element argument that takes an annotation accepts the names that fit
//! it: a one-byte name where Paint, PaintTee, CheckPaint and PaintSwitch
//! take `ANNO`, a four-byte one for AggregatePacketCounter's `ANNO`.
//! (paraclick's named annotations, such as PAINT, are fields of their own;
//! numeric offsets, and so AnnotationInfo's names, address the user area.)
//! AnnotationInfo is configured before the elements that use its names.
//!
//! The names paraclick defines itself may not be redefined: `PAINT`,
//! `AGGREGATE`, `DST_IP`, `DST_IP6`, `FIRST_TIMESTAMP`, `PACKET_NUMBER`,
//! `SEQUENCE_NUMBER`, `EXTRA_PACKETS`, `EXTRA_LENGTH`, `ICMP_PARAMPROB`,
//! `VLAN_TCI`, `PACKET_TYPE`, `TIMESTAMP`, `NONE`.
//!
//! Keywords:
//! - `CHECK_OVERLAP` (annotation names, may be repeated): configuration
//!   fails if any two of the named annotations overlap. Besides the names
//!   defined here, `DST_IP6` (user bytes 0-15), `FIRST_TIMESTAMP` (16-23)
//!   and `PACKET_NUMBER` (0-7) occupy the user area; the other built-in
//!   names are fields of their own, overlapping nothing.
//!
//! Example:
//!
//!     AnnotationInfo(COLOR2 3 1, CHECK_OVERLAP COLOR2 FIRST_TIMESTAMP);
//!     ... -> Paint(5, COLOR2) -> ...

use paraclick_packet::anno::USER_ANNO_SIZE;
use paraclick_runtime::args::AnnoName;
use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler};

/// Names paraclick defines, and the user-area bytes each occupies (`None`:
/// a field of its own).
const BUILTIN: &[(&str, Option<(usize, usize)>)] = &[
    ("PAINT", None),
    ("AGGREGATE", None),
    ("DST_IP", None),
    ("DST_IP6", Some((0, 16))),
    ("FIRST_TIMESTAMP", Some((16, 8))),
    ("PACKET_NUMBER", Some((0, 8))),
    ("SEQUENCE_NUMBER", None),
    ("EXTRA_PACKETS", None),
    ("EXTRA_LENGTH", None),
    ("ICMP_PARAMPROB", None),
    ("VLAN_TCI", None),
    ("PACKET_TYPE", None),
    ("TIMESTAMP", None),
    ("NONE", None),
];

fn builtin(name: &str) -> Option<Option<(usize, usize)>> {
    let n = name.strip_suffix("_ANNO").unwrap_or(name);
    BUILTIN.iter().find(|(b, _)| *b == n).map(|(_, r)| *r)
}

pub struct AnnotationInfo {
    names: Vec<AnnoName>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("AnnotationInfo", "0/0", "a", make)
        .phase(-100)
        .stateless()
}

fn parse(arg: &str) -> Result<AnnoName, String> {
    let w: Vec<&str> = arg.split_whitespace().collect();
    let bad = || format!("'{arg}': expected NAME OFFSET [SIZE]");
    if w.len() != 2 && w.len() != 3 {
        return Err(bad());
    }
    let name = w[0];
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(format!("'{arg}': bad name '{name}'"));
    }
    if builtin(name).is_some() {
        return Err(format!("'{name}' is predefined and may not be redefined"));
    }
    let offset: usize = w[1].parse().map_err(|_| bad())?;
    let size: usize = match w.get(2) {
        Some(s) => s.parse().map_err(|_| bad())?,
        None => 1,
    };
    if !(1..=8).contains(&size) {
        return Err(format!("'{arg}': SIZE must be 1 to 8"));
    }
    if offset + size > USER_ANNO_SIZE {
        return Err(format!(
            "'{arg}': bytes {offset}..{} lie outside the {USER_ANNO_SIZE}-byte user annotation area",
            offset + size
        ));
    }
    Ok(AnnoName {
        name: name.to_string(),
        offset,
        size,
    })
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AnnotationInfo, String> {
    let mut a = cx.args();
    let checks = a.read_all::<String>("CHECK_OVERLAP");
    let mut names = Vec::new();
    for arg in a.rest_all() {
        match parse(&arg) {
            Ok(n) => names.push(n),
            Err(e) => a.error(e),
        }
    }
    a.complete()?;
    // The ranges CHECK_OVERLAP names: this element's names first, then
    // earlier AnnotationInfos', then the built-in ones.
    let range = |n: &str| -> Result<Option<(usize, usize)>, String> {
        if let Some(d) = names.iter().rev().find(|d| d.name == n) {
            return Ok(Some((d.offset, d.size)));
        }
        if let Some(r) = cx.env.anno_name(n) {
            return Ok(Some(r));
        }
        builtin(n).ok_or_else(|| format!("CHECK_OVERLAP: unknown annotation '{n}'"))
    };
    for list in &checks {
        let ws: Vec<&str> = list.split_whitespace().collect();
        let rs = ws.iter().map(|w| range(w)).collect::<Result<Vec<_>, _>>()?;
        for i in 0..ws.len() {
            for j in i + 1..ws.len() {
                if let (Some((a0, an)), Some((b0, bn))) = (rs[i], rs[j]) {
                    if a0 < b0 + bn && b0 < a0 + an {
                        return Err(format!("annotations '{}' and '{}' overlap", ws[i], ws[j]));
                    }
                }
            }
        }
    }
    cx.env.annos.extend(names.iter().cloned());
    Ok(AnnotationInfo { names })
}

impl Element for AnnotationInfo {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read_param("lookup", |e, param, _| {
        let n = param.ok_or("lookup needs a NAME")?.trim();
        e.names
            .iter()
            .rev()
            .find(|d| d.name == n)
            .map(|d| format!("{} {}", d.offset, d.size))
            .ok_or_else(|| format!("no annotation named '{n}'"))
    })];
}

#[cfg(test)]
mod tests {
    use crate::analysis::packet_number;
    use crate::test_kit::*;

    #[test]
    fn names_reach_the_annotation_arguments() {
        let h = harness("Paint(9, COLOR2); AnnotationInfo(COLOR2 3, MY4 12 4)", 1);
        h.push(0, vec![pkt(&[0; 20])]);
        let p = &h.output(0)[0];
        assert_eq!(p.anno().user[3], 9);
        assert_eq!(p.anno().paint, 0);
        let r = build(
            &reg(),
            "a :: AnnotationInfo(MY4 4 4); TestSource -> c :: AggregatePacketCounter(ANNO MY4) -> Discard",
        );
        let mut q = pkt(&[0; 20]);
        crate::analysis::set_packet_number(&mut q, 1, 77);
        assert_eq!(packet_number(&q, 1), 77);
        r.push_into("c", 0, vec![q].into()).unwrap();
        assert_eq!(handler(&r, "c.received 0"), "77\n");
        assert_eq!(handler(&r, "a.lookup MY4"), "4 4");
        // A one-byte argument refuses a four-byte name.
        assert_err(
            try_harness("Paint(1, MY4); AnnotationInfo(MY4 4 4)", 1),
            "one-byte annotation",
        );
    }

    #[test]
    fn bad_definitions_and_overlaps() {
        for (conf, want) in [
            ("AnnotationInfo(PAINT 3)", "'PAINT' is predefined"),
            (
                "AnnotationInfo(X 23 2)",
                "outside the 24-byte user annotation area",
            ),
            ("AnnotationInfo(X 1 9)", "SIZE must be 1 to 8"),
            ("AnnotationInfo(X)", "expected NAME OFFSET [SIZE]"),
            ("AnnotationInfo(9X 1)", "bad name '9X'"),
            (
                "AnnotationInfo(A 0 4, B 2 2, CHECK_OVERLAP A B)",
                "annotations 'A' and 'B' overlap",
            ),
            (
                "AnnotationInfo(A 16 1, CHECK_OVERLAP PAINT A FIRST_TIMESTAMP)",
                "annotations 'A' and 'FIRST_TIMESTAMP' overlap",
            ),
            (
                "AnnotationInfo(A 0, CHECK_OVERLAP A Z)",
                "unknown annotation 'Z'",
            ),
        ] {
            assert_err(try_build(&reg(), conf), want);
        }
        // Disjoint: fine.
        build(
            &reg(),
            "AnnotationInfo(A 8 4, B 12 4, CHECK_OVERLAP A B PAINT FIRST_TIMESTAMP)",
        );
    }
}
