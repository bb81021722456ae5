//! # ScheduleInfo
//!
//! ScheduleInfo(ELEMENT PARAM, ...)
//!
//! Specifies scheduling parameters.
//!
//! Ports: none.
//!
//! Each argument is an element name and a real number, its scheduling
//! parameter: how often the element's tasks should run relative to
//! others (an element with 2 runs four times as often as one with 0.5;
//! the default is 1). A ScheduleInfo inside a compound element names that
//! compound's components; an outer one naming the compound scales them
//! all. paraclick checks the arguments (a name, a positive number) and
//! reports each element's resulting parameter in `parameters`, but its
//! scheduler gives every task the same share; use `StaticThreadSched` to
//! place tasks.
//!
//! Handlers:
//! - `parameters` (read): one `NAME PARAM` line per argument, the name
//!   with this element's compound prefix.
//!
//! Example:
//!
//!     ScheduleInfo(src1 2, src2 0.5);

use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler};

pub struct ScheduleInfo {
    entries: Vec<(String, f64)>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("ScheduleInfo", "0/0", "a", make).stateless()
}

fn parse(arg: &str) -> Result<(String, f64), String> {
    let w: Vec<&str> = arg.split_whitespace().collect();
    let [name, param] = w[..] else {
        return Err(format!("'{arg}': expected ELEMENT PARAM"));
    };
    match param.parse::<f64>() {
        Ok(p) if p.is_finite() && p > 0.0 => Ok((name.to_string(), p)),
        _ => Err(format!("'{arg}': PARAM must be a positive real number")),
    }
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ScheduleInfo, String> {
    let prefix = match cx.name.rfind('/') {
        Some(i) => &cx.name[..=i],
        None => "",
    };
    let mut a = cx.args();
    let mut entries = Vec::new();
    for arg in a.rest_all() {
        match parse(&arg) {
            Ok((n, p)) => entries.push((format!("{prefix}{n}"), p)),
            Err(e) => a.error(e),
        }
    }
    a.complete()?;
    Ok(ScheduleInfo { entries })
}

impl Element for ScheduleInfo {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("parameters", |e, _| {
        e.entries
            .iter()
            .map(|(n, p)| format!("{n} {}\n", crate::util::fmt_rate(*p)))
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
        let conf = "elementclass C { i :: Idle -> output; s :: ScheduleInfo(i 0.5) }\n\
                    c :: C -> Discard; s :: ScheduleInfo(c 4, other 1.25);";
        let r = Router::from_str(conf, &reg(), 1).unwrap();
        assert_eq!(r.read_handler("s.parameters").unwrap(), "c 4\nother 1.25\n");
        assert_eq!(r.read_handler("c/s.parameters").unwrap(), "c/i 0.5\n");
        for (bad, want) in [
            ("x", "<config>:1:1: ScheduleInfo@1 :: ScheduleInfo: 'x': expected ELEMENT PARAM"),
            ("x 0", "<config>:1:1: ScheduleInfo@1 :: ScheduleInfo: 'x 0': PARAM must be a positive real number"),
            ("x -1", "<config>:1:1: ScheduleInfo@1 :: ScheduleInfo: 'x -1': PARAM must be a positive real number"),
            ("x y", "<config>:1:1: ScheduleInfo@1 :: ScheduleInfo: 'x y': PARAM must be a positive real number"),
            ("x 1 2", "<config>:1:1: ScheduleInfo@1 :: ScheduleInfo: 'x 1 2': expected ELEMENT PARAM"),
        ] {
            let conf = format!("ScheduleInfo({bad});");
            assert_err(Router::from_str(&conf, &reg(), 1), want);
        }
    }
}
