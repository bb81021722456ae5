//! IPFilter/IPClassifier patterns: parsing, printing, compilation, and the
//! compiled program against the reference interpreter.

use paraclick_elements::ipfilter::interp;
use paraclick_elements::ipfilter::lang::{parse_pattern, Expr};
use paraclick_elements::ipfilter::program::{Action, Program};
use paraclick_packet::Packet;
use paraclick_runtime::args::{AddrEntry, ArgEnv};
use paraclick_runtime::testing::Harness;
use paraclick_runtime::Verdict;
use std::net::Ipv4Addr;

/// The input is `PATTERNS \0 PACKETS`: comma-separated patterns (each
/// goes to its own output, as in IPClassifier), then packets as a length
/// byte followed by that many bytes. Checks that
///
/// - every pattern parses or gives an error, never a panic;
/// - a parsed pattern prints as text that parses back to the same AST;
/// - the compiled program classifies every packet as the reference
///   interpreter does;
/// - IPClassifier configured with the patterns sends each packet (IP
///   header marked at its start) to the output the program chose.
pub fn ipfilter(data: &[u8]) {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let text = String::from_utf8_lossy(&data[..split]);
    let env = env();
    let pats: Vec<&str> = text.split(',').take(8).collect();
    let mut rules: Vec<(Expr, Action)> = Vec::new();
    for (i, p) in pats.iter().enumerate() {
        let Ok(e) = parse_pattern(p, &env) else {
            continue;
        };
        let printed = e.to_string();
        let back = parse_pattern(&printed, &env)
            .unwrap_or_else(|m| panic!("{p:?} prints as {printed:?}, which does not parse: {m}"));
        assert_eq!(
            back, e,
            "{p:?} prints as {printed:?}, which parses differently"
        );
        rules.push((e, Action::Out(i)));
    }
    if rules.is_empty() {
        return;
    }
    let all_parsed = rules.len() == pats.len();
    let prog = Program::compile(&rules);
    let packets = packets(data.get(split + 1..).unwrap_or(&[]));
    for ip in &packets {
        let want = interp::classify(&rules, ip);
        let got = prog.run(ip);
        assert_eq!(
            got,
            want,
            "compiled and interpreted verdicts differ\npatterns {pats:?}\npacket {ip:02x?}\n{}",
            prog.listing()
        );
    }
    // Through the element, when the text is a plain configuration string.
    let plain = !text.chars().any(|c| {
        matches!(
            c,
            '(' | ')' | '"' | '\'' | '\\' | '/' | '$' | '{' | '}' | '#'
        )
    });
    if all_parsed && plain && !packets.is_empty() {
        let Ok(h) = Harness::new(
            crate::registry(),
            &format!("IPClassifier({text}); Idle -> e"),
            pats.len(),
        ) else {
            return;
        };
        for ip in &packets {
            let Some(mut p) = Packet::from_slice(ip) else {
                continue;
            };
            let hl = ip.first().map_or(0, |b| usize::from(b & 0xf) * 4);
            p.set_network_header(0, hl.min(ip.len()));
            let drops = h.drops();
            h.push(0, vec![p]);
            let outs: Vec<usize> = (0..pats.len()).map(|o| h.output(o).len()).collect();
            let got = match outs.iter().position(|&n| n == 1) {
                Some(o) => Verdict::Out(o),
                None => Verdict::Drop,
            };
            assert_eq!(outs.iter().sum::<usize>() as u64 + h.drops() - drops, 1);
            assert_eq!(
                got,
                prog.run(ip),
                "IPClassifier({text}) and the program differ on {ip:02x?}"
            );
        }
    }
}

fn packets(mut d: &[u8]) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    while let Some((&n, rest)) = d.split_first() {
        let n = usize::from(n).min(rest.len());
        v.push(rest[..n].to_vec());
        d = &rest[n..];
        if v.len() >= 32 {
            break;
        }
    }
    v
}

/// Names the patterns may use, as in the unit tests.
fn env() -> ArgEnv {
    let mut env = ArgEnv::default();
    for (n, ip, len) in [
        ("INTERNALNET", [10, 0, 0, 0], Some(8)),
        ("BASTION", [10, 1, 0, 1], None),
        ("mauer", [10, 0, 0, 1], Some(24)),
    ] {
        env.names.insert(
            n.into(),
            AddrEntry {
                ip: Some(Ipv4Addr::from(ip)),
                prefix_len: len,
                ether: None,
                ..Default::default()
            },
        );
    }
    env
}
