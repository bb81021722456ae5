//! # IPsecAES
//!
//! IPsecAES(ENCRYPT [, keywords SATABLE])
//!
//! Encrypts or decrypts ESP packets of AES security associations, a step
//! of Click's split IPsec chains.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! ENCRYPT is 1 (encrypt) or 0 (decrypt), as in Click. The key, the
//! mode and the IV come from the packet's SA (its annotation, see
//! IPsecSATable), not from arguments. Expects data at the ESP header.
//!
//! - AES-CBC SAs (`aes128-sha1`, `aes256-sha256`, ...): encrypts what
//!   follows the IV (the output of IPsecESPEncap), or decrypts it (after
//!   IPsecAuthHMACSHA1 or IPsecAuthHMACSHA256 verified the ICV: an
//!   unverified packet is refused, `out_of_order`, so nothing is
//!   decrypted before its integrity is known, RFC 4303 §3.4.4).
//! - AES-GCM SAs (`aes128gcm16`, `aes256gcm16`, RFC 4106): AES-GCM is
//!   authenticated encryption, so this element also does the integrity
//!   step: encrypting appends the 16-byte tag; decrypting checks the
//!   anti-replay window, authenticates (the tag compared in constant time,
//!   nothing decrypted unless it matches), records the sequence number and
//!   removes the tag. The HMAC elements pass GCM packets unchanged.
//! - SAs of another cipher (3DES) pass unchanged, so one chain with both
//!   IPsecAES and IPsecDES serves every SA of a table.
//!
//! Failures (`truncated`, `auth_failures`, `replay_drops`) are counted in
//! the SA (see IPsecSATable); a packet without an SA (`no_sa`) or that
//! skipped a step (`out_of_order`) in this element.
//!
//! Click's IPsecAES is AES-128-CBC only (with IPsecAuthHMACSHA1); here
//! AES-128/256 in CBC mode with HMAC-SHA1-96 or HMAC-SHA256-128, and
//! AES-GCM, with AES-NI where the CPU has it (ring for GCM, RustCrypto's
//! `aes` and `cbc` for CBC).
//!
//! Handlers: `no_sa`, `out_of_order`, `passed` (packets of other
//! ciphers let through) (read).
//!
//! # IPsecDES
//!
//! IPsecDES(ENCRYPT [, keywords SATABLE])
//!
//! Encrypts or decrypts ESP packets of 3DES security associations, a
//! step of Click's split IPsec chains.
//!
//! Ports: 1 input, 1 output. Processing: agnostic.
//!
//! As IPsecAES, for SAs whose cipher is 3DES-EDE-CBC (`3des-sha1`,
//! `3des-sha256`, RFC 2451); packets of other SAs pass unchanged. Click's
//! IPsecDES is single DES with the key as an argument; single DES is
//! broken and no longer an ESP algorithm (RFC 8221), so this one is
//! Triple DES, the algorithm of the SMP Click paper's VPN, with the key
//! from the SA table. The IV comes from the ESP header, as in Click.
//!
//! Handlers: `no_sa`, `out_of_order`, `passed` (read).

use super::sa;
use super::sa::steps::CipherKind;
use super::sa_table::{set_state, state, TableRef};
use paraclick_packet::Packet;
use paraclick_runtime::{
    Action, ClassSpec, ConfigCx, Cx, Handler, InitCx, PerThreadCount, Verdict,
};

pub struct IPsecCipher {
    kind: CipherKind,
    encrypt: bool,
    table: TableRef,
    no_sa: PerThreadCount,
    out_of_order: PerThreadCount,
    passed: PerThreadCount,
}

pub fn aes_spec() -> ClassSpec {
    ClassSpec::action("IPsecAES", "1/1", "a", |cx: &mut ConfigCx<'_>| {
        make(cx, CipherKind::Aes)
    })
    .stateless()
    .drop_reasons(super::sa::REASONS)
}

pub fn des_spec() -> ClassSpec {
    ClassSpec::action("IPsecDES", "1/1", "a", |cx: &mut ConfigCx<'_>| {
        make(cx, CipherKind::Des3)
    })
    .stateless()
    .drop_reasons(super::sa::REASONS)
}

fn make(cx: &mut ConfigCx<'_>, kind: CipherKind) -> Result<IPsecCipher, String> {
    let mut a = cx.args();
    let encrypt: u8 = a.read_mp("ENCRYPT");
    let table: Option<String> = a.read("SATABLE");
    a.complete()?;
    if encrypt > 1 {
        return Err(format!(
            "ENCRYPT must be 0 (decrypt) or 1 (encrypt), not {encrypt}"
        ));
    }
    Ok(IPsecCipher {
        kind,
        encrypt: encrypt == 1,
        table: TableRef::new(table),
        no_sa: PerThreadCount::new(cx.nthreads),
        out_of_order: PerThreadCount::new(cx.nthreads),
        passed: PerThreadCount::new(cx.nthreads),
    })
}

impl Action for IPsecCipher {
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
        if sa.cipher_kind() != self.kind {
            self.passed.inc(t);
            return Verdict::Out(0);
        }
        let aead = sa.integ().is_none();
        let (ok, done) = if self.encrypt {
            let d = if aead {
                state::ENCRYPTED | state::AUTHED
            } else {
                state::ENCRYPTED
            };
            (st == state::ENCAP, d)
        } else if aead {
            (st == state::INBOUND, state::VERIFIED | state::DECRYPTED)
        } else {
            (st == state::INBOUND | state::VERIFIED, state::DECRYPTED)
        };
        if !ok {
            self.out_of_order.inc(t);
            return Verdict::DropFor(sa::OUT_OF_ORDER);
        }
        let r = if self.encrypt {
            sa.esp_encrypt(t, p)
        } else {
            sa.esp_decrypt(t, p)
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
