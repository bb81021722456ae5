//! Memory (issue 43): the `memory` handler, a router's own memory flat
//! with the packet count, and the binary's code laid out so that a run
//! touches few of its pages (docs/PERFORMANCE.md, "Memory").

mod common;
use common::paraclick;

/// `-h memory` after a run of Click's fake IP router: (peak, anon, file) kB.
fn fake_iprouter_memory(n: u64) -> (u64, u64, u64) {
    let out = paraclick(&[
        "conf/fake-iprouter.click",
        &format!("N={n}"),
        "-h",
        "memory",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = text.lines();
    let mut field = |name: &str| -> u64 {
        let line = lines.next().unwrap_or_default();
        let rest = line.strip_prefix(name).and_then(|r| r.strip_suffix(" kB"));
        rest.and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} line in {text:?}"))
    };
    let (peak, resident, anon, file) = (
        field("peak"),
        field("resident"),
        field("anon"),
        field("file"),
    );
    assert!(
        anon > 0 && file > 0 && resident >= anon + file && peak >= resident,
        "{text}"
    );
    (peak, anon, file)
}

#[test]
fn a_routers_own_memory_does_not_grow_with_the_packet_count() {
    let _one = common::one_at_a_time();
    let (_, small, _) = fake_iprouter_memory(10_000);
    let (_, large, _) = fake_iprouter_memory(400_000);
    // Anonymous memory (heap, pools, stacks) is the router's own and does
    // not depend on the page cache. Forty times the packets may not add
    // more than allocator noise.
    assert!(
        large <= small + 256,
        "anon {small} kB at 10,000 packets, {large} kB at 400,000"
    );
}

/// The addresses of the binary's function symbols whose names contain
/// `needle`, and the bounds of its `.text`, read from its ELF tables.
struct Elf {
    data: Vec<u8>,
}

impl Elf {
    fn u16(&self, at: usize) -> usize {
        u16::from_le_bytes(self.data[at..at + 2].try_into().unwrap()) as usize
    }
    fn u32(&self, at: usize) -> usize {
        u32::from_le_bytes(self.data[at..at + 4].try_into().unwrap()) as usize
    }
    fn u64(&self, at: usize) -> usize {
        u64::from_le_bytes(self.data[at..at + 8].try_into().unwrap()) as usize
    }
    /// (name offset, type, addr, offset, size, link) of each section.
    fn sections(&self) -> Vec<(usize, usize, usize, usize, usize, usize)> {
        let (shoff, shentsize, shnum) = (self.u64(0x28), self.u16(0x3a), self.u16(0x3c));
        (0..shnum)
            .map(|i| {
                let h = shoff + i * shentsize;
                (
                    self.u32(h),
                    self.u32(h + 4),
                    self.u64(h + 0x10),
                    self.u64(h + 0x18),
                    self.u64(h + 0x20),
                    self.u32(h + 0x28),
                )
            })
            .collect()
    }
    fn cstr(&self, at: usize) -> &str {
        let end = self.data[at..].iter().position(|&b| b == 0).unwrap();
        std::str::from_utf8(&self.data[at..at + end]).unwrap_or("")
    }
    fn text(&self) -> (usize, usize) {
        let (addr, _, size) = self.section(".text").expect(".text");
        (addr, addr + size)
    }
    /// (address, file offset, size) of the section called `name`.
    fn section(&self, name: &str) -> Option<(usize, usize, usize)> {
        let secs = self.sections();
        let names = secs[self.u16(0x3e)].3;
        secs.iter()
            .find(|s| self.cstr(names + s.0) == name)
            .map(|s| (s.2, s.3, s.4))
    }
    /// The bytes of the section called `name` (empty if there is none).
    fn bytes(&self, name: &str) -> &[u8] {
        self.section(name)
            .map_or(&[][..], |(_, off, size)| &self.data[off..off + size])
    }
    /// (name, address) of each function symbol.
    fn all_functions(&self) -> Vec<(&str, usize)> {
        let secs = self.sections();
        let symtab = secs.iter().find(|s| s.1 == 2).expect("a symbol table");
        let strings = secs[symtab.5].3;
        (0..symtab.4 / 24)
            .map(|i| symtab.3 + i * 24)
            .filter(|&s| self.data[s + 4] & 0xf == 2)
            .map(|s| (self.cstr(strings + self.u32(s)), self.u64(s + 8)))
            .collect()
    }
    fn functions(&self, needle: &str) -> Vec<usize> {
        self.all_functions()
            .into_iter()
            .filter(|(name, _)| name.contains(needle))
            .map(|(_, at)| at)
            .collect()
    }
}

/// The rules of crates/paraclick/text-order.ld (a function name, or a
/// prefix and `*`), and how many of them named a function of each build
/// profile when the script was written (its `matched PROFILE N of M`
/// lines).
fn text_order_rules() -> (Vec<String>, Vec<(String, usize)>) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/text-order.ld");
    let script = std::fs::read_to_string(path).unwrap();
    let mut rules = Vec::new();
    let mut matched = Vec::new();
    for line in script.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("*(.text.") {
            let rule = rest.split(' ').next().unwrap();
            rules.push(rule.to_string());
        } else if let Some(rest) = line.trim_start().strip_prefix("matched ") {
            let words: Vec<&str> = rest.split(' ').collect();
            assert!(words.len() == 4 && words[2] == "of", "{line}");
            let total: usize = words[3].parse().unwrap();
            matched.push((words[0].to_string(), words[1].parse().unwrap(), total));
        }
    }
    for (profile, _, total) in &matched {
        assert_eq!(*total, rules.len(), "the rule count recorded for {profile}");
    }
    let matched = matched.into_iter().map(|(p, n, _)| (p, n)).collect();
    (rules, matched)
}

#[test]
#[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
fn the_code_order_script_is_well_formed() {
    if option_env!("PARACLICK_TEXT_ORDER") == Some("0") {
        return;
    }
    let (rules, matched) = text_order_rules();
    assert!(rules.len() > 100, "{} rules in text-order.ld", rules.len());
    // A rule is a function's name or a prefix ending in `*` (the linker
    // would read any other `*`, `?` or `[` as a wildcard too).
    for rule in &rules {
        let body = rule.strip_suffix('*').unwrap_or(rule);
        assert!(
            !body.contains(['*', '?', '[', ']', '\\', '"']),
            "rule {rule}"
        );
    }
    // Trained on both profiles, with a count for each. How many rules a
    // build still names is not checked here: `cargo test -p paraclick` and
    // `cargo test --workspace` unify the dependencies' features
    // differently and so name generic functions' instances with other
    // hashes. What matters, that the code a run executes sits at the
    // front, is the next test's; `scripts/text-layout.sh --check` shows
    // how far an order has drifted.
    let profiles: Vec<&str> = matched.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(profiles, ["release", "ci"], "the profiles trained on");
    for (p, n) in &matched {
        assert!(
            n * 2 > rules.len() / 2,
            "{p} named only {n} of {} rules",
            rules.len()
        );
    }
}

#[test]
#[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
fn the_code_every_run_executes_sits_together_at_the_front_of_the_text() {
    if option_env!("PARACLICK_TEXT_ORDER") == Some("0") {
        return;
    }
    let mut functions = vec!["9paraclick4main17h"];
    functions.extend(RUN_FUNCTIONS);
    executed_code_at_the_front(&common::bin(), &functions);
}

/// Functions every run executes: start-up, the language, the router
/// build, the scheduler and elements the fake IP router uses.
const RUN_FUNCTIONS: [&str; 5] = [
    "14paraclick_lang5check13check_partial17h",
    "17paraclick_runtime6router6Router19from_graph_offering17h",
    "17paraclick_runtime5sched6worker17h",
    "14paraclick_lang5lexer3lex17h",
    // The Queue's constructor (reached through the registry's function
    // pointer, so never inlined away as its push now is).
    "18paraclick_elements8standard5queue4make17h",
];

/// Every function of `binary` named by one of `functions` lies within the
/// first fifth of its text (crates/paraclick/text-order.ld), where left
/// to the linker's input order they spread over all of it.
fn executed_code_at_the_front(binary: &std::path::Path, functions: &[&str]) {
    let elf = Elf {
        data: std::fs::read(binary).unwrap(),
    };
    assert_eq!(&elf.data[..5], b"\x7fELF\x02", "a 64-bit ELF");
    let (start, end) = elf.text();
    let front = start + (end - start) / 5;
    for f in functions.iter().copied() {
        let at = elf.functions(f);
        assert!(!at.is_empty(), "no function {f} in {}", binary.display());
        for a in at {
            assert!(
                (start..front).contains(&a),
                "{f} at {a:#x} in {}, text {start:#x}..{end:#x}",
                binary.display()
            );
        }
    }
}

/// A program `paraclick build` writes is linked as paraclick is: the code
/// its runs execute at the front of its text. Without the order it took
/// 2 MB more memory than paraclick running the same configuration; with
/// paraclick's order alone, its own functions and the constructors of
/// classes paraclick's training runs did not use lay outside the front.
#[test]
#[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
fn a_built_program_has_the_code_its_runs_execute_at_the_front() {
    if option_env!("PARACLICK_TEXT_ORDER") == Some("0") {
        return;
    }
    // The target directory and profile this test's paraclick was built
    // in, whose libraries the program links with.
    let b = common::bin();
    let dir = b.parent().unwrap();
    let profile = match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(p) => p,
        None => panic!("no profile directory in {}", b.display()),
    };
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("layout.click");
    std::fs::write(
        &conf,
        "InfiniteSource(LIMIT 5, STOP true) -> Queue -> Unqueue -> c :: Counter -> Discard;\n\
         Idle -> Print(idle) -> Discard;\n",
    )
    .unwrap();
    let program = tmp.path().join("layout");
    let o = std::process::Command::new(&b)
        .arg("build")
        .arg(&conf)
        .arg("-o")
        .arg(&program)
        .args(["--profile", profile])
        .arg("--keep")
        .arg(tmp.path().join("crate"))
        .env("CARGO_TARGET_DIR", dir.parent().unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut functions = RUN_FUNCTIONS.to_vec();
    functions.extend([
        // What only a built program runs: its start-up (first in the
        // program's own order, after the program's crate).
        "9paraclick9run_built17h",
        // The program's own code, which no order trained beforehand can
        // name (paraclick build puts it first), and the constructors of
        // classes the training runs do not use (Idle, Print).
        "12built_layout7install17h",
        "18paraclick_elements8standard4idle4make17h",
        "18paraclick_elements8standard5print4make17h",
    ]);
    executed_code_at_the_front(&program, &functions);
}

#[test]
#[cfg(target_os = "linux")]
fn element_documentation_is_kept_apart_from_the_constants_runs_read() {
    // Only `paraclick doc` and the web view read the classes' texts;
    // among `.rodata` they were mapped by every run (docs/PERFORMANCE.md).
    let out = paraclick(&["doc", "Queue"]);
    assert!(out.status.success());
    let doc = String::from_utf8(out.stdout).unwrap();
    let probe = &doc.as_bytes()[..doc.len().min(200)];
    assert!(probe.starts_with(b"Queue([CAPACITY])\n"), "{doc}");
    let elf = Elf {
        data: std::fs::read(common::bin()).unwrap(),
    };
    let holds = |name: &str| elf.bytes(name).windows(probe.len()).any(|w| w == probe);
    assert!(
        holds("paraclick_docs"),
        "Queue's text not in paraclick_docs"
    );
    assert!(!holds(".rodata"), "Queue's text in .rodata");
    let (_, _, size) = elf.section("paraclick_docs").unwrap();
    assert!(size > 100_000, "paraclick_docs holds {size} bytes");
}
