//! Real hosts through the router: runs tests/netns/run.sh with the built
//! binary. The script builds network namespaces joined by veth pairs, runs
//! conf/iprouter-veth.click (then conf/iprouter-veth-2q.click at -j 2) in
//! the router's namespace, and checks with Linux's own tools: ping and its
//! TTL, ping -t 1 (time exceeded), HTTP transfers with intact sha256, and
//! path MTU discovery (Frag needed); then conf/iprouter-veth-2q-poll.click
//! (MultiFromDevice pollers) the same way. A second script checks
//! MultiFromDevice itself on veth pairs (exact counts per output). A third
//! runs conf/iprouter-veth-host.click, whose FromHost/ToHost taps let the
//! hosts reach TCP services Linux runs on the router's own addresses.
//!
//! They need root (namespaces, veth pairs, packet sockets, taps). Run as
//! anyone else each test is skipped with a loud message on stderr (it
//! passes without checking anything), so a contributor's `cargo test`
//! works; with `PARACLICK_NO_SKIP=1` in the environment (what
//! scripts/test.sh, and so CI, sets) not being root fails instead, so that a
//! skipped test cannot hide a broken router there. As root they always run,
//! and a missing tool fails them.

#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether the effective user is root.
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// Runs `tests/netns/SCRIPT` with the paraclick binary (as root, within
/// `limit`); returns its output once it has passed and said `done`. It
/// may run beside one other script (see [`ALONE`]).
fn run_script(script: &str, limit: Duration, done: &str) -> String {
    let text = run_script_to_end(script, limit);
    assert!(text.contains(done), "{text}");
    text
}

/// [`run_script`] for a script that runs alone (see [`ALONE`]).
fn run_script_alone(script: &str, limit: Duration, done: &str) -> String {
    let _alone = ALONE.write().unwrap_or_else(|e| e.into_inner());
    let text = run_held(script, limit);
    assert!(text.contains(done), "{text}");
    text
}

/// Held for writing by a test whose script asserts that no packet is lost
/// at bursts of a hundred thousand packets a second through routers
/// with as many workers as CPUs or more (run.sh's UDP flow checks, at
/// `-j 2` and `-j 4`), and for reading by the others, which run two at a
/// time. Beside another script's routers on CI's two cores, the flow
/// check lost packets in 6 of 160 rounds, each time with the output's
/// worker waiting for its CPU most of the round (95 ms of about 100,
/// running 8): a router starved of CPU, not one that lost packets.
static ALONE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Runs `tests/netns/SCRIPT` as [`run_script`] does, beside one other
/// script at most; returns its output once it has exited with success,
/// without looking for a verdict (empty when skipped for want of root).
fn run_script_to_end(script: &str, limit: Duration) -> String {
    let _beside = ALONE.read().unwrap_or_else(|e| e.into_inner());
    run_held(script, limit)
}

/// [`run_script_to_end`] with [`ALONE`] held as the script needs.
fn run_held(script: &str, limit: Duration) -> String {
    if !is_root() {
        let why = format!(
            "tests/netns/{script} needs root: it creates network namespaces and veth \
             pairs and opens packet sockets (run `cargo test` as root, as CI does)"
        );
        paraclick_runtime::testing::skip(&why);
        return String::new();
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join("tests/netns").join(script);
    let log = std::env::temp_dir().join(format!(
        "paraclick-netns-{}-{}.log",
        std::process::id(),
        script.file_stem().unwrap_or_default().to_string_lossy()
    ));
    let out = std::fs::File::create(&log).expect("create the log file");
    let err = out.try_clone().expect("clone the log file");
    let mut child = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_paraclick"))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the script") {
            break Some(s);
        }
        if start.elapsed() > limit {
            // SIGTERM lets the script's trap tear the namespaces down.
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    println!("{text}");
    match status {
        Some(s) => assert!(s.success(), "{} failed ({s}):\n{text}", script.display()),
        None => panic!("{} took more than {limit:?}:\n{text}", script.display()),
    }
    text
}

/// IPv6 (tests/netns/ip6.sh): ping -6 with neighbour discovery by the
/// router's own elements, time exceeded, TCP over IPv6 at -j 1 and -j 2,
/// packet too big and path MTU discovery, and the dual-stack router.
#[test]
fn real_hosts_over_ipv6_and_dual_stack() {
    run_script(
        "ip6.sh",
        Duration::from_secs(180),
        "netns test: all checks passed",
    );
}

#[test]
fn real_hosts_ping_ttl_tcp_and_pmtu_through_the_router() {
    run_script_alone(
        "run.sh",
        Duration::from_secs(120),
        "netns test: all checks passed",
    );
}

/// MultiFromDevice on two veth pairs: known numbers of frames sent on
/// each arrive, exactly, on the output of their device; with a device's
/// queues split between MultiFromDevice and FromDevice (a fanout group
/// dealing frames in turn), they add up exactly; two readers of one
/// queue are refused (tests/netns/multi-from-device.sh).
#[test]
fn multi_from_device_frames_arrive_on_their_device_outputs() {
    run_script(
        "multi-from-device.sh",
        Duration::from_secs(60),
        "multi-from-device test: all checks passed",
    );
}

/// FromDevice/ToDevice METHOD XDP (AF_XDP sockets): the example routers
/// forward exact counts of IPv4 and IPv6 UDP datagrams at -j 1 and -j 2
/// in native XDP mode, a program a killed router left is removed at the
/// next start, and another program's, a queue count mismatch, a missing
/// device and no permission are refused (tests/netns/xdp.sh).
#[test]
fn xdp_devices_forward_and_refuse_what_they_cannot_use() {
    run_script(
        "xdp.sh",
        // 24 s on a quiet machine; its waits are bounded at 60 s each for
        // a loaded one (CI runs it beside an emulated guest).
        Duration::from_secs(480),
        "xdp test: all checks passed",
    );
}

/// CPU that follows the load (tests/netns/idle.sh): over AF_PACKET and
/// AF_XDP, an idle router uses under 5% of a core, its worker blocked in
/// ppoll(2) on the sockets; pings through it are answered, and a trickle
/// of 1000 packets a second arrives whole for under 10% of a core. With
/// --busy-poll the worker never waits in ppoll(2).
#[test]
fn idle_devices_wait_on_their_sockets_and_cpu_follows_the_load() {
    run_script(
        "idle.sh",
        Duration::from_secs(120),
        "idle test: all checks passed",
    );
}

/// The router's own addresses served by Linux: conf/iprouter-veth-host.click
/// hands the packets for the router to the Linux stack of its namespace
/// through FromHost/ToHost taps; HTTP servers bound to the router's
/// addresses there serve both hosts intact (sha256), pings are answered
/// once, Linux reaches the hosts through the router, and the taps go with
/// the router (tests/netns/host.sh).
#[test]
fn real_hosts_reach_linux_services_on_the_router_through_taps() {
    run_script(
        "host.sh",
        Duration::from_secs(90),
        "netns host test: all checks passed",
    );
}

/// Two sites' hosts through an ESP tunnel between conf/vpn-gateway-veth.click
/// and a peer gateway (Linux `ip xfrm` when the kernel has ESP, otherwise a
/// second paraclick; the script says which): ping both ways, HTTP transfers
/// both ways with intact sha256, a UDP echo exchange, for aes128gcm16,
/// aes128-sha1 and 3des-sha1 at -j 1 and -j 2 (tests/netns/vpn.sh).
#[test]
fn two_sites_through_an_esp_tunnel() {
    run_script(
        "vpn.sh",
        Duration::from_secs(300),
        "vpn test: all checks passed",
    );
}

/// An ESP tunnel with Linux's own IPsec: a Debian kernel with esp4 booted
/// under qemu (software emulation) is the peer gateway and its own inner
/// host (tests/netns/ipsec-linux.sh, the guest built at first use by
/// tests/netns/ipsec-guest/build.sh). For AES-GCM-128/256,
/// AES-CBC+HMAC-SHA1-96, AES-CBC+HMAC-SHA256-128 and 3DES+HMAC-SHA1-96 at
/// -j 1 and -j 2: ping both ways, 2 MB over TCP each way with intact
/// sha256, a UDP echo exchange, no error counted by Linux's SAs, SA packet
/// counts equal on both sides, and a replayed and a tampered packet each
/// way refused and counted. Without qemu the script skips loudly; with
/// `PARACLICK_NO_SKIP=1` (CI) that is a failure.
#[test]
fn esp_tunnel_with_linux_ipsec_in_an_emulated_guest() {
    let text = run_script_to_end("ipsec-linux.sh", Duration::from_secs(420));
    if text.is_empty() {
        return; // skipped: not root
    }
    if let Some(line) = text
        .lines()
        .find(|l| l.starts_with("ipsec-linux test: SKIPPED"))
    {
        paraclick_runtime::testing::skip(line);
        return;
    }
    assert!(
        text.contains("ipsec-linux test: all checks passed"),
        "{text}"
    );
}

/// Faults under a running router (tests/netns/faults.sh): a veth pair
/// deleted under FromDevice/ToDevice, a tap deleted under FromHost/ToHost,
/// a pcap file cut mid-record for FromDump, a full 64 KB tmpfs under
/// ToDump. Each gives a clear error or counted drops; the router keeps
/// answering on its control socket or runs to its end, and stops cleanly:
/// no hang, no panic.
#[test]
fn faults_give_errors_or_counted_drops_never_a_hang_or_panic() {
    run_script(
        "faults.sh",
        Duration::from_secs(60),
        "faults test: all checks passed",
    );
}

/// A NAPT gateway between a private and a public host:
/// conf/nat-gateway-veth.click at -j 1 and -j 2; ping, an intact HTTP
/// transfer whose server sees the gateway's public address, a UDP
/// exchange, "connection refused" from a closed UDP port (the ICMP error
/// translated back), and no way in for the public host unsolicited
/// (tests/netns/nat.sh).
#[test]
fn nat_gateway_between_private_and_public_hosts() {
    run_script(
        "nat.sh",
        Duration::from_secs(120),
        "netns nat test: all checks passed",
    );
}

/// DiffServ QoS (tests/netns/qos.sh): four competing UDP flows marked
/// with different DSCPs through conf/qos-veth.click; the receiver's
/// per-class throughput matches strict priority for EF and the 3:1 and
/// 1:1 weights for the rest within 5%, and the shaped total holds within
/// 2% of 30 Mbit/s.
#[test]
fn diffserv_classes_get_their_shares_of_a_shaped_link() {
    run_script(
        "qos.sh",
        Duration::from_secs(90),
        "netns qos test: all checks passed",
    );
}

/// KernelTun and KernelTap (tests/netns/tun.sh): Linux's pings into a tun
/// device are answered by ICMPPingResponder (push and pull input, and a
/// flood at -j 2), Linux answers pings written into the tun, a tap with
/// ARPResponder answers ARP and pings, the devices go with the router,
/// and without CAP_NET_ADMIN initialization fails clearly.
#[test]
fn kernel_tun_and_tap_exchange_packets_with_linux() {
    run_script(
        "tun.sh",
        Duration::from_secs(60),
        "netns tun test: all checks passed",
    );
}

/// FromDevice's priority path (tests/netns/control-priority.sh): a router
/// flooded with several times the UDP it can process (WorkPackage behind
/// a 1 MiB ring) still answers 9 or more of 10 pings to itself with
/// PRIORITY true, and its two rings split the frames exactly: count plus
/// drops equals the frames the device received (none delivered twice),
/// priority_count equals the ARP and ICMP frames, the rest the flood.
#[test]
fn a_flooded_router_answers_pings_through_its_priority_ring() {
    run_script(
        "control-priority.sh",
        Duration::from_secs(90),
        "control-priority test: all checks passed",
    );
}

/// Slices isolated, measured (tests/netns/slices.sh): the IPv4 router,
/// the IPv6 router and the NAT gateway of conf/ as three slices of one
/// substrate, Linux hosts behind VLAN metalinks; with slice B flooding at
/// 10x its provisioning (in turns with B idle, 0.5 s each, so both see
/// the same machine), A's and C's TCP throughput stays at least 95% of
/// what it is with B idle and their ping RTT's 99th percentile within
/// 2 ms of its idle value, at -j 1 and -j 2, and B is held to its rate,
/// its excess dropped in its own queue. Prints the table.
#[test]
fn slices_keep_their_throughput_and_latency_while_another_floods() {
    run_script(
        "slices.sh",
        Duration::from_secs(240),
        "netns slices test: all checks passed",
    );
}

/// A device whose queue takes no more frames: ToDevice keeps 4 × BURST
/// packets for it and drops the rest with the reason `ring full`, not
/// `send failed` (in a network namespace of its own: a veth whose token
/// bucket sends 8 bits a second, so the socket's send buffer fills and
/// the kernel answers EAGAIN).
#[test]
fn a_full_device_queue_is_a_ring_full_drop() {
    if !is_root() {
        paraclick_runtime::testing::skip("needs root (a network namespace, a veth and tc)");
        return;
    }
    let script = format!(
        "ip link add d0 type veth peer name d1 && ip link set d0 up && ip link set d1 up && \
         tc qdisc add dev d0 root tbf rate 8bit burst 1600 limit 100000000 && \
         {} --no-pin -e 'src :: InfiniteSource(LENGTH 1000, LIMIT 20000, STOP true) \
         -> td :: ToDevice(d0, BURST 32)' -h td.count -h td.drops -h td.drop_reasons",
        env!("CARGO_BIN_EXE_paraclick")
    );
    let out = Command::new("timeout")
        .args(["60", "unshare", "-n", "sh", "-c", &script])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let value = |h: &str| -> String {
        let (_, r) = text
            .split_once(&format!("{h}:\n"))
            .unwrap_or_else(|| panic!("{text}"));
        r.split("\n\n").next().unwrap().trim().to_string()
    };
    let sent: u64 = value("td.count").parse().unwrap();
    let drops: u64 = value("td.drops").parse().unwrap();
    // Sent: what the send buffer held; kept: at most 4 × 32; the rest
    // dropped, every one for a full ring.
    assert!(sent > 0 && drops > 0, "{text}");
    assert!(
        sent + drops <= 20_000 && sent + drops >= 20_000 - 128,
        "{text}"
    );
    assert_eq!(
        value("td.drop_reasons"),
        format!("ring full {drops}"),
        "{text}"
    );
}
