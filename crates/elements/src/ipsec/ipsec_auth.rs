//! # IPsecAuthHMACSHA1
//!
//! IPsecAuthHMACSHA1(VERIFY [, keywords SATABLE])
//!
//! Computes or verifies the HMAC-SHA1-96 ICV of ESP packets (RFC 2404),
//! a step of Click's split IPsec chains.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! As in Click, VERIFY 0 computes the digest and appends it (outbound,
//! after IPsecAES or IPsecDES encrypted the packet); VERIFY 1 verifies it
//! and removes it (inbound, before decryption). The key comes from the
//! packet's SA (its annotation, see IPsecSATable). Expects data at the
//! ESP header; the ICV covers the ESP header, IV and ciphertext.
//!
//! Verifying checks, in RFC 4303's order: lengths (`truncated`), the
//! anti-replay window (`replay_drops`), the ICV, compared in constant
//! time (`auth_failures`); then records the sequence number in the
//! window. All counted in the SA. Click's element does no replay check.
//!
//! Packets of SAs with another integrity algorithm (HMAC-SHA256, or
//! AES-GCM, whose IPsecAES does its own integrity) pass unchanged, so one
//! chain serves every SA of a table. A packet without an SA (`no_sa`) or
//! that skipped a step (`out_of_order`: computing before encryption,
//! verifying twice) is dropped and counted here.
//!
//! Handlers: `no_sa`, `out_of_order`, `passed` (read).
//!
//! # IPsecAuthHMACSHA256
//!
//! IPsecAuthHMACSHA256(VERIFY [, keywords SATABLE])
//!
//! Computes or verifies the HMAC-SHA256-128 ICV of ESP packets (RFC
//! 4868).
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! A paraclick element in the style of Click's IPsecAuthHMACSHA1 (Click
//! has no SHA-2): the same arguments and behaviour, for SAs whose
//! integrity algorithm is HMAC-SHA256 (`aes128-sha256`, `aes256-sha256`,
//! `3des-sha256`); other packets pass unchanged.
//!
//! Handlers: `no_sa`, `out_of_order`, `passed` (read).

use super::sa;
use super::sa::Integ;
use super::sa_table::{set_state, state, TableRef};
use paraclick_packet::Packet;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, PerThreadCount, Verdict,
};

pub struct IPsecAuthHMAC {
    integ: Integ,
    verify: bool,
    table: TableRef,
    no_sa: PerThreadCount,
    out_of_order: PerThreadCount,
    passed: PerThreadCount,
}

pub fn sha1_spec() -> ClassSpec {
    ClassSpec::action("IPsecAuthHMACSHA1", "1/1", "a", |cx: &mut ConfigCx<'_>| {
        make(cx, Integ::Sha1)
    })
    .stateless()
    .drop_reasons(super::sa::REASONS)
}

pub fn sha256_spec() -> ClassSpec {
    ClassSpec::action(
        "IPsecAuthHMACSHA256",
        "1/1",
        "a",
        |cx: &mut ConfigCx<'_>| make(cx, Integ::Sha256),
    )
    .stateless()
    .drop_reasons(super::sa::REASONS)
}

fn make(cx: &mut ConfigCx<'_>, integ: Integ) -> Result<IPsecAuthHMAC, String> {
    let mut a = cx.args();
    let verify: u8 = a.read_mp("VERIFY");
    let table: Option<String> = a.read("SATABLE");
    a.complete()?;
    if verify > 1 {
        return Err(format!(
            "VERIFY must be 0 (compute) or 1 (verify), not {verify}"
        ));
    }
    Ok(IPsecAuthHMAC {
        integ,
        verify: verify == 1,
        table: TableRef::new(table),
        no_sa: PerThreadCount::new(cx.nthreads),
        out_of_order: PerThreadCount::new(cx.nthreads),
        passed: PerThreadCount::new(cx.nthreads),
    })
}

impl Action for IPsecAuthHMAC {
    const HANDLERS: &'static [Handler<Self>] = &[
        Handler::read("no_sa", |e, _| e.no_sa.get().to_string()),
        Handler::read("out_of_order", |e, _| e.out_of_order.get().to_string()),
        Handler::read("passed", |e, _| e.passed.get().to_string()),
    ];

    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        self.table.initialize(ix)
    }

    #[inline]
    fn action(&self, cx: &mut Cx<'_>, p: &mut Packet) -> Verdict {
        let t = cx.thread();
        let Some((_, sa, st)) = self.table.sa_of(p) else {
            self.no_sa.inc(t);
            return Verdict::DropFor(sa::NO_SA);
        };
        if sa.integ() != Some(self.integ) {
            self.passed.inc(t);
            return Verdict::Out(0);
        }
        let (ok, done) = if self.verify {
            (st == state::INBOUND, state::VERIFIED)
        } else {
            (st == state::ENCAP | state::ENCRYPTED, state::AUTHED)
        };
        if !ok {
            self.out_of_order.inc(t);
            return Verdict::DropFor(sa::OUT_OF_ORDER);
        }
        let r = if self.verify {
            sa.esp_auth_verify(t, p)
        } else {
            sa.esp_auth_compute(t, p)
        };
        match r {
            Ok(()) => {
                set_state(p, st | done);
                Verdict::Out(0)
            }
            Err(r) => r.verdict(),
        }
    }
}
