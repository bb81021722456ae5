//! The trace readers of crates/io on arbitrary file contents: FromDump
//! (pcap), FromIPSummaryDump, FromNetFlowSummaryDump and FromCapDump,
//! driven through their real per-packet path by pulling from them.

use paraclick_packet::pool;
use paraclick_runtime::{BuildOptions, Router};
use std::path::PathBuf;

/// A pcap file's bytes, read by FromDump.
pub fn pcap_reader(data: &[u8]) {
    // The first byte chooses options; the rest is the file.
    let (opts, file) = match data.split_first() {
        Some((o, f)) => (*o, f),
        None => (0, data),
    };
    let mut extra = String::new();
    if opts & 1 != 0 {
        extra.push_str(", FORCE_IP true");
    }
    read_all("FromDump", &extra, file, "pcap");
}

/// An IP summary dump file's bytes, read by FromIPSummaryDump.
pub fn ipsumdump_reader(data: &[u8]) {
    let (opts, file) = match data.split_first() {
        Some((o, f)) => (*o, f),
        None => (0, data),
    };
    let mut extra = String::new();
    if opts & 1 != 0 {
        extra.push_str(", CHECKSUM true");
    }
    if opts & 2 != 0 {
        extra.push_str(
            ", CONTENTS \"ip_src ip_dst sport dport proto ip_len payload_len tcp_flags\"",
        );
    }
    if opts & 4 != 0 {
        extra.push_str(", FLOWID \"10.0.0.1 1 10.0.0.2 2 T\"");
    }
    read_all("FromIPSummaryDump", &extra, file, "ipsd");
}

/// A text trace's bytes: the first byte's low bit picks the reader
/// (FromNetFlowSummaryDump or FromCapDump), its other bits options.
pub fn text_trace_reader(data: &[u8]) {
    let (opts, file) = match data.split_first() {
        Some((o, f)) => (*o, f),
        None => (0, data),
    };
    let mut extra = String::new();
    if opts & 2 != 0 {
        extra.push_str(", CHECKSUM true");
    }
    if opts & 1 == 0 {
        if opts & 4 != 0 {
            extra.push_str(", MULTIPACKET true");
        }
        if opts & 8 != 0 {
            extra.push_str(", LINK both");
        }
        read_all("FromNetFlowSummaryDump", &extra, file, "netflow");
    } else {
        if opts & 4 != 0 {
            extra.push_str(", FLOWID \"10.0.0.1 80 10.0.0.2 1024\", AGGREGATE 7");
        }
        read_all("FromCapDump", &extra, file, "cap");
    }
}

/// A file of this process for `kind` (in memory where possible).
fn scratch(kind: &str) -> PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("paraclick-fuzz-{}-{kind}", std::process::id()))
}

/// Writes `file`, builds `f :: CLASS(path EXTRA) -> Discard`, pulls every
/// packet out of `f`, and checks that the element counts exactly the
/// packets it gave, that every packet's header marks lie inside it, and
/// that no pool buffer is left in use once the router is gone.
fn read_all(class: &str, extra: &str, file: &[u8], kind: &str) {
    let path = scratch(kind);
    std::fs::write(&path, file).expect("write the scratch file");
    let before = pool::local_stats().in_use();
    {
        let conf = format!("f :: {class}(\"{}\"{extra}) -> Discard;", path.display());
        let opts = BuildOptions {
            pin: false,
            ..BuildOptions::default()
        };
        let src = paraclick_lang::Source::new("<fuzz>", conf.as_str());
        let r = match Router::build(&src, crate::registry(), &opts) {
            Ok(r) => r,
            // A file rejected at configuration time (bad magic, ...).
            Err(_) => return,
        };
        let mut got = 0u64;
        // Every record takes at least one byte of the file.
        for _ in 0..file.len() + 8 {
            match r.pull_from("f", 0, 64).expect("pull from the reader") {
                Some(mut b) => {
                    for p in b.drain() {
                        let len = p.len();
                        if let Some(h) = p.network_header() {
                            assert!(h.len() <= len, "network header beyond the data");
                        }
                        got += 1;
                    }
                }
                None => break,
            }
        }
        let count: u64 = r
            .read_handler("f.count")
            .expect("count handler")
            .trim()
            .parse()
            .expect("count is a number");
        assert_eq!(count, got, "{class} counted {count} packets but gave {got}");
        let _ = r.read_handler("f.errors");
    }
    let after = pool::local_stats().in_use();
    assert_eq!(
        after,
        before,
        "{class}: {} pool buffers leaked",
        after - before
    );
}
