//! What the programs `paraclick build` writes use: the crates they name
//! types from, typed binding of elements, and the per-packet call of an
//! element whatever its kind. Not for hand-written code.

pub use paraclick_elements;
pub use paraclick_io;
pub use paraclick_packet;
pub use paraclick_runtime;

use paraclick_packet::Packet;
use paraclick_runtime::{Action, Cx, ElemRef, HopCode, Router, RoutingElement};

/// Element `name` of `r` as a `T`, at index `index` (what the program
/// was compiled for); an error says what differs.
pub fn bind<T: 'static>(r: &Router, name: &str, index: usize) -> Result<ElemRef<T>, String> {
    let Some(e) = r.element_ref::<T>(name) else {
        return Err(match r.rust_type_of(name) {
            None => format!("element '{name}' is not in the configuration"),
            Some(t) => format!(
                "element '{name}' is a {t}, compiled as a {}",
                std::any::type_name::<T>()
            ),
        });
    };
    if e.index() != index {
        return Err(format!(
            "element '{name}' is element {} of the configuration, compiled as element {index}",
            e.index()
        ));
    }
    Ok(e)
}

/// An element to run one packet through: `(&Hop1(e)).hop(cx, p)` calls
/// [`Action::action`] if `e` is an action, else
/// [`RoutingElement::route_packet`] (method lookup tries the receiver
/// `&Hop1` before `&&Hop1`), statically, coded as the fused loop codes it.
pub struct Hop1<'a, T>(pub &'a T);

/// [`Hop1`] of an action.
pub trait ViaAction {
    fn hop(&self, cx: &mut Cx<'_>, p: &mut Packet) -> HopCode;
}

impl<T: Action> ViaAction for Hop1<'_, T> {
    #[inline(always)]
    fn hop(&self, cx: &mut Cx<'_>, p: &mut Packet) -> HopCode {
        Action::action(self.0, cx, p).code()
    }
}

/// [`Hop1`] of an element routing single packets.
pub trait ViaRouting {
    fn hop(&self, cx: &mut Cx<'_>, p: &mut Packet) -> HopCode;
}

impl<T: RoutingElement> ViaRouting for &Hop1<'_, T> {
    #[inline(always)]
    fn hop(&self, cx: &mut Cx<'_>, p: &mut Packet) -> HopCode {
        RoutingElement::route_packet(self.0, cx, p).code()
    }
}
