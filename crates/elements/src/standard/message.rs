//! # Message
//!
//! Message(MESSAGE [, TYPE])
//!
//! Prints a message when configured.
//!
//! Ports: none.
//!
//! Prints MESSAGE (a string) on standard error as the router is
//! configured, as documentation a configuration can carry. TYPE is
//! `MESSAGE` (the default: `NAME: MESSAGE`), `WARNING` (a configuration
//! warning, `NAME :: Message: warning: MESSAGE`; not printed with `-w`) or
//! `ERROR`, which makes configuration fail with MESSAGE as the error. In
//! Click's error form (`--errors click`) both print as Click's do:
//! `FILE:LINE: While configuring 'NAME :: Message':` and the message
//! indented.
//!
//! Handlers:
//! - `message` (read): MESSAGE.
//!
//! Example:
//!
//!     Message("This configuration is deprecated; use new.click", WARNING);
//!
//! # Error
//!
//! Error(...)
//!
//! Always fails.
//!
//! Ports: any number of inputs and outputs. Processing: agnostic.
//!
//! Accepts any configuration string and any connections, then fails to
//! initialize, so the router never runs. Useful to stop a configuration
//! from starting without other, spurious error messages.
//!
//! Example:
//!
//!     Idle -> Error -> Discard;

use paraclick_runtime::{ClassSpec, ConfigCx, Element, Handler, InitCx};

pub struct Message {
    text: String,
}

pub struct ErrorElement;

pub fn spec() -> ClassSpec {
    ClassSpec::element("Message", "0/0", "a", make).stateless()
}

pub fn error_spec() -> ClassSpec {
    ClassSpec::element("Error", "-/-", "a", |cx: &mut ConfigCx<'_>| {
        let mut a = cx.args();
        a.rest_all();
        a.complete().map(|_| ErrorElement)
    })
    .stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<Message, String> {
    let mut a = cx.args();
    let text = a.read_mp::<String>("MESSAGE");
    let kind = a
        .read_p::<String>("TYPE")
        .unwrap_or_else(|| "MESSAGE".into());
    a.complete()?;
    match kind.to_ascii_uppercase().as_str() {
        "MESSAGE" => cx.message(&text),
        "WARNING" => cx.warn(&text),
        "ERROR" => return Err(text),
        _ => {
            return Err(format!(
                "TYPE must be MESSAGE, WARNING or ERROR, not '{kind}'"
            ))
        }
    }
    Ok(Message { text })
}

impl Element for Message {
    const HANDLERS: &'static [Handler<Self>] = &[Handler::read("message", |e, _| e.text.clone())];
}

impl Element for ErrorElement {
    fn initialize(&self, _ix: &mut InitCx<'_>) -> Result<(), String> {
        Err("Error element: this configuration always fails".into())
    }
}

#[cfg(test)]
mod tests {
    use crate::test_kit::reg;
    use paraclick_runtime::testing::assert_err;
    use paraclick_runtime::Router;

    #[test]
    fn message_types() {
        let r = Router::from_str("m :: Message(\"hello, world\");", &reg(), 1).unwrap();
        assert_eq!(r.read_handler("m.message").unwrap(), "hello, world");
        assert!(Router::from_str("Message(old, WARNING);", &reg(), 1).is_ok());
        let e = Router::from_str("Message(\"do not use\", ERROR);", &reg(), 1)
            .err()
            .unwrap();
        assert!(e.iter().any(|d| d.message.contains("do not use")), "{e:?}");
        assert_err(Router::from_str("Message(x, LOUD);", &reg(), 1), "<config>:1:1: Message@1 :: Message: TYPE must be MESSAGE, WARNING or ERROR, not 'LOUD'");
        assert_err(
            Router::from_str("Message;", &reg(), 1),
            "<config>:1:1: Message@1 :: Message: missing mandatory MESSAGE argument",
        );
    }

    #[test]
    fn error_always_fails_whatever_its_config() {
        assert!(Router::from_str("Idle -> Null -> Discard;", &reg(), 1).is_ok());
        let e = Router::from_str(
            "Idle -> Error(any, KEY 1) -> [1]x :: Error;\nIdle -> [0]x;",
            &reg(),
            1,
        )
        .err()
        .unwrap();
        assert!(
            e.iter().any(|d| d.message.contains("always fails")),
            "{e:?}"
        );
    }
}
