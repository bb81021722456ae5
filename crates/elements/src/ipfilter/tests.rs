//! Tests of the pattern language, the compiled matcher, and a randomized
//! cross-check of compiled programs against the AST interpreter.

use super::interp;
use super::lang::{parse_pattern, Expr, IpField, Op, PortProto, Prim, Rel, Sd};
use super::program::{Action, Program};
use super::test_util::*;
use crate::test_kit::*;
use paraclick_packet::wire::ip_proto;
use paraclick_packet::Packet;
use paraclick_runtime::Verdict;

const SYN: u8 = 0x02;
const FIN: u8 = 0x01;
const ACK: u8 = 0x10;

fn p(s: &str) -> String {
    match parse_pattern(s, &env()) {
        Ok(e) => e.to_string(),
        Err(m) => panic!("{s:?}: {m}"),
    }
}

fn err(s: &str) -> String {
    match parse_pattern(s, &env()) {
        Ok(e) => panic!("{s:?} parsed as {e}"),
        Err(m) => m,
    }
}

// ----- parser -----

#[test]
fn parses_protocols() {
    assert_eq!(p("ip proto tcp"), "ip proto 6");
    assert_eq!(p("ip proto 50"), "ip proto 50");
    assert_eq!(p("proto udp"), "ip proto 17");
    assert_eq!(p("tcp"), "ip proto 6");
    assert_eq!(p("udp"), "ip proto 17");
    assert_eq!(p("icmp"), "ip proto 1");
    assert_eq!(p("igmp"), "ip proto 2");
    assert_eq!(p("ip proto == tcp"), "ip proto 6");
    assert_eq!(p("ip proto != tcp"), "ip proto != 6");
    assert_eq!(p("ip proto tcp or udp"), "(ip proto 6 || ip proto 17)");
    assert_eq!(p("ip tcp"), "ip proto 6");
}

/// Every name of the shared protocol table means its number in IPFilter,
/// in the encapsulating elements' PROTO and in IPsecEncap's.
#[test]
fn every_protocol_name_is_understood_alike() {
    for &(name, num) in ip_proto::NAMES {
        assert_eq!(
            p(&format!("ip proto {name}")),
            format!("ip proto {num}"),
            "{name}"
        );
        assert_eq!(crate::iproute::encap::parse_proto(name), Ok(num), "{name}");
        let upper = name.to_ascii_uppercase();
        assert_eq!(
            crate::iproute::encap::parse_proto(&upper),
            Ok(num),
            "{upper}"
        );
    }
    assert!(err("ip proto icmp6").contains("icmp6"));
}

#[test]
fn parses_hosts_and_nets() {
    assert_eq!(p("src host 10.0.0.1"), "src host 10.0.0.1");
    assert_eq!(p("ip src 10.0.0.1"), "src host 10.0.0.1");
    assert_eq!(p("ip dst host 10.0.0.1"), "dst host 10.0.0.1");
    assert_eq!(p("dst 10.0.0.1"), "dst host 10.0.0.1");
    assert_eq!(p("src 10.0.0.1"), "src host 10.0.0.1");
    assert_eq!(p("host 10.0.0.1"), "src or dst host 10.0.0.1");
    assert_eq!(p("ip host 10.0.0.1"), "src or dst host 10.0.0.1");
    assert_eq!(p("10.0.0.1"), "src or dst host 10.0.0.1");
    assert_eq!(p("src or dst host 10.0.0.1"), "src or dst host 10.0.0.1");
    assert_eq!(p("dst or src host 10.0.0.1"), "src or dst host 10.0.0.1");
    assert_eq!(p("src and dst host 10.0.0.1"), "src and dst host 10.0.0.1");
    assert_eq!(p("src || dst 10.0.0.1"), "src or dst host 10.0.0.1");
    assert_eq!(p("net 10.0.0.0/8"), "src or dst net 10.0.0.0/8");
    assert_eq!(p("10.1.2.3/8"), "src or dst net 10.0.0.0/8");
    assert_eq!(p("src net 10.0.0.0/255.0.0.0"), "src net 10.0.0.0/8");
    assert_eq!(
        p("dst net 10.0.0.0 mask 255.255.0.0"),
        "dst net 10.0.0.0/16"
    );
    assert_eq!(
        p("net 10.1.2.3 mask 255.0.255.0"),
        "src or dst net 10.0.2.0 mask 255.0.255.0"
    );
    assert_eq!(p("net 10.0.0.1"), "src or dst host 10.0.0.1");
    assert_eq!(p("host 10.0.0.0/8"), "src or dst net 10.0.0.0/8");
    assert_eq!(p("net 0.0.0.0/0"), "src or dst net 0.0.0.0/0");
    assert_eq!(p("src host != 1.2.3.4"), "src host != 1.2.3.4");
    assert_eq!(p("host == 1.2.3.4"), "src or dst host 1.2.3.4");
    assert_eq!(p("src net != 10.0.0.0/8"), "src net != 10.0.0.0/8");
}

#[test]
fn parses_address_info_names() {
    assert_eq!(p("src INTERNALNET"), "src net 10.0.0.0/8");
    assert_eq!(p("dst BASTION"), "dst host 10.1.0.1");
    assert_eq!(p("src host mauer"), "src host 10.0.0.1");
    assert_eq!(p("src mauer"), "src net 10.0.0.0/24");
    assert_eq!(p("net mauer"), "src or dst net 10.0.0.0/24");
    assert_eq!(p("src mauer:ip"), "src host 10.0.0.1");
    assert_eq!(p("dst mauer:bcast"), "dst host 10.0.0.255");
    assert_eq!(
        p("src BASTION && dst INTERNALNET"),
        "(src host 10.1.0.1 && dst net 10.0.0.0/8)"
    );
}

#[test]
fn parses_ports() {
    assert_eq!(p("port 80"), "src or dst port 80");
    assert_eq!(p("tcp port www"), "src or dst tcp port 80");
    assert_eq!(p("src udp port domain"), "src udp port 53");
    assert_eq!(p("tcp src port 22"), "src tcp port 22");
    assert_eq!(p("dst port ssh"), "dst port 22");
    assert_eq!(p("port ftp-data"), "src or dst port 20");
    assert_eq!(p("www"), "src or dst port 80");
    assert_eq!(p("https"), "src or dst port 443");
    assert_eq!(p("udp 53"), "src or dst udp port 53");
    assert_eq!(p("tcp www"), "src or dst tcp port 80");
    assert_eq!(p("dst port 1000-2000"), "dst port 1000-2000");
    assert_eq!(p("dst port != 1000-2000"), "dst port != 1000-2000");
    assert_eq!(p("dst port > 1023"), "dst port > 1023");
    assert_eq!(p("dst port>1023"), "dst port > 1023");
    assert_eq!(p("src port < 1024"), "src port < 1024");
    assert_eq!(p("src port >= 1024"), "src port >= 1024");
    assert_eq!(p("src port <= 0x10"), "src port <= 16");
    assert_eq!(p("port != 80"), "src or dst port != 80");
    assert_eq!(p("port == 80"), "src or dst port 80");
    assert_eq!(p("port = 80"), "src or dst port 80");
    assert_eq!(p("src tcp port & 10 == 8"), "src tcp port & 10 == 8");
    assert_eq!(p("src tcp port & 10 8"), "src tcp port & 10 == 8");
    assert_eq!(p("port & 3"), "src or dst port & 3");
}

#[test]
fn parses_fields() {
    assert_eq!(p("ip vers 4"), "ip vers 4");
    assert_eq!(p("ip hl 5"), "ip hl 5");
    assert_eq!(p("ip hl > 5"), "ip hl > 5");
    assert_eq!(p("ip id 0x1234"), "ip id 4660");
    assert_eq!(p("ip tos 0x10"), "ip tos 16");
    assert_eq!(p("ip dscp 46"), "ip dscp 46");
    assert_eq!(p("dscp 10-20"), "ip dscp 10-20");
    assert_eq!(p("ip ttl < 5"), "ip ttl < 5");
    assert_eq!(p("ttl >= 64"), "ip ttl >= 64");
    assert_eq!(p("ip ttl 5 or 6"), "(ip ttl 5 || ip ttl 6)");
    assert_eq!(p("ip frag"), "ip frag");
    assert_eq!(p("frag"), "ip frag");
    assert_eq!(p("ip unfrag"), "!ip frag");
    assert_eq!(p("unfrag"), "!ip frag");
    assert_eq!(p("ip ect"), "ip ect");
    assert_eq!(p("ip ce"), "ip ce");
    assert_eq!(p("tcp win > 1000"), "tcp win > 1000");
    assert_eq!(p("win 0"), "tcp win 0");
    assert_eq!(p("ip[9] 6"), "ip[9:1] 6");
    assert_eq!(p("ip[12:4] == 0x0a000001"), "ip[12:4] 167772161");
    assert_eq!(p("ip[0] & 0xf0 == 0x40"), "ip[0:1] & 240 == 64");
    assert_eq!(p("tcp[13] & 2"), "tcp[13:1] & 2");
    assert_eq!(p("udp[0:2] 53"), "udp[0:2] 53");
    assert_eq!(p("icmp[0] 8"), "icmp[0:1] 8");
    assert_eq!(p("transp[0:2] > 1023"), "transp[0:2] > 1023");
}

#[test]
fn parses_tcp_flags_and_icmp() {
    assert_eq!(p("tcp opt syn"), "tcp opt syn");
    assert_eq!(p("tcp syn"), "tcp opt syn");
    assert_eq!(p("syn"), "tcp opt syn");
    assert_eq!(p("opt rst"), "tcp opt rst");
    assert_eq!(p("fin ack"), "(tcp opt fin && tcp opt ack)");
    assert_eq!(p("tcp opt syn or ack"), "(tcp opt syn || tcp opt ack)");
    assert_eq!(p("psh && urg"), "(tcp opt psh && tcp opt urg)");
    assert_eq!(p("icmp type echo"), "icmp type 8");
    assert_eq!(p("icmp type echo-reply"), "icmp type 0");
    assert_eq!(p("icmp type 3"), "icmp type 3");
    assert_eq!(p("icmp type != 0"), "icmp type != 0");
    assert_eq!(p("icmp echo"), "icmp type 8");
    assert_eq!(p("icmp 11"), "icmp type 11");
    assert_eq!(p("timeexceeded"), "icmp type 11");
    assert_eq!(p("type unreachable"), "icmp type 3");
    assert_eq!(
        p("icmp type echo or echo-reply"),
        "(icmp type 8 || icmp type 0)"
    );
    assert_eq!(
        p("icmp type echo-reply or echo"),
        "(icmp type 0 || icmp type 8)"
    );
    assert_eq!(p("port echo"), "src or dst port 7");
}

#[test]
fn parses_constants() {
    for s in ["-", "any", "all", "true", " - ", "ip"] {
        assert_eq!(p(s), "true", "{s}");
    }
    assert_eq!(p("false"), "false");
    assert_eq!(p("ip and tcp"), "(true && ip proto 6)");
    assert_eq!(p("true or false"), "(true || false)");
}

#[test]
fn connectives_and_precedence() {
    assert_eq!(p("not tcp"), "!ip proto 6");
    assert_eq!(p("!tcp"), "!ip proto 6");
    assert_eq!(p("! tcp"), "!ip proto 6");
    assert_eq!(p("not not tcp"), "!!ip proto 6");
    assert_eq!(
        p("tcp or udp and port 53"),
        "(ip proto 6 || (ip proto 17 && src or dst port 53))"
    );
    assert_eq!(p("not tcp and udp"), "(!ip proto 6 && ip proto 17)");
    assert_eq!(
        p("tcp || udp && icmp"),
        "(ip proto 6 || (ip proto 17 && ip proto 1))"
    );
    assert_eq!(
        p("(tcp or udp) and port 53"),
        "((ip proto 6 || ip proto 17) && src or dst port 53)"
    );
    assert_eq!(
        p("tcp && !(port 80 || port 443)"),
        "(ip proto 6 && !(src or dst port 80 || src or dst port 443))"
    );
    assert_eq!(
        p("tcp udp icmp"),
        "(ip proto 6 && ip proto 17 && ip proto 1)"
    );
    assert_eq!(
        p("tcp ? dst port 80 : udp"),
        "(ip proto 6 ? dst port 80 : ip proto 17)"
    );
    assert_eq!(
        p("tcp ? syn : udp ? port 53 : false"),
        "(ip proto 6 ? tcp opt syn : (ip proto 17 ? src or dst port 53 : false))"
    );
    assert_eq!(p("((tcp))and((udp))"), "(ip proto 6 && ip proto 17)");
    assert_eq!(
        p("10.0.0.0/24 and fin ack"),
        "(src or dst net 10.0.0.0/24 && tcp opt fin && tcp opt ack)"
    );
}

#[test]
fn chains_are_flat_and_nesting_is_bounded() {
    assert_eq!(
        p("tcp or udp or icmp and ip ttl 1 and ip ttl 2"),
        "(ip proto 6 || ip proto 17 || (ip proto 1 && ip ttl 1 && ip ttl 2))"
    );
    assert_eq!(
        p("((tcp && udp) && icmp)"),
        "((ip proto 6 && ip proto 17) && ip proto 1)"
    );
    // A long chain is no nesting: 20000 ports compile and run.
    let long = format!(
        "dst port 1{}",
        (2..=20000).map(|k| format!(" or {k}")).collect::<String>()
    );
    let prog = compile(&[&long]);
    let d = tcp("1.1.1.1", "2.2.2.2", 0, 19999, 0).bytes();
    assert_eq!(prog.run(&d), Verdict::Out(0));
    let d = tcp("1.1.1.1", "2.2.2.2", 0, 20001, 0).bytes();
    assert_eq!(prog.run(&d), Verdict::Drop);
    let deep = format!("{}tcp{}", "(".repeat(200), ")".repeat(200));
    assert_eq!(p(&deep), "ip proto 6");
    let deeper = format!("{}tcp{}", "(".repeat(201), ")".repeat(201));
    assert_eq!(err(&deeper), "pattern nested too deeply (over 200 levels)");
    assert_eq!(
        err(&"!".repeat(5000)),
        "pattern nested too deeply (over 200 levels)"
    );
    let conds = "tcp ? udp : ".repeat(300) + "icmp";
    assert_eq!(err(&conds), "pattern nested too deeply (over 200 levels)");
}

#[test]
fn repeated_qualifiers_carry_over() {
    assert_eq!(p("src port 80 or 81"), "(src port 80 || src port 81)");
    assert_eq!(
        p("dst tcp port 8000 or 8080"),
        "(dst tcp port 8000 || dst tcp port 8080)"
    );
    assert_eq!(
        p("tcp port 80 or 81"),
        "(src or dst tcp port 80 || src or dst tcp port 81)"
    );
    assert_eq!(p("src port 80 or dst 81"), "(src port 80 || dst port 81)");
    assert_eq!(p("src port 80 and not 81"), "(src port 80 && !src port 81)");
    assert_eq!(p("src port 80 or www"), "(src port 80 || src port 80)");
    assert_eq!(
        p("src port 53 or tcp 53"),
        "(src port 53 || src tcp port 53)"
    );
    assert_eq!(
        p("udp port 53 or tcp 53"),
        "(src or dst udp port 53 || src or dst tcp port 53)"
    );
    assert_eq!(
        p("src host 1.1.1.1 or 2.2.2.2"),
        "(src host 1.1.1.1 || src host 2.2.2.2)"
    );
    assert_eq!(
        p("src net 10.0.0.0/8 or 11.0.0.0/8"),
        "(src net 10.0.0.0/8 || src net 11.0.0.0/8)"
    );
    assert_eq!(
        p("dst port 80 or 10.0.0.1"),
        "(dst port 80 || src or dst host 10.0.0.1)"
    );
    assert_eq!(p("tcp or 50"), "(ip proto 6 || ip proto 50)");
    assert_eq!(p("port 80 or tcp"), "(src or dst port 80 || ip proto 6)");
    assert_eq!(p("dst port 80 or syn"), "(dst port 80 || tcp opt syn)");
    assert_eq!(p("src port 80 or (81)"), "(src port 80 || src port 81)");
}

#[test]
fn parse_errors_name_the_token() {
    let cases: &[(&str, &str)] = &[
        ("", "empty pattern"),
        ("   ", "empty pattern"),
        ("hots 1.2.3.4", "unknown word 'hots'"),
        ("ip6", "'ip6': IPv6 is not supported here (IPClassifier and IPFilter match IPv4, as Click's do); classify IPv6 with Classifier (12/86dd, 20/3a for ICMPv6) and CheckIP6Header"),
        ("2001:db8::1", "'2001:db8::1': IPv6 is not supported here (IPClassifier and IPFilter match IPv4, as Click's do); classify IPv6 with Classifier (12/86dd, 20/3a for ICMPv6) and CheckIP6Header"),
        ("src hots 1.2.3.4", "unknown word 'hots'"),
        ("port foo", "unknown port 'foo'"),
        ("port 70000", "'70000' out of range for 'port' (0-65535)"),
        ("ip dscp 64", "'64' out of range for 'ip dscp' (0-63)"),
        ("ip vers 16", "'16' out of range for 'ip vers' (0-15)"),
        ("ip ttl 0x100", "'0x100' out of range for 'ip ttl' (0-255)"),
        ("ip[9] 256", "'256' out of range for 'ip[9:1]' (0-255)"),
        (
            "port & 70000 1",
            "'70000' out of range for 'port' (0-65535)",
        ),
        ("port & x", "bad mask 'x'"),
        ("port 2000-1000", "bad range '2000-1000'"),
        (
            "port < 1000-2000",
            "relation '<' cannot take a range ('1000-2000')",
        ),
        ("src ttl 5", "'src' does not apply to 'ip ttl'"),
        ("dst frag", "'dst' does not apply to 'ip frag'"),
        ("src tcp", "'src' does not apply to 'ip proto'"),
        ("udp opt syn", "'udp' does not apply to 'tcp opt'"),
        ("icmp port 5", "'icmp' does not apply to 'port'"),
        ("ip port 80", "'ip' does not apply to 'port'"),
        ("host < 1.2.3.4", "relation '<' does not apply to 'host'"),
        ("net >= 1.2.3.4", "relation '>=' does not apply to 'net'"),
        ("host & 255 1.2.3.4", "bad mask '255' for 'host'"),
        (
            "tcp opt != syn",
            "relation '!=' does not apply to 'tcp opt'",
        ),
        ("tcp opt & 2", "'&' does not apply to 'tcp opt'"),
        ("tcp opt foo", "unknown TCP option 'foo'"),
        ("icmp type foo", "unknown ICMP type 'foo'"),
        ("ip proto foo", "unknown protocol 'foo'"),
        ("ip ttl foo", "bad value 'foo' for 'ip ttl'"),
        ("host 1.2.3", "bad IP address '1.2.3'"),
        ("net 10.0.0.0/33", "bad IP prefix '10.0.0.0/33'"),
        ("net 10.0.0.0 mask 255.0.0", "bad mask '255.0.0'"),
        (
            "net 10.0.0.0 mask",
            "missing value after 'mask', found end of pattern",
        ),
        (
            "echo",
            "'echo' is ambiguous: say 'port echo' or 'icmp type echo'",
        ),
        ("80", "missing type before '80' (e.g. 'port 80')"),
        (
            "host 1.2.3.4 and 80",
            "missing type before '80' (e.g. 'port 80')",
        ),
        ("port", "missing value after 'port'"),
        ("src port and tcp", "missing value after 'port'"),
        ("port >", "missing value after '>'"),
        ("src", "missing value after 'src'"),
        ("src or dst", "missing value after 'dst'"),
        ("tcp and", "unexpected end of pattern"),
        ("tcp or or udp", "unexpected 'or'"),
        ("and tcp", "unexpected 'and'"),
        ("(tcp", "missing ')'"),
        ("(tcp udp", "missing ')'"),
        ("tcp)", "unexpected ')'"),
        ("()", "unexpected ')'"),
        ("tcp | udp", "unexpected '|' (did you mean '||'?)"),
        (
            "tcp ? udp",
            "expected ':' (surrounded by spaces) after '?', found end of pattern",
        ),
        ("tcp ? udp:icmp", "unknown word 'udp:icmp'"),
        ("tcp : udp", "unexpected ':'"),
        ("tcp - udp", "'-' must be the whole pattern"),
        ("tcp or all", "'all' must be the whole pattern"),
        ("== 5", "unexpected '=='"),
        ("tcp & 5", "missing value after '5'"),
        (
            "ip[x]",
            "bad field 'ip[x]' (expected e.g. 'ip[9:1]' or 'tcp[13]')",
        ),
        (
            "foo[1] 2",
            "bad field 'foo[1]' (expected e.g. 'ip[9:1]' or 'tcp[13]')",
        ),
        (
            "ip[0:5] 1",
            "bad field 'ip[0:5]': length must be 1 to 4 bytes",
        ),
        (
            "ip[0:2",
            "bad field 'ip[0:2' (expected e.g. 'ip[9:1]' or 'tcp[13]')",
        ),
        ("udp[0:2] 53 and tcp[0:2]", "missing value after 'tcp[0:2]'"),
    ];
    for (s, want) in cases {
        assert_eq!(&err(s), want, "pattern {s:?}");
    }
}

// ----- matcher -----

fn tcp(src: &str, dst: &str, sport: u16, dport: u16, flags: u8) -> Ip {
    Ip::new(src, dst, 0).tcp(sport, dport, 1, 2, flags, 1000)
}

fn udp(src: &str, dst: &str, sport: u16, dport: u16) -> Ip {
    Ip::new(src, dst, 0).udp(sport, dport, b"data")
}

#[test]
fn click_example_tcp_from_net() {
    let pats = [
        "10.0.0.0/24 and syn",
        "10.0.0.0/24 and fin ack",
        "10.0.0.0/24 and tcp",
        "-",
    ];
    let c = |d: Ip| class(&pats, &d.bytes());
    assert_eq!(c(tcp("10.0.0.1", "8.8.8.8", 1234, 80, SYN)), Some(0));
    assert_eq!(c(tcp("8.8.8.8", "10.0.0.7", 80, 1234, SYN | ACK)), Some(0));
    assert_eq!(c(tcp("10.0.0.1", "8.8.8.8", 1234, 80, FIN | ACK)), Some(1));
    assert_eq!(c(tcp("10.0.0.1", "8.8.8.8", 1234, 80, FIN)), Some(2));
    assert_eq!(c(tcp("10.0.0.1", "8.8.8.8", 1234, 80, ACK)), Some(2));
    assert_eq!(c(udp("10.0.0.1", "8.8.8.8", 1234, 80)), Some(3));
    assert_eq!(c(tcp("10.0.1.1", "8.8.8.8", 1234, 80, SYN)), Some(3));
}

#[test]
fn tcpudp_means_tcp_or_udp() {
    assert_eq!(p("tcpudp"), "(ip proto 6 || ip proto 17)");
    assert_eq!(p("tcpudp port 53"), p("port 53"));
    assert_eq!(p("src tcpudp port >= 1024"), p("src port >= 1024"));
    assert_eq!(p("tcpudp 80"), p("port 80"));
    let pats = ["tcpudp port >= 1024", "tcpudp"];
    let c = |d: Ip| class(&pats, &d.bytes());
    assert_eq!(c(tcp("1.1.1.1", "2.2.2.2", 5, 8000, 0)), Some(0));
    assert_eq!(c(udp("1.1.1.1", "2.2.2.2", 5, 1024)), Some(0));
    assert_eq!(c(udp("1.1.1.1", "2.2.2.2", 5, 53)), Some(1));
    assert_eq!(
        c(Ip::new("1.1.1.1", "2.2.2.2", 1).icmp(8, 0, [0; 4], b"x")),
        None
    );
}

#[test]
fn click_example_ports() {
    let pats = ["dst tcp port 8000 or 8080", "dst tcp port > 1023", "tcp"];
    let c = |d: Ip| class(&pats, &d.bytes());
    assert_eq!(c(tcp("1.1.1.1", "2.2.2.2", 5, 8000, 0)), Some(0));
    assert_eq!(c(tcp("1.1.1.1", "2.2.2.2", 5, 8080, 0)), Some(0));
    assert_eq!(c(tcp("1.1.1.1", "2.2.2.2", 5, 1024, 0)), Some(1));
    assert_eq!(c(tcp("1.1.1.1", "2.2.2.2", 5, 1023, 0)), Some(2));
    assert_eq!(c(tcp("1.1.1.1", "2.2.2.2", 8000, 80, 0)), Some(2));
    assert_eq!(c(udp("1.1.1.1", "2.2.2.2", 5, 8000)), None);
}

#[test]
fn hosts_nets_and_directions() {
    let d = tcp("10.0.0.1", "192.168.1.2", 1, 2, 0).bytes();
    let yes = [
        "src host 10.0.0.1",
        "dst host 192.168.1.2",
        "host 10.0.0.1",
        "host 192.168.1.2",
        "src or dst host 192.168.1.2",
        "src net 10.0.0.0/8",
        "dst net 192.168.0.0 mask 255.255.0.0",
        "net 192.0.1.0 mask 255.0.255.0",
        "src and dst net 0.0.0.0/1 or dst net 192.168.0.0/16",
        "src host != 10.0.0.2",
        "host != 1.1.1.1",
        "src INTERNALNET",
        "src mauer",
        "not src BASTION",
    ];
    let no = [
        "src host 192.168.1.2",
        "dst host 10.0.0.1",
        "src and dst host 10.0.0.1",
        "src and dst net 10.0.0.0/8",
        "host != 10.0.0.1",
        "src host != 10.0.0.1",
        "dst INTERNALNET",
        "net 11.0.0.0/8",
    ];
    for s in yes {
        assert!(matches(s, &d), "{s}");
    }
    for s in no {
        assert!(!matches(s, &d), "{s}");
    }
    let both = tcp("10.0.0.1", "10.0.0.9", 1, 2, 0).bytes();
    assert!(matches("src and dst net 10.0.0.0/24", &both));
    // `src and dst host != A` is `not (src and dst host A)`.
    assert!(matches("src and dst host != 10.0.0.9", &both));
    let same = tcp("10.0.0.9", "10.0.0.9", 1, 2, 0).bytes();
    assert!(!matches("src and dst host != 10.0.0.9", &same));
    assert!(matches("src or dst host != 10.0.0.8", &same));
    assert!(!matches("host != 10.0.0.9", &both));
}

#[test]
fn address_masks() {
    // `[sd] host & MASK [OP] ADDR`, Click's mask form on addresses; a
    // primitive starting with `&` repeats the previous one's type.
    assert_eq!(
        p("src host & 8.0.0.0 == 8.0.0.0"),
        "src net 8.0.0.0 mask 8.0.0.0"
    );
    assert_eq!(p("src host & 255.0.0.0 10.1.2.3"), "src net 10.0.0.0/8");
    assert_eq!(
        p("src 10.0.0.0 & 8.0.0.0 = 8.0.0.0"),
        "(src host 10.0.0.0 && src net 8.0.0.0 mask 8.0.0.0)"
    );
    assert_eq!(p("dst net & 255.255.0.0 10.0.0.0/8"), "dst net 10.0.0.0/8");
    assert_eq!(
        p("src host & 8.0.0.0 != 8.0.0.0"),
        "src net != 8.0.0.0 mask 8.0.0.0"
    );
    assert_eq!(
        err("src host & 8.0.0.0"),
        "missing address after '& 8.0.0.0' for 'host'"
    );
    assert_eq!(
        err("src host & 1.2.3 1.0.0.0"),
        "bad mask '1.2.3' for 'host'"
    );
    let d = tcp("10.0.0.1", "192.168.1.2", 1, 2, 0).bytes();
    for (s, want) in [
        ("src host & 8.0.0.0 == 8.0.0.0", true),
        ("src host & 8.0.0.0 != 8.0.0.0", false),
        ("dst host & 8.0.0.0 == 8.0.0.0", false),
        ("src host & 255.0.0.255 10.0.0.1", true),
        ("src host & 255.0.0.255 10.9.9.1", true),
        ("src host & 255.0.0.255 10.0.0.2", false),
        ("src 10.0.0.1 & 8.0.0.0 = 8.0.0.0", true),
        ("src 2.0.0.1 & 8.0.0.0 = 8.0.0.0", false),
        ("host & 255.255.0.0 192.168.0.0", true),
    ] {
        assert_eq!(matches(s, &d), want, "{s}");
    }
}

#[test]
fn ports_relations_and_names() {
    let d = tcp("1.1.1.1", "2.2.2.2", 1234, 80, SYN).bytes();
    let u = udp("1.1.1.1", "2.2.2.2", 53, 40000).bytes();
    for (s, on_tcp, on_udp) in [
        ("port 80", true, false),
        ("port www", true, false),
        ("www", true, false),
        ("src port 1234", true, false),
        ("dst port 1234", false, false),
        ("tcp port 80", true, false),
        ("udp port 80", false, false),
        ("udp port domain", false, true),
        ("src port domain", false, true),
        ("dst port > 1023", false, true),
        ("src port > 1023", true, false),
        ("src port >= 1234", true, false),
        ("src port > 1234", false, false),
        ("src port < 1234", false, true),
        ("src port <= 1234", true, true),
        ("dst port 1-100", true, false),
        ("port 1000-2000", true, false),
        ("dst port != 1-100", false, true),
        ("port != 80", false, true),
        ("src port != 80", true, true),
        ("src tcp port != 5", true, false),
        ("!(src tcp port 5)", true, true),
        ("src and dst port > 50", true, true),
        ("src and dst port > 60", true, false),
        ("src or dst port < 60", false, true),
        ("src port & 0xff == 0xd2", true, false),
        ("src port & 1", false, true),
        ("tcp opt syn", true, false),
        ("syn", true, false),
        ("ack", false, false),
        ("tcp win 1000", true, false),
        ("tcp win > 1000", false, false),
        ("tcp[13] & 2", true, false),
        ("udp[0:2] 53", false, true),
        ("transp[2:2] 80", true, false),
        ("transp[0:4] == 0x04d20050", true, false),
        ("icmp type 0", false, false),
    ] {
        assert_eq!(matches(s, &d), on_tcp, "{s} on TCP");
        assert_eq!(matches(s, &u), on_udp, "{s} on UDP");
    }
}

#[test]
fn ip_fields() {
    let d = tcp("1.1.1.1", "2.2.2.2", 1, 2, 0)
        .ttl(64)
        .tos(0xb9) // DSCP 46, ECN 1
        .id(0x1234)
        .bytes();
    for (s, want) in [
        ("ip vers 4", true),
        ("ip vers 6", false),
        ("ip hl 5", true),
        ("ip hl > 5", false),
        ("ip id 0x1234", true),
        ("ip tos 0xb9", true),
        ("ip dscp 46", true),
        ("ip dscp != 46", false),
        ("ip ect", true),
        ("ip ce", false),
        ("ip ttl 64", true),
        ("ip ttl < 64", false),
        ("ip ttl <= 64", true),
        ("ttl > 10", true),
        ("ip ttl 60-70", true),
        ("ip proto 6", true),
        ("ip proto > 6", false),
        ("ip[8] 64", true),
        ("ip[12:4] 0x01010101", true),
        ("ip[0] & 0xf0 == 0x40", true),
        ("ip frag", false),
        ("ip unfrag", true),
    ] {
        assert_eq!(matches(s, &d), want, "{s}");
    }
    let ce = tcp("1.1.1.1", "2.2.2.2", 1, 2, 0).tos(0x03).bytes();
    assert!(matches("ip ce", &ce));
    assert!(matches("ip ect", &ce));
    assert!(!matches(
        "ip ect",
        &tcp("1.1.1.1", "2.2.2.2", 1, 2, 0).bytes()
    ));
}

#[test]
fn ip_options_move_the_transport_header() {
    // Options whose bytes read as ports 22 -> 22 if the transport header
    // were wrongly taken at offset 20.
    let d = tcp("1.1.1.1", "2.2.2.2", 1234, 80, SYN)
        .options(&[0x00, 0x16, 0x00, 0x16, 1, 1, 1, 1])
        .bytes();
    assert_eq!(d[0], 0x47);
    assert!(matches("ip hl 7", &d));
    assert!(matches("dst port 80", &d));
    assert!(matches("src port 1234", &d));
    assert!(!matches("port 22", &d));
    assert!(matches("syn", &d));
    assert!(matches("tcp win 1000", &d));
    assert!(matches("ip[20:2] 22", &d));
    assert!(matches("transp[0:2] 1234", &d));
    // The largest header (60 bytes).
    let d = udp("1.1.1.1", "2.2.2.2", 5, 53).options(&[1; 40]).bytes();
    assert!(matches("ip hl 15 and udp port 53", &d));
}

#[test]
fn fragments() {
    let base = || tcp("1.1.1.1", "2.2.2.2", 1234, 80, SYN);
    let first = base().frag(0x2000).bytes(); // MF, offset 0
    let later = base().frag(0x00b9).bytes(); // offset 185*8, last
    let df = base().frag(0x4000).bytes(); // DF only
    for (s, f, l, d) in [
        ("ip frag", true, true, false),
        ("ip unfrag", false, false, true),
        ("tcp", true, true, true),
        ("dst port 80", true, false, true),
        ("not dst port 80", false, true, false),
        ("dst port != 80", false, false, false),
        ("dst port != 81", true, false, true),
        ("syn", true, false, true),
        ("tcp win 1000", true, false, true),
        ("transp[0:2] 1234", true, false, true),
        ("ip[20:2] 1234", true, true, true),
        ("src host 1.1.1.1", true, true, true),
    ] {
        assert_eq!(matches(s, &first), f, "{s} on first fragment");
        assert_eq!(matches(s, &later), l, "{s} on later fragment");
        assert_eq!(matches(s, &df), d, "{s} on DF packet");
    }
    let icmp_later = Ip::new("1.1.1.1", "2.2.2.2", 0)
        .icmp(8, 0, [0; 4], b"x")
        .frag(0x0001)
        .bytes();
    assert!(!matches("icmp type echo", &icmp_later));
    assert!(matches("icmp and ip frag", &icmp_later));
}

#[test]
fn icmp_types() {
    let echo = Ip::new("1.1.1.1", "2.2.2.2", 0)
        .icmp(8, 0, [0; 4], b"ping")
        .bytes();
    let reply = Ip::new("2.2.2.2", "1.1.1.1", 0)
        .icmp(0, 0, [0; 4], b"ping")
        .bytes();
    let u = udp("1.1.1.1", "2.2.2.2", 8, 8).bytes();
    let pats = [
        "icmp type echo",
        "icmp type echo-reply",
        "icmp type != 0",
        "icmp",
    ];
    assert_eq!(class(&pats, &echo), Some(0));
    assert_eq!(class(&pats, &reply), Some(1));
    assert_eq!(class(&pats, &u), None, "icmp type != 0 needs ICMP");
    let unreach = Ip::new("1.1.1.1", "2.2.2.2", 0)
        .icmp(3, 1, [0; 4], b"")
        .bytes();
    assert_eq!(class(&pats, &unreach), Some(2));
    assert!(matches("icmp type < 5", &unreach));
    assert!(matches("icmp[1] 1", &unreach));
}

#[test]
fn truncated_packets_fail_tests_on_missing_bytes() {
    let full = tcp("10.0.0.1", "10.0.0.2", 1234, 80, SYN).bytes();
    let c = |n: usize, s: &str| matches(s, &full[..n]);
    // IP header cut after the source address.
    assert!(c(16, "src host 10.0.0.1"));
    assert!(!c(16, "dst host 10.0.0.2"));
    assert!(c(16, "not dst host 10.0.0.2"));
    assert!(c(16, "host 10.0.0.1"));
    assert!(!c(16, "src and dst net 10.0.0.0/8"));
    assert!(!c(19, "dst host 10.0.0.2"));
    assert!(!c(19, "dst host != 10.0.0.3"));
    // Transport header cut after the source port.
    assert!(c(22, "src port 1234"));
    assert!(!c(22, "dst port 80"));
    assert!(c(22, "port 1234"));
    assert!(!c(22, "port != 80"), "needs both ports");
    assert!(c(22, "src port != 80"));
    assert!(!c(22, "syn"));
    assert!(c(34, "syn"));
    assert!(!c(33, "syn"));
    assert!(!c(35, "tcp win 1000"));
    assert!(c(36, "tcp win 1000"));
    // Short headers.
    assert!(!c(8, "ip ttl 64"));
    assert!(c(9, "ip ttl 64"));
    assert!(c(8, "not ip ttl 64"));
    assert!(!c(9, "tcp"));
    assert!(!c(7, "ip frag"));
    assert!(c(7, "ip unfrag"));
    assert!(!c(7, "transp[0] < 255 or ip[7] 0"));
    assert!(c(1, "ip vers 4"));
    assert!(!c(0, "ip vers 4"));
    assert!(!c(0, "true and ip[0] & 0"));
    assert_eq!(class(&["ip vers 4", "-"], &[]), Some(1));
    assert_eq!(class(&["ip vers 4"], &[]), None);
}

#[test]
fn bad_header_lengths_are_safe() {
    // IHL 15 on a 24-byte packet: transport tests see no bytes.
    let mut d = tcp("1.1.1.1", "2.2.2.2", 1, 2, 0).bytes();
    d[0] = 0x4f;
    assert!(!matches("src port 1", &d[..24]));
    // IHL 0: the transport header is read at offset 0 (as the field says).
    d[0] = 0x40;
    assert!(matches("transp[0] 0x40", &d));
}

#[test]
fn network_header_annotation() {
    let ip = udp("10.0.0.1", "10.0.0.2", 53, 53).bytes();
    let prog = compile(&["udp port 53 and ip vers 4", "-"]);
    // Behind a 14-byte Ethernet header, marked.
    let mut frame = vec![0xffu8; 14];
    frame.extend_from_slice(&ip);
    let mut p = Packet::from_slice(&frame).unwrap();
    p.set_network_header(14, 20);
    assert_eq!(prog.classify(&p), Verdict::Out(0));
    // Not marked: the IP header is looked for at the start of the data.
    let p = Packet::from_slice(&frame).unwrap();
    assert_eq!(prog.classify(&p), Verdict::Out(1));
    let p = Packet::from_slice(&ip).unwrap();
    assert_eq!(prog.classify(&p), Verdict::Out(0));
    // Marked, then the data start moved past the header (as after Strip).
    let mut p = Packet::from_slice(&frame).unwrap();
    p.set_network_header(14, 20);
    p.pull(20);
    assert_eq!(prog.classify(&p), Verdict::Out(0));
}

#[test]
fn compiled_program_shape() {
    // Identical tests are shared; a failed protocol test skips the same
    // protocol test in the next pattern.
    let prog = compile(&["tcp port 80", "tcp port 81", "udp"]);
    let l = prog.listing();
    assert!(l.starts_with("start: step 0\n"), "{l}");
    assert!(prog.unmatchable().is_empty());
    // proto==6, sport 80, dport 80, proto==6 (pattern 1's, reached from
    // dport 80 failing), sport 81, dport 81, proto==17.
    assert_eq!(prog.len(), 7, "{l}");
    let first = l.lines().nth(1).unwrap();
    assert_eq!(first, "  0  ip[9] == 6  yes: step 1  no: step 6");
    assert!(
        l.contains("ip[6:2] & 0x1fff == 0  yes: step 2  no: drop"),
        "{l}"
    );
    assert!(l.contains("transp[0:2] == 80  yes: [0]  no: step 3"), "{l}");
    assert!(l.contains("ip[9] == 17  yes: [2]  no: drop"), "{l}");
    let prog = compile(&["-", "tcp"]);
    assert_eq!(prog.len(), 0);
    assert_eq!(prog.unmatchable(), &[1]);
    assert_eq!(prog.listing(), "start: [0]\n");
    let prog = compile(&[
        "false",
        "ip ttl 1-5 and ip ttl 10-20",
        "ip ttl > 10 and ip ttl < 5",
    ]);
    assert_eq!(prog.unmatchable(), &[0, 1, 2]);
    assert_eq!(prog.listing(), "start: drop\n");
    // Protocol facts flow into later conjuncts: one protocol test for
    // Click's firewall rule, none repeated for the ports and the flag.
    let prog = compile(&[
        "src 10.1.0.1 && dst 10.0.0.0/8 && tcp && src port www && dst port > 1023 && ack",
    ]);
    let l = prog.listing();
    assert_eq!(l.matches("ip[9]").count(), 1, "{l}");
    assert_eq!(l.matches("ip[6:2]").count(), 1, "{l}");
    assert_eq!(prog.len(), 7, "{l}");
    let prog = compile(&[
        "udp ? port 53 : icmp type echo",
        "src port 1 and dst port 2",
    ]);
    let l = prog.listing();
    // The second pattern's own `udp` test is decided on every path.
    assert_eq!(l.matches("ip[9] == 17").count(), 1, "{l}");
    assert_eq!(l.matches("ip[9] == 6").count(), 1, "{l}");
    // Field displays in the listing.
    let l = compile(&["src net 10.0.0.0/8 and dst host != 1.2.3.4"]).listing();
    assert!(l.contains("ip[12:4] & 255.0.0.0 == 10.0.0.0"), "{l}");
    assert!(l.contains("ip[16:4] != 1.2.3.4"), "{l}");
    let l = compile(&["ip vers 4 and ip dscp > 10 and src port & 3 != 1"]).listing();
    assert!(l.contains("ip[0] >> 4 == 4"), "{l}");
    assert!(l.contains("ip[1] >> 2 >= 11"), "{l}");
    assert!(l.contains("transp[0:2] & 0x3 != 1"), "{l}");
}

// ----- randomized cross-check -----

const ADDRS: [[u8; 4]; 5] = [
    [10, 0, 0, 1],
    [10, 0, 0, 2],
    [10, 1, 2, 3],
    [192, 168, 1, 1],
    [172, 16, 0, 9],
];
const PORTS: [u16; 12] = [80, 53, 1023, 1024, 0, 65535, 443, 22, 256, 4096, 32768, 511];

fn pick<T: Copy>(r: &mut Rng, v: &[T]) -> T {
    v[r.below(v.len())]
}

fn rand_value(r: &mut Rng, max: u32, pool: &[u32]) -> u32 {
    if !pool.is_empty() && r.below(3) > 0 {
        pick(r, pool)
    } else if max == u32::MAX {
        r.next_u64() as u32
    } else {
        (r.next_u64() % (u64::from(max) + 1)) as u32
    }
}

fn rand_rel(r: &mut Rng, max: u32, pool: &[u32]) -> Rel {
    let mask = (r.below(5) == 0).then(|| rand_value(r, max, &[]));
    let ops = [
        Op::Eq,
        Op::Ne,
        Op::Lt,
        Op::Le,
        Op::Gt,
        Op::Ge,
        Op::In,
        Op::NotIn,
        Op::Nonzero,
    ];
    let mut op = pick(r, &ops);
    if op == Op::Nonzero && mask.is_none() {
        op = Op::Eq;
    }
    let a = rand_value(r, max, pool);
    let (a, b) = match op {
        Op::In | Op::NotIn => {
            let b = rand_value(r, max, pool);
            (a.min(b), a.max(b))
        }
        Op::Nonzero => (0, 0),
        _ => (a, a),
    };
    Rel { mask, op, a, b }
}

fn rand_sd(r: &mut Rng) -> Sd {
    pick(r, &[Sd::Src, Sd::Dst, Sd::Or, Sd::And])
}

fn rand_prim(r: &mut Rng) -> Prim {
    let ports: Vec<u32> = PORTS.iter().map(|&p| u32::from(p)).collect();
    match r.below(12) {
        0 | 1 => {
            let len = pick(r, &[0u32, 8, 16, 24, 32, 32, 5]);
            let mut mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            if r.below(6) == 0 {
                mask = r.next_u64() as u32;
            }
            let addr = u32::from_be_bytes(pick(r, &ADDRS)) & mask;
            Prim::Addr {
                sd: rand_sd(r),
                addr,
                mask,
                ne: r.below(3) == 0,
            }
        }
        2 | 3 => {
            let field = pick(
                r,
                &[
                    IpField::Vers,
                    IpField::Hl,
                    IpField::Tos,
                    IpField::Dscp,
                    IpField::Id,
                    IpField::Ttl,
                    IpField::Proto,
                ],
            );
            let pool: &[u32] = match field {
                IpField::Vers => &[4],
                IpField::Hl => &[5, 6, 15],
                IpField::Ttl => &[64, 1, 255],
                IpField::Proto => &[6, 17, 1],
                _ => &[0],
            };
            Prim::Ip {
                field,
                rel: rand_rel(r, field.max(), pool),
            }
        }
        4 => pick(r, &[Prim::Frag, Prim::Ect, Prim::Ce]),
        5 | 6 => Prim::Port {
            sd: rand_sd(r),
            proto: pick(r, &[PortProto::Tcp, PortProto::Udp, PortProto::Any]),
            rel: rand_rel(r, 65535, &ports),
        },
        7 => Prim::TcpOpt(pick(r, &[0x01, 0x02, 0x04, 0x08, 0x10, 0x20])),
        8 => Prim::TcpWin(rand_rel(r, 65535, &[1000])),
        9 => Prim::IcmpType(rand_rel(r, 255, &[0, 3, 8, 11])),
        10 => {
            let len = 1 + r.below(4) as u8;
            let max = if len == 4 {
                u32::MAX
            } else {
                (1 << (8 * len)) - 1
            };
            Prim::IpBytes {
                off: r.below(26) as u16,
                len,
                rel: rand_rel(r, max, &[0, 0x45, 6]),
            }
        }
        _ => {
            let len = 1 + r.below(4) as u8;
            let max = if len == 4 {
                u32::MAX
            } else {
                (1 << (8 * len)) - 1
            };
            Prim::TranspBytes {
                proto: pick(r, &[None, Some(6), Some(17), Some(1)]),
                off: r.below(24) as u16,
                len,
                rel: rand_rel(r, max, &[0, 80, 53, 8]),
            }
        }
    }
}

fn rand_expr(r: &mut Rng, depth: u32) -> Expr {
    let b = |e: Expr| Box::new(e);
    if depth == 0 || r.below(3) == 0 {
        return match r.below(20) {
            0 => Expr::Const(r.below(2) == 0),
            _ => Expr::Prim(rand_prim(r)),
        };
    }
    match r.below(5) {
        0 => Expr::Not(b(rand_expr(r, depth - 1))),
        1 | 2 => Expr::And(
            (0..2 + r.below(2))
                .map(|_| rand_expr(r, depth - 1))
                .collect(),
        ),
        3 => Expr::Or(
            (0..2 + r.below(2))
                .map(|_| rand_expr(r, depth - 1))
                .collect(),
        ),
        _ => Expr::Cond(
            b(rand_expr(r, depth - 1)),
            b(rand_expr(r, depth - 1)),
            b(rand_expr(r, depth - 1)),
        ),
    }
}

/// A random IP datagram drawn to hit the patterns' values: pool addresses
/// and ports, fragments, options, odd header lengths, truncation, noise.
fn rand_packet(r: &mut Rng) -> Vec<u8> {
    if r.below(20) == 0 {
        let n = r.below(70);
        return r.bytes(n);
    }
    let mut d = r.datagram();
    d.src = pick(r, &ADDRS).into();
    d.dst = pick(r, &ADDRS).into();
    let any = r.u16();
    d.frag = pick(r, &[0, 0, 0, 0x2000, 0x4000, 0x00b9, 0x20b9, any]);
    if r.below(3) == 0 {
        d.ttl = pick(r, &[64, 1, 255]);
    }
    if r.below(4) == 0 {
        d.proto = pick(r, &[ip_proto::TCP, ip_proto::UDP, ip_proto::ICMP]);
    }
    let hlen = d.hlen();
    let mut v = d.bytes();
    if v.len() >= hlen + 4 && r.below(3) > 0 {
        let sp = pick(r, &PORTS);
        let dp = pick(r, &PORTS);
        v[hlen..hlen + 2].copy_from_slice(&sp.to_be_bytes());
        v[hlen + 2..hlen + 4].copy_from_slice(&dp.to_be_bytes());
    }
    if d.proto == ip_proto::ICMP && v.len() > hlen {
        v[hlen] = pick(r, &[0, 3, 8, 11]);
    }
    if r.below(10) == 0 {
        v[0] = (v[0] & 0xf0) | (r.u8() & 0x0f);
    }
    if r.below(10) == 0 {
        v[0] = r.u8();
    }
    if r.below(4) == 0 {
        let n = r.below(v.len() + 1);
        v.truncate(n);
    }
    v
}

#[test]
fn randomized_compiled_program_agrees_with_interpreter() {
    let mut r = Rng::new(0x1bf1_17e5);
    let env = env();
    for round in 0..400 {
        let nrules = 1 + r.below(5);
        let nout = 1 + r.below(3);
        let rules: Vec<(Expr, Action)> = (0..nrules)
            .map(|_| {
                let e = rand_expr(&mut r, 4);
                let a = if r.below(4) == 0 {
                    Action::Drop
                } else {
                    Action::Out(r.below(nout))
                };
                (e, a)
            })
            .collect();
        // The AST prints as a pattern that parses back to itself.
        for (e, _) in &rules {
            let text = e.to_string();
            let back = parse_pattern(&text, &env).unwrap_or_else(|m| panic!("{text}: {m}"));
            assert_eq!(&back, e, "round trip of {text}");
        }
        let prog = Program::compile(&rules);
        for _ in 0..150 {
            let v = rand_packet(&mut r);
            let want = interp::classify(&rules, &v);
            let got = prog.run(&v);
            if got != want {
                let pats: Vec<String> = rules.iter().map(|(e, a)| format!("{a:?} {e}")).collect();
                panic!(
                    "round {round}: compiled {got:?}, interpreted {want:?}\npacket {v:02x?}\nrules {pats:#?}\n{}",
                    prog.listing()
                );
            }
        }
    }
}

#[test]
fn optimizer_keeps_every_verdict() {
    // The optimized program (jump threading over path facts, clamped and
    // normalized ranges, merged word tests) against the program as built
    // and against the interpreter, on random rules and packets, truncated
    // ones included; the optimized one is never longer.
    let mut r = Rng::new(0x0b71_3a5e);
    for round in 0..1500 {
        let nrules = 1 + r.below(6);
        let rules: Vec<(Expr, Action)> = (0..nrules)
            .map(|_| {
                let a = if r.below(5) == 0 {
                    Action::Drop
                } else {
                    Action::Out(r.below(3))
                };
                (rand_expr(&mut r, 3), a)
            })
            .collect();
        let opt = Program::compile(&rules);
        let plain = Program::compile_unoptimized(&rules);
        assert!(opt.len() <= plain.len(), "round {round}");
        for _ in 0..120 {
            let mut v = rand_packet(&mut r);
            // Random TCP flags and transport bytes.
            let th = usize::from(v.first().map_or(5, |b| b & 0x0f)) * 4;
            if r.below(2) == 0 && v.len() > th + 13 {
                v[th + 13] = r.u8();
            }
            if r.below(4) == 0 && v.len() > th {
                let k = th + r.below(v.len() - th);
                v[k] = r.u8();
            }
            let (got, base, want) = (opt.run(&v), plain.run(&v), interp::classify(&rules, &v));
            if got != base || got != want {
                let pats: Vec<String> = rules.iter().map(|(e, a)| format!("{a:?} {e}")).collect();
                panic!(
                    "round {round}: optimized {got:?}, unoptimized {base:?}, interpreted {want:?}\npacket {v:02x?}\nrules {pats:#?}\n{}\n{}",
                    opt.listing(),
                    plain.listing()
                );
            }
        }
    }
}

#[test]
fn optimizer_removes_implied_tests() {
    // Across masks: the address decides the /8 test.
    let p = compile(&["src 10.0.0.1 and src net 10.0.0.0/8"]);
    assert_eq!(p.len(), 1, "{}", p.listing());
    let p = compile(&["src 10.0.0.1 and not src net 11.0.0.0/8"]);
    assert_eq!(p.len(), 1, "{}", p.listing());
    // Across paths: after `dst port 7777` failed on a first fragment,
    // the protocol and fragment tests of the next pattern are known on
    // both ways in (TCP, UDP), so it goes straight to its port.
    let p = compile(&["dst port 7777", "dst port 8888", "icmp"]);
    let l = p.listing();
    assert_eq!(l.matches("ip[9] == 6").count(), 1, "{l}");
    assert_eq!(l.matches("ip[6:2]").count(), 1, "{l}");
    assert!(
        l.contains("transp[2:2] == 7777  yes: [0]  no: step 4"),
        "{l}"
    );
    assert!(l.contains("  4  transp[2:2] == 8888"), "{l}");
    for (ip, want) in [
        (udp("1.0.0.1", "1.0.0.2", 1, 8888).bytes(), Some(1)),
        (tcp("1.0.0.1", "1.0.0.2", 1, 7777, 0).bytes(), Some(0)),
        (
            Ip::new("1.0.0.1", "1.0.0.2", ip_proto::ICMP).bytes(),
            Some(2),
        ),
    ] {
        assert_eq!(
            class(&["dst port 7777", "dst port 8888", "icmp"], &ip),
            want
        );
    }
}

#[test]
fn packet_path_folds_the_fragment_test() {
    // The listing shows Click's first-fragment step; the packet path
    // leaves it to the port test, which fails on a later fragment itself.
    let pats = ["udp dst port 53", "ip ttl 1"];
    let p = compile(&pats);
    assert!(p.listing().contains("ip[6:2] & 0x1fff == 0"));
    let dns = udp("1.0.0.1", "1.0.0.2", 9, 53).bytes();
    assert_eq!(p.path_len(&dns), 2, "{}", p.listing());
    let mut frag = dns.clone();
    frag[6] = 0x00;
    frag[7] = 0xb9;
    frag[8] = 1;
    assert_eq!(class(&pats, &dns), Some(0));
    assert_eq!(class(&pats, &frag), Some(1));
}

#[test]
fn optimizer_prunes_contradicted_branches() {
    // A TCP packet that is a later fragment fails `dst port 80`; the UDP
    // pattern cannot hold for it, so that branch goes straight to drop.
    let p = compile(&["tcp dst port 80", "udp src port 53", "ip ttl 1"]);
    let l = p.listing();
    assert!(
        l.contains("ip[6:2] & 0x1fff == 0  yes: step 2  no: step 6"),
        "{l}"
    );
    assert!(l.contains("  6  ip[8] == 1"), "{l}");
    assert_eq!(l.matches("ip[9] == 17").count(), 1, "{l}");
    // A pattern no packet matches alone.
    assert!(Program::matches_nothing(
        &parse_pattern("tcp and udp", &env()).unwrap()
    ));
    assert!(!Program::matches_nothing(
        &parse_pattern("tcp or udp", &env()).unwrap()
    ));
}

#[test]
fn port_ranges_are_clamped_and_written_as_masks() {
    // `>= 1024` is 1024-65535 of a 16-bit port: one masked test, not a
    // range reaching 2^32 - 1.
    let p = compile(&["dst port >= 1024"]);
    let l = p.listing();
    assert!(l.contains("transp[2:2] & 0xfc00 != 0"), "{l}");
    let c = p.click_listing();
    assert!(
        c.contains(" 3 512/00000000%0000fc00  yes->[X]  no->[0]  short->yes\n"),
        "{c}"
    );
    assert_eq!(c.lines().count(), 6, "{c}");
    let l = compile(&["src port < 256", "tcp win 4096-8191", "port > 65535"]).listing();
    assert!(l.contains("transp[0:2] & 0xff00 == 0"), "{l}");
    assert!(l.contains("transp[14:2] & 0xf000 == 4096"), "{l}");
    assert!(!l.contains("4294967295"), "{l}");
    for (port, want) in [(1023, false), (1024, true), (65535, true), (0, false)] {
        let ip = udp("1.0.0.1", "1.0.0.2", 9, port).bytes();
        assert_eq!(matches("dst port >= 1024", &ip), want, "{port}");
    }
}

#[test]
fn word_tests_merge_as_clicks_do() {
    // `syn and not ack`: one test of the flags byte.
    let c = compile(&["tcp and syn and not ack"]).click_listing();
    assert!(
        c.contains("524/00020000%00120000  yes->[0]  no->[X]"),
        "{c}"
    );
    for (flags, want) in [(SYN, true), (SYN | ACK, false), (ACK, false), (0, false)] {
        let ip = tcp("1.0.0.1", "1.0.0.2", 1, 2, flags).bytes();
        assert_eq!(matches("tcp and syn and not ack", &ip), want, "{flags:#x}");
    }
    // Either port at or above 1024: one test of both ports.
    let pat = "tcpudp port >= 1024";
    let c = compile(&[pat]).click_listing();
    assert!(
        c.contains("512/00000000%fc00fc00  yes->[X]  no->[0]  short->yes"),
        "{c}"
    );
    // Cut inside the destination port, the source port alone decides, as
    // it did before the merge.
    let full = udp("1.0.0.1", "1.0.0.2", 2000, 80).bytes();
    assert!(matches(pat, &full));
    assert!(matches(pat, &full[..22]));
    assert!(matches(pat, &full[..23]));
    assert!(!matches(pat, &full[..21]));
    let low = udp("1.0.0.1", "1.0.0.2", 80, 2000).bytes();
    assert!(matches(pat, &low));
    assert!(!matches(pat, &low[..23]));
}

#[test]
fn randomized_packets_through_elements() {
    // The same cross-check through the element and a marked packet with a
    // link header in front, so the annotation path is exercised too.
    let mut r = Rng::new(7);
    let env = env();
    let pats = [
        "src port 80 or 53 and not syn",
        "10.0.0.0/24 and (tcp or icmp type echo)",
        "ip frag ? udp : dst net 192.168.0.0/16",
        "ip ttl < 64 && !(port 1023-1024)",
        "-",
    ];
    let rules: Vec<_> = pats
        .iter()
        .enumerate()
        .map(|(i, s)| (parse_pattern(s, &env).unwrap(), Action::Out(i)))
        .collect();
    let h = harness(&format!("IPClassifier({})", pats.join(", ")), pats.len());
    let mut want = vec![Vec::new(); pats.len()];
    let mut packets = Vec::new();
    for k in 0..500u16 {
        let mut v = rand_packet(&mut r);
        let class = match interp::classify(&rules, &v) {
            Verdict::Out(i) => i,
            Verdict::Drop | Verdict::DropFor(_) => unreachable!("'-' catches all"),
        };
        want[class].push(k);
        let mut frame = vec![0u8; 14];
        frame.extend_from_slice(&k.to_be_bytes());
        frame.append(&mut v);
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(16, 20);
        packets.push(p);
    }
    h.push(0, packets);
    for (i, w) in want.iter().enumerate() {
        let got: Vec<u16> = h
            .output(i)
            .iter()
            .map(|p| u16::from_be_bytes([p.data()[14], p.data()[15]]))
            .collect();
        assert_eq!(&got, w, "output {i}");
    }
    assert_eq!(h.drops(), 0);
}

// ----- Ethernet addresses -----

/// An Ethernet frame (dst, src) around `ip`, with its MAC and network
/// header annotations set.
fn framed(dst: &str, src: &str, ip: &Ip) -> Packet {
    let mut p = pkt(&ether_frame(
        eth(dst),
        eth(src),
        0x0800,
        &ip.clone().bytes(),
    ));
    p.set_mac_header(0);
    p.set_network_header(14, 20);
    p
}

#[test]
fn ether_host_parses() {
    assert_eq!(
        p("ether host 0:1:2:3:4:5"),
        "src or dst ether host 00:01:02:03:04:05"
    );
    assert_eq!(p("src 0:1:2:3:4:5"), "src ether host 00:01:02:03:04:05");
    assert_eq!(
        p("dst host 9:A:B:C:D:E"),
        "dst ether host 09:0a:0b:0c:0d:0e"
    );
    assert_eq!(
        p("src ether host != 0-1-2-3-4-5"),
        "src ether host != 00:01:02:03:04:05"
    );
    assert!(err("ether 0:1:2:3:4:5").contains("expected 'host' after 'ether'"));
    assert!(err("ether host 0:1:2:3:4").contains("bad Ethernet address"));
}

#[test]
fn ether_host_matches_the_mac_header() {
    let ip = Ip::new("10.0.0.1", "10.0.0.2", 17).udp(1, 2, b"x");
    let a = "00:01:02:03:04:05";
    let b = "10:20:30:40:50:60";
    let prog = |pat: &str| compile(&[pat]);
    let m = |pat: &str, p: &Packet| prog(pat).classify(p) == Verdict::Out(0);
    let from_a = framed(b, a, &ip);
    assert!(m("src ether host 00:01:02:03:04:05", &from_a));
    assert!(!m("dst ether host 00:01:02:03:04:05", &from_a));
    assert!(m("dst 10:20:30:40:50:60", &from_a));
    assert!(m("ether host 10:20:30:40:50:60", &from_a));
    assert!(!m("ether host 02:00:00:00:00:09", &from_a));
    assert!(m("src ether host != 02:00:00:00:00:09", &from_a));
    assert!(m("src 0:1:2:3:4:5 and udp", &from_a));
    // A near miss in either part of the address fails.
    assert!(!m("src ether host 00:01:02:03:04:06", &from_a));
    assert!(!m("src ether host 01:01:02:03:04:05", &from_a));
    // Without a MAC header annotation, Ethernet tests fail (even !=).
    let mut bare = pkt(&ip.clone().bytes());
    bare.set_network_header(0, 20);
    assert!(!m("src ether host 00:01:02:03:04:05", &bare));
    assert!(!m("src ether host != 02:00:00:00:00:09", &bare));
}

#[test]
fn ether_listing_uses_clicks_offsets() {
    // Click numbers the MAC header from 2: the source address is the
    // words at 8 and 12, the destination the words at 0 and 4.
    let l = compile(&["src 0:1:2:3:4:5", "dst 10:20:30:40:50:60"]).click_listing();
    for want in [
        "  8/00010203%ffffffff",
        " 12/04050000%ffff0000",
        "  0/00001020%0000ffff",
        "  4/30405060%ffffffff",
    ] {
        assert!(l.contains(want), "{want} not in\n{l}");
    }
}
