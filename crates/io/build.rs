// The element crates share one documentation extractor.
#[path = "../elements/build.rs"]
mod docs;

fn main() {
    docs::main();
    // FromDevice/ToDevice METHOD XDP: AF_XDP sockets through libxdp
    // (Debian's libxdp-dev and libbpf-dev, which scripts/bootstrap.sh
    // installs). libxdp's ring operations are inline functions of its
    // header: src/linux/xsk_shim.c gathers them into batch calls.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rerun-if-changed=src/linux/xsk_shim.c");
        cc::Build::new()
            .file("src/linux/xsk_shim.c")
            .flag_if_supported("-std=gnu11")
            .warnings(true)
            .compile("paraclick_xsk_shim");
        // libxdp itself is opened at run time (dlopen), when a router
        // first opens an AF_XDP socket: not linked.
        bpf_program();
    }
}

/// Compiles FromDevice's PASS program (src/linux/xdp_pass.bpf.c) for the
/// BPF target into OUT_DIR, where xdp.rs includes it: built from source
/// on every build, never kept as a binary. Needs clang (any version with
/// the BPF target; scripts/bootstrap.sh installs Debian's); `CLANG`
/// names another.
fn bpf_program() {
    use std::process::Command;
    let src = "src/linux/xdp_pass.bpf.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("xdp_pass.bpf.o");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    // <asm/types.h>, which the kernel headers include, lives in the
    // multiarch directory of the target.
    let multiarch = format!("-I/usr/include/{arch}-linux-gnu");
    let mut clangs: Vec<String> = std::env::var("CLANG").into_iter().collect();
    clangs.push("clang".into());
    clangs.extend((11..=21).rev().map(|v| format!("clang-{v}")));
    let mut last = String::new();
    for clang in &clangs {
        match Command::new(clang)
            .args([
                "-O2", "-g", "-target", "bpf", "-Wall", &multiarch, "-c", src, "-o",
            ])
            .arg(&out)
            .output()
        {
            Ok(o) if o.status.success() => return,
            Ok(o) => {
                panic!(
                    "{clang} could not compile {src} for the BPF target:\n{}",
                    String::from_utf8_lossy(&o.stderr)
                )
            }
            Err(e) => last = format!("{clang}: {e}"),
        }
    }
    panic!(
        "building paraclick-io needs clang (with the BPF target) to compile {src}, \
         FromDevice's XDP PASS program: install it (scripts/bootstrap.sh does, \
         apt-get install clang), or name one with CLANG=... ({last})"
    );
}
