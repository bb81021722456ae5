//! # ClickyInfo
//!
//! ClickyInfo(...)
//!
//! Stores information for the Clicky graphical configuration viewer.
//!
//! Ports: none.
//!
//! Click's Clicky GUI reads its style sheets and display hints from this
//! element (`STYLE`, `CSS` and similar keywords). paraclick draws no
//! GUI: the element accepts any arguments, keeps them for its `config`
//! handler, and changes nothing about how packets are processed, so
//! configurations written for Clicky run unchanged.
//!
//! Handlers:
//! - `config` (read): the arguments, as configured.
//!
//! Example:
//!
//!     ClickyInfo(STYLE @import "style.ccss");

use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler};

pub struct ClickyInfo {
    config: String,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("ClickyInfo", "0/0", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ClickyInfo, String> {
    Ok(ClickyInfo {
        config: cx.config.trim().to_string(),
    })
}

impl Element for ClickyInfo {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("config", |e, _| e.config.clone())];
}

#[cfg(test)]
mod tests {
    use crate::test_kit::reg;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    #[test]
    fn accepts_anything_and_keeps_it() {
        let conf = "ci :: ClickyInfo(STYLE @import \"x.ccss\", CSS 'a { }');
                    ClickyInfo; Idle -> Discard;";
        let r = Router::from_str(conf, &reg(), 1).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(
            r.read_handler("ci.config").unwrap(),
            "STYLE @import \"x.ccss\", CSS 'a { }'"
        );
        // It has no ports.
        assert_err(Router::from_str("Idle -> ClickyInfo -> Discard;", &reg(), 1), "<config>:1:1: 'ClickyInfo@2' :: ClickyInfo has no input 0 (ClickyInfo has no inputs); <config>:1:9: 'ClickyInfo@2' :: ClickyInfo has no output 0 (ClickyInfo has no outputs)");
    }
}
