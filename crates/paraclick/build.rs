// Two link-time measures that cut the memory every run of the router
// holds (docs/PERFORMANCE.md, "Memory").
//
// The binary's relative relocations packed (DT_RELR, glibc 2.36 and
// binutils 2.38 or later): a position-independent Rust binary carries one
// relocation per pointer in its read-only tables (vtables, static
// strings' addresses), about 19,000 here, which the loader reads at every
// start: 456 KiB of `.rela.dyn` in every run's resident memory and
// start-up time. Packed, they take a few KiB.
//
// The functions a router run executes placed first in `.text`
// (`text-order.ld`, written by scripts/text-layout.sh from callgrind runs
// of the shipped configurations). The kernel maps a file's pages into a
// process around each fault (64 KiB at a time by default), so code that
// runs scattered over the 7.5 MB of text made a run map about 5 MB of it;
// packed together it maps well under half of that. The script only orders
// sections (an `INSERT` script, with the default layout kept), so a stale
// entry matches nothing and costs nothing. It is given to LLD, Rust's
// default linker on x86_64 Linux since 1.90; `PARACLICK_TEXT_ORDER=0`
// turns it off, and it is left out when RUSTFLAGS choose another linker.
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=text-order.ld");
    println!("cargo:rerun-if-env-changed=PARACLICK_TEXT_ORDER");
    let wanted = std::env::var("PARACLICK_TEXT_ORDER").map_or(true, |v| v != "0");
    let ordered = wanted && os == "linux" && env == "gnu" && arch == "x86_64" && default_lld();
    if ordered {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!("cargo:rustc-link-arg-bins=-Wl,-T,{dir}/text-order.ld");
    }
    // `paraclick build` links the programs it writes the same way.
    println!(
        "cargo:rustc-env=PARACLICK_TEXT_ORDER_LINKED={}",
        u8::from(ordered)
    );
}

/// Whether the binary links with LLD: rustc 1.90 or later, and no linker
/// chosen in RUSTFLAGS.
fn default_lld() -> bool {
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("linker") || flags.contains("fuse-ld") {
        return flags.contains("fuse-ld=lld") || flags.contains("linker-features=+lld");
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).arg("-V").output() else {
        return false;
    };
    // "rustc 1.95.0 (...)"
    let text = String::from_utf8_lossy(&out.stdout);
    let mut version = text.split_whitespace().nth(1).unwrap_or("").split('.');
    let major: u32 = version.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let minor: u32 = version.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    (major, minor) >= (1, 90)
}
