//! What an element provides to others, in the spirit of Click's `cast()`:
//! an element finds another through an interface the other provides (a
//! trait, or a shared value such as `Arc<SaTable>`), not through its
//! concrete type, so the two files need not import each other.
//!
//! The provider says what it offers in its `provide` method
//! ([`crate::Element::provide`], [`crate::Action::provide`]), most simply
//! with [`provide!`](macro@crate::provide); the asker calls
//! [`InitCx::cast`](crate::InitCx::cast):
//!
//! ```ignore
//! // rx.rs: the interface, beside its users.
//! pub trait RxClaims { fn claims(&self) -> Vec<QueueClaim<'_>>; }
//! // from_device.rs: FromDevice provides it.
//! impl Element for FromDevice {
//!     fn provide(&self, want: TypeId) -> Option<&'static dyn Any> {
//!         paraclick_runtime::provide!(want, FromDevice, dyn RxClaims => |d| d)
//!     }
//! }
//! // rx.rs again: any element that provides it.
//! if let Some(q) = ix.cast::<dyn RxClaims>(i) { q.claims() }
//! ```
//!
//! Type-safe without `unsafe`: the provider answers with an [`Interface`]
//! for exactly the asked type, whose function takes the element (as
//! [`crate::Node::as_any`] gives it) back to `&T` by a checked downcast.

use std::any::{Any, TypeId};

/// From an element to the `T` it provides (`None` if it has none now,
/// say a RadixIPsecLookup without inline security associations).
pub type CastFn<T> = for<'a> fn(&'a dyn Any) -> Option<&'a T>;

/// The interface `T` (a trait object type such as `dyn RxClaims`, or a
/// shared value's type) as one element class provides it.
pub struct Interface<T: ?Sized + 'static>(pub CastFn<T>);

impl<T: ?Sized + 'static> Interface<T> {
    /// The key a `provide` method is asked with for `T`.
    pub fn key() -> TypeId {
        TypeId::of::<Interface<T>>()
    }
}

/// Applies the interface `want` asks for, if `node` provides it.
pub(crate) fn cast<T: ?Sized + 'static>(node: &dyn crate::Node) -> Option<&T> {
    let i = node.provide(Interface::<T>::key())?;
    let i = i.downcast_ref::<Interface<T>>()?;
    (i.0)(node.as_any())
}

/// The body of a `provide` method: for each `TYPE => |e| EXPR`, when
/// `want` asks for `TYPE`, an [`Interface`] that takes the element (of
/// type `SELF`, named `e` in `EXPR`) to `EXPR` (a `&TYPE`; `?` may end it
/// early with none). Returns from the method.
///
/// ```ignore
/// fn provide(&self, want: TypeId) -> Option<&'static dyn Any> {
///     paraclick_runtime::provide!(want, RadixIPsecLookup,
///         Arc<SaTable> => |r| r.inline.as_ref()?)
/// }
/// ```
#[macro_export]
macro_rules! provide {
    ($want:expr, $self_ty:ty, $($t:ty => |$e:ident| $body:expr),+ $(,)?) => {{
        $(
            if $want == $crate::provide::Interface::<$t>::key() {
                static I: $crate::provide::Interface<$t> = $crate::provide::Interface(|a| {
                    let $e: &$self_ty = a.downcast_ref()?;
                    Some($body)
                });
                return Some(&I);
            }
        )+
        None
    }};
}

#[cfg(test)]
mod tests {
    use crate::registry::{ClassSpec, Registry};
    use crate::{Element, InitCx};
    use std::any::{Any, TypeId};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// An interface one element finds in another.
    trait Answer: Send + Sync {
        fn answer(&self) -> u32;
    }

    struct Oracle(u32, Arc<str>);
    impl Answer for Oracle {
        fn answer(&self) -> u32 {
            self.0
        }
    }
    impl Element for Oracle {
        fn provide(&self, want: TypeId) -> Option<&'static dyn Any> {
            crate::provide!(want, Oracle,
                dyn Answer => |o| o,
                Arc<str> => |o| &o.1)
        }
    }

    static FOUND: AtomicUsize = AtomicUsize::new(usize::MAX);

    /// Finds the answer and the text through the interfaces, not the type.
    struct Asker;
    impl Element for Asker {
        fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
            let i = ix.find("o").ok_or("no o")?;
            let a = ix.cast::<dyn Answer>(i).ok_or("o gives no Answer")?;
            let s = ix.cast::<Arc<str>>(i).ok_or("o gives no text")?;
            // Asked of an element that provides nothing, or for a type
            // that is not provided: none.
            let me = ix.find("a").ok_or("no a")?;
            if ix.cast::<dyn Answer>(me).is_some() || ix.cast::<String>(i).is_some() {
                return Err("provided what was not".into());
            }
            FOUND.store(a.answer() as usize + s.len(), Ordering::Relaxed);
            Ok(())
        }
    }

    #[test]
    fn an_element_finds_another_through_what_it_provides() {
        let mut reg = Registry::new();
        reg.register(
            ClassSpec::element("Oracle", "0/0", "a", |_| Ok(Oracle(42, "four".into()))).stateless(),
        );
        reg.register(ClassSpec::element("Asker", "0/0", "a", |_| Ok(Asker)).stateless());
        crate::testing::build(&reg, "o :: Oracle; a :: Asker;");
        assert_eq!(FOUND.load(Ordering::Relaxed), 46);
    }
}
