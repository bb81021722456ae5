//! The option framing IPv4 (RFC 791) and TCP (RFC 9293) share: a one-byte
//! end-of-list (kind 0) and no-op (kind 1); every other option is kind,
//! length (at least 2, counting kind and length), value. The option
//! iterators of both headers walk their options area with this cursor and
//! only decode the options themselves.

use super::{Result, WireError};

/// One framed item of an options area.
pub(crate) enum Tlv<'a> {
    EndOfList,
    Nop,
    /// An option; `bytes` is all of it, kind and length included.
    Option {
        kind: u8,
        bytes: &'a [u8],
    },
}

#[derive(Debug, Clone)]
pub(crate) struct TlvCursor<'a> {
    data: &'a [u8],
    pos: usize,
    last: usize,
    done: bool,
}

impl<'a> TlvCursor<'a> {
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        TlvCursor {
            data,
            pos: 0,
            last: 0,
            done: false,
        }
    }

    /// Offset of the item (or error) most recently returned.
    #[inline]
    pub fn position(&self) -> usize {
        self.last
    }

    /// Ends the walk with error `e` (a malformed option stops iteration).
    #[inline]
    pub fn fail<T>(&mut self, e: WireError) -> Option<Result<T>> {
        self.done = true;
        Some(Err(e))
    }

    /// The next item; `None` at the end of the area or after an
    /// end-of-list or an error. Never reads out of bounds.
    pub fn next_tlv(&mut self) -> Option<Result<Tlv<'a>>> {
        if self.done {
            return None;
        }
        let start = self.pos;
        let Some(&kind) = self.data.get(start) else {
            self.done = true;
            return None;
        };
        self.last = start;
        match kind {
            0 => {
                self.done = true;
                return Some(Ok(Tlv::EndOfList));
            }
            1 => {
                self.pos += 1;
                return Some(Ok(Tlv::Nop));
            }
            _ => {}
        }
        let len = match self.data.get(start + 1) {
            Some(&l) => usize::from(l),
            None => return self.fail(WireError::Truncated),
        };
        if len < 2 {
            return self.fail(WireError::Malformed);
        }
        let Some(bytes) = self.data.get(start..start + len) else {
            return self.fail(WireError::Malformed);
        };
        self.pos = start + len;
        Some(Ok(Tlv::Option { kind, bytes }))
    }
}
