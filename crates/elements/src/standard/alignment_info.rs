//! # AlignmentInfo
//!
//! AlignmentInfo(ELEMENT [MODULUS OFFSET ...], ...)
//!
//! Specifies the packet alignment elements can expect.
//!
//! Ports: none.
//!
//! Each argument names an element followed by zero or more MODULUS OFFSET
//! pairs: packets arriving on the element's nth input start OFFSETn bytes
//! past a MODULUSn-byte boundary. Click's click-align tool writes this
//! element. paraclick's elements do not depend on alignment, so the
//! information is checked (MODULUS a power of two, OFFSET below it) and
//! kept for the `alignment` handler, but changes no processing.
//!
//! Handlers:
//! - `alignment` (read): one line per argument, as configured.
//!
//! Example:
//!
//!     AlignmentInfo(c 4 2, ip 4 0 4 0);

use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler};

pub struct AlignmentInfo {
    entries: Vec<(String, Vec<(u32, u32)>)>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("AlignmentInfo", "0/0", "a", make).stateless()
}

fn parse(arg: &str) -> Result<(String, Vec<(u32, u32)>), String> {
    let mut words = arg.split_whitespace();
    let name = words.next().ok_or("empty argument")?.to_string();
    let nums: Vec<&str> = words.collect();
    if !nums.len().is_multiple_of(2) {
        return Err(format!("'{arg}': expected ELEMENT [MODULUS OFFSET]..."));
    }
    let mut pairs = Vec::new();
    for w in nums.chunks(2) {
        let m: u32 = w[0].parse().map_err(|_| format!("'{arg}': bad MODULUS"))?;
        let o: u32 = w[1].parse().map_err(|_| format!("'{arg}': bad OFFSET"))?;
        if !m.is_power_of_two() || o >= m {
            return Err(format!(
                "'{arg}': MODULUS must be a power of two and OFFSET below it"
            ));
        }
        pairs.push((m, o));
    }
    Ok((name, pairs))
}

fn make(cx: &mut ConfigCx<'_>) -> Result<AlignmentInfo, String> {
    let mut a = cx.args();
    let mut entries = Vec::new();
    for arg in a.rest_all() {
        match parse(&arg) {
            Ok(e) => entries.push(e),
            Err(e) => a.error(e),
        }
    }
    a.complete()?;
    Ok(AlignmentInfo { entries })
}

impl Element for AlignmentInfo {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("alignment", |e, _| {
        e.entries
            .iter()
            .map(|(n, ps)| {
                let mut s = n.clone();
                for (m, o) in ps {
                    s.push_str(&format!(" {m} {o}"));
                }
                s + "\n"
            })
            .collect()
    })];
}

#[cfg(test)]
mod tests {
    use crate::test_kit::reg;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    #[test]
    fn parses_and_validates() {
        let r = Router::from_str("a :: AlignmentInfo(c 4 2, ip 4 0 8 4, x);", &reg(), 1).unwrap();
        assert_eq!(
            r.read_handler("a.alignment").unwrap(),
            "c 4 2\nip 4 0 8 4\nx\n"
        );
        for (bad, want) in [
            ("c 4", "<config>:1:1: AlignmentInfo@1 :: AlignmentInfo: 'c 4': expected ELEMENT [MODULUS OFFSET]..."),
            ("c 3 0", "<config>:1:1: AlignmentInfo@1 :: AlignmentInfo: 'c 3 0': MODULUS must be a power of two and OFFSET below it"),
            ("c 4 4", "<config>:1:1: AlignmentInfo@1 :: AlignmentInfo: 'c 4 4': MODULUS must be a power of two and OFFSET below it"),
            ("c four 0", "<config>:1:1: AlignmentInfo@1 :: AlignmentInfo: 'c four 0': bad MODULUS"),
        ] {
            let conf = format!("AlignmentInfo({bad});");
            assert_err(Router::from_str(&conf, &reg(), 1), want);
        }
    }
}
