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
    }
}
