// The binary's relative relocations packed (DT_RELR, glibc 2.36 and
// binutils 2.38 or later): a position-independent Rust binary carries one
// relocation per pointer in its read-only tables (vtables, static
// strings' addresses), about 19,000 here, which the loader reads at every
// start: 456 KiB of `.rela.dyn` in every run's resident memory and
// start-up time. Packed, they take a few KiB.
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
