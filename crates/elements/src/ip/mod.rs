//! IP elements: header checks and marks, address annotations, TTL, options,
//! DSCP/ECN, checksums, printing (the IP half of Click's RFC 1812 router).
//!
//! Conventions these elements share with the other IP elements: a packet's
//! network header is set by CheckIPHeader or MarkIPHeader with
//! `set_network_header(offset, header_len)`; `anno.dst_ip` is the
//! destination IP annotation; `anno.fix_ip_src` is FIX_IP_SRC;
//! `anno.icmp_param_off` is ICMP_PARAMPROB (offset of the bad byte from the
//! start of the IP header).

use paraclick_packet::wire::Ipv4Header;
use paraclick_packet::Packet;
use paraclick_runtime::args::{ArgEnv, FromArg};
use paraclick_runtime::{Cx, Handler, PerThreadCount, Registry, Verdict};
use std::marker::PhantomData;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};

pub mod check_icmp_header;
pub mod check_ip_header;
pub mod check_ip_header2;
pub mod check_tcp_header;
pub mod check_udp_header;
pub mod dec_ip_ttl;
pub mod drop_broadcasts;
pub mod fix_ip_src;
pub mod get_ip_address;
pub mod ip_field_info;
pub mod ip_gw_options;
pub mod ip_input_combo;
pub mod ip_mirror;
pub mod ip_name_info;
pub mod ip_output_combo;
pub mod ip_print;
pub mod mark_ip_ce;
pub mod mark_ip_header;
pub mod set_ip_address;
pub mod set_ip_checksum;
pub mod set_ip_dscp;
pub mod set_ip_ecn;
pub mod set_rand_ip_address;
pub mod set_tcp_checksum;
pub mod set_udp_checksum;
pub mod stateless_tcp_responder;
pub mod store_ip_address;
pub mod strip_ip_header;
pub mod tcp_fragmenter;
pub mod truncate_ip_payload;

pub fn register(reg: &mut Registry) {
    reg.register(check_icmp_header::spec());
    reg.register(tcp_fragmenter::spec());
    reg.register(set_rand_ip_address::spec());
    reg.register(check_ip_header::spec());
    reg.register(check_ip_header2::spec());
    reg.register(check_tcp_header::spec());
    reg.register(check_udp_header::spec());
    reg.register(dec_ip_ttl::spec());
    reg.register(drop_broadcasts::spec());
    reg.register(fix_ip_src::spec());
    reg.register(get_ip_address::spec());
    reg.register(ip_gw_options::spec());
    reg.register(ip_input_combo::spec());
    reg.register(ip_output_combo::spec());
    reg.register(ip_mirror::spec());
    reg.register(ip_print::spec());
    reg.register(mark_ip_ce::spec());
    reg.register(mark_ip_header::spec());
    reg.register(set_ip_address::spec());
    reg.register(set_ip_checksum::spec());
    reg.register(set_ip_dscp::spec());
    reg.register(set_ip_ecn::spec());
    reg.register(set_tcp_checksum::spec());
    reg.register(set_udp_checksum::spec());
    reg.register(store_ip_address::spec());
    reg.register(stateless_tcp_responder::spec());
    reg.register(ip_field_info::spec());
    reg.register(ip_name_info::spec());
    reg.register(strip_ip_header::spec());
    reg.register(strip_ip_header::unstrip_spec());
    reg.register(truncate_ip_payload::spec());
}

/// Length of an IPv4 header without options.
pub(crate) const IP_MIN_HLEN: usize = 20;

/// A view of the fixed 20 bytes of the packet's IP header (at its network
/// header annotation), for elements that only touch fixed fields (TTL, TOS,
/// addresses, checksum). `None` if the annotation is missing or fewer than
/// 20 bytes follow it. Every accessor of the fixed header is in bounds of
/// the 20-byte view, so nothing after this can panic; the header length and
/// total length fields are deliberately not checked (as in Click, these
/// elements work on any packet an IP header was marked on).
#[inline]
pub(crate) fn fixed_ip_header(p: &mut Packet) -> Option<Ipv4Header<&mut [u8]>> {
    let nh = p.network_header_mut()?;
    let fixed = nh.get_mut(..IP_MIN_HLEN)?;
    Some(Ipv4Header::new_unchecked(fixed))
}

/// Read-only counterpart of [`fixed_ip_header`].
#[inline]
pub(crate) fn fixed_ip_header_ref(p: &Packet) -> Option<Ipv4Header<&[u8]>> {
    let nh = p.network_header()?;
    let fixed = nh.get(..IP_MIN_HLEN)?;
    Some(Ipv4Header::new_unchecked(fixed))
}

/// The IP datagram at the packet's network header, its lengths checked
/// (`Ipv4Header::new_checked`: header and total length within the packet;
/// version and checksum not checked). `None` if there is no network header
/// annotation or the lengths are wrong.
#[inline]
pub(crate) fn checked_ip(p: &Packet) -> Option<Ipv4Header<&[u8]>> {
    Ipv4Header::new_checked(p.network_header()?).ok()
}

/// True for a multicast (class D, 224.0.0.0/4) address.
#[inline]
pub(crate) fn is_multicast(a: Ipv4Addr) -> bool {
    u32::from(a) >> 28 == 0xe
}

/// Parses a space-separated list of IP addresses (AddressInfo names
/// allowed), as Click's IP address list arguments.
pub(crate) fn parse_ip_list(s: &str, env: &ArgEnv) -> Result<Vec<Ipv4Addr>, String> {
    s.split_whitespace()
        .map(|w| Ipv4Addr::from_arg(w, env))
        .collect()
}

/// A space-separated IP address list argument ([`parse_ip_list`]).
pub(crate) struct IpList(pub Vec<Ipv4Addr>);

impl FromArg for IpList {
    const WHAT: &'static str = "IP address list";
    fn from_arg(s: &str, env: &ArgEnv) -> Result<IpList, String> {
        parse_ip_list(s, env).map(IpList)
    }
    fn placeholder() -> IpList {
        IpList(Vec::new())
    }
}

/// The bookkeeping Click's header checkers share (CheckIPHeader,
/// CheckTCPHeader, CheckUDPHeader, CheckICMPHeader): counts of good and
/// bad packets, optional per-reason counts (`DETAILS`), the first-error
/// (or every error, `VERBOSE`) message, and where bad packets go (output 1
/// if it is connected, else a counted drop for its reason: a class using
/// it declares the same texts as its `ClassSpec::drop_reasons`).
pub(crate) struct CheckStats {
    count: PerThreadCount,
    drops: PerThreadCount,
    reasons: Option<Box<[PerThreadCount]>>,
    texts: &'static [&'static str],
    what: &'static str,
    verbose: bool,
    warned: AtomicBool,
    has_error_output: bool,
}

impl CheckStats {
    /// `texts` are the reasons' names (Click's), `what` the message prefix
    /// ("IP header check failed").
    pub(crate) fn new(
        nthreads: usize,
        texts: &'static [&'static str],
        what: &'static str,
        verbose: bool,
        details: bool,
        noutputs: usize,
    ) -> CheckStats {
        CheckStats {
            count: PerThreadCount::new(nthreads),
            drops: PerThreadCount::new(nthreads),
            reasons: details.then(|| {
                texts
                    .iter()
                    .map(|_| PerThreadCount::new(nthreads))
                    .collect()
            }),
            texts,
            what,
            verbose,
            warned: AtomicBool::new(false),
            has_error_output: noutputs >= 2,
        }
    }

    /// A packet passed.
    #[inline]
    pub(crate) fn pass(&self, cx: &Cx<'_>) -> Verdict {
        self.count.inc(cx.thread());
        Verdict::Out(0)
    }

    /// A packet failed for reason `reason` (an index into the texts).
    #[cold]
    #[inline(never)]
    pub(crate) fn fail(&self, cx: &Cx<'_>, reason: usize) -> Verdict {
        let t = cx.thread();
        self.drops.inc(t);
        if let Some(r) = self.reasons.as_ref().and_then(|r| r.get(reason)) {
            r.inc(t);
        }
        if self.verbose || !self.warned.swap(true, Ordering::Relaxed) {
            let text = self.texts.get(reason).copied().unwrap_or("?");
            eprintln!("{}: {}: {}", cx.element_name(), self.what, text);
        }
        if self.has_error_output {
            Verdict::Out(1)
        } else {
            // The texts are the class's drop reasons (at most a few).
            Verdict::DropFor(reason as u8)
        }
    }

    /// The `drop_details` handler: one line per reason (an error without
    /// `DETAILS`).
    pub(crate) fn drop_details(&self) -> Result<String, String> {
        let r = self
            .reasons
            .as_ref()
            .ok_or("drop_details needs DETAILS true")?;
        let mut s = String::new();
        for (c, text) in r.iter().zip(self.texts) {
            s.push_str(&format!("{:>15} packets due to: {:>24}\n", c.get(), text));
        }
        Ok(s)
    }

    /// The verdict on a packet a checker found good (`Ok`) or bad for a
    /// reason (`Err`).
    #[inline]
    pub(crate) fn verdict(&self, cx: &Cx<'_>, r: Result<(), usize>) -> Verdict {
        match r {
            Ok(()) => self.pass(cx),
            Err(reason) => self.fail(cx, reason),
        }
    }

    pub(crate) fn drops(&self) -> u64 {
        self.drops.get()
    }

    pub(crate) fn count(&self) -> u64 {
        self.count.get()
    }
}

/// A header checker whose bookkeeping is a [`CheckStats`].
pub(crate) trait Checker {
    fn check_stats(&self) -> &CheckStats;
}

/// The handlers every header checker has, Click's `count`, `drops` and
/// `drop_details`: `const HANDLERS = CheckHandlers::<Self>::TABLE`.
pub(crate) struct CheckHandlers<E>(PhantomData<E>);

impl<E: Checker + 'static> CheckHandlers<E> {
    pub(crate) const TABLE: &'static [Handler<E>] = &[
        Handler::read("count", |e, _| e.check_stats().count().to_string()),
        Handler::read("drops", |e, _| e.check_stats().drops().to_string()),
        Handler::try_read("drop_details", |e, _| e.check_stats().drop_details()),
    ];
}

/// Prints a warning once per element (or always, if `always`), on the
/// cold path of elements that drop malformed packets.
#[cold]
pub(crate) fn warn_once(flag: &AtomicBool, cx: &Cx<'_>, msg: &str) {
    if !flag.swap(true, Ordering::Relaxed) {
        eprintln!("{}: {}", cx.element_name(), msg);
    }
}
