//! IPsec ESP header (RFC 4303): security parameter index and sequence
//! number; everything after them is opaque until decrypted.

use super::{clamped, clamped_mut, get_u32, set_u32, Result, WireError};

mod field {
    pub const SPI: usize = 0;
    pub const SEQ: usize = 4;
}

view! {
    /// A view of an ESP packet: the 8-byte header and the (encrypted) payload,
    /// which includes the IV, padding, trailer and ICV.
    EspHeader,
    /// Wraps `buffer`, checking that it holds the header.
}

impl<T: AsRef<[u8]>> EspHeader<T> {
    /// Length of the header.
    pub const HEADER_LEN: usize = 8;

    /// `Err(Truncated)` if the buffer is shorter than the header.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < Self::HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Security parameter index.
    #[inline]
    pub fn spi(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SPI)
    }

    /// Sequence number.
    #[inline]
    pub fn seq(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SEQ)
    }

    /// Everything after the header.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        clamped(self.buffer.as_ref(), Self::HEADER_LEN, usize::MAX)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EspHeader<T> {
    /// Sets the security parameter index.
    #[inline]
    pub fn set_spi(&mut self, v: u32) {
        set_u32(self.buffer.as_mut(), field::SPI, v);
    }

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq(&mut self, v: u32) {
        set_u32(self.buffer.as_mut(), field::SEQ, v);
    }

    /// Everything after the header, mutable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        clamped_mut(self.buffer.as_mut(), Self::HEADER_LEN, usize::MAX)
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for EspHeader<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PKT: [u8; 12] = [0x00, 0x00, 0x10, 0x01, 0x00, 0x00, 0x00, 0x2a, 1, 2, 3, 4];

    #[test]
    fn getters() {
        let h = EspHeader::new_checked(&PKT[..]).unwrap();
        assert_eq!(h.spi(), 0x1001);
        assert_eq!(h.seq(), 42);
        assert_eq!(h.payload(), &[1, 2, 3, 4]);
    }

    #[test]
    fn setters_round_trip() {
        let mut buf = [0u8; 12];
        let mut h = EspHeader::new_checked(&mut buf[..]).unwrap();
        h.set_spi(0x1001);
        assert_eq!(h.spi(), 0x1001);
        h.set_seq(42);
        assert_eq!(h.seq(), 42);
        h.payload_mut().copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(h.into_inner(), &PKT[..]);
    }

    #[test]
    fn truncated() {
        for len in 0..8 {
            assert_eq!(
                EspHeader::new_checked(&PKT[..len]).unwrap_err(),
                WireError::Truncated
            );
        }
        assert!(EspHeader::new_checked(&PKT[..8])
            .unwrap()
            .payload()
            .is_empty());
    }
}
