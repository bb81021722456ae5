#!/usr/bin/env python3
"""Write, or check, the linker script that puts the functions a router run
executes at the front of paraclick's .text (run by scripts/text-layout.sh).

    text-order.py write BINARY CALLGRIND_OUT... [-- [--program] BINARY CALLGRIND_OUT...]
    text-order.py check BINARY CALLGRIND_OUT...

`write` prints the script. Each group is one build of the binary (the
`ci` and the release profile name and split functions differently: thin
LTO inlines across crates and renames the functions it makes local) with
the callgrind files (made with --demangle=no) of its training runs, which
list the functions each run executed. A function's pattern is its mangled
name with the per-instance hash removed, so it keeps matching after
unrelated code changes. Where a pattern matches only a few functions in
every BINARY it is used as it is. Where it matches many in one of them
(the instances of one generic function), the executed instances are named
exactly, hash included, and the pattern follows after every exact rule, so
that when the hashes drift the instances still land near the front.
Functions run by more training runs (over all groups) come first. A group
marked --program is a program `paraclick build` wrote: the functions of
its own crate (`built_NAME`) are left out, since each program has its own
(paraclick build puts them first itself), and the script does not record
how many rules name its functions. The
linker takes each function for the first rule that matches it; a rule
that matches nothing in a build (a function of the other profile, or one
since renamed) is skipped, so one script serves every profile.

`check` reports how a build's layout serves the runs given: the size of
the code they executed, and how many of the 64 KiB stretches of .text it
lies in (the kernel maps a binary's code around each fault 64 KiB at a
time), against the fewest that size could fill; then the executed
functions that lie outside the front, largest first.
"""
import bisect
import re
import subprocess
import sys

HASH = re.compile(r"17h[0-9a-f]{16}E(\.llvm\.\d+)?$")
LLVM = re.compile(r"\.llvm\.\d+$")
SPEC = re.compile(r"^(ob|cob|fn|cfn)=\((\d+)\)(?: (.*))?$")
BROAD = 3  # a pattern matching more functions than this is named exactly
WINDOW = 64 * 1024


def executed(path, binary):
    names, objs, cur, out = {}, {}, None, []
    for line in open(path, encoding="utf-8", errors="replace"):
        m = SPEC.match(line.rstrip("\n"))
        if not m:
            continue
        kind, ident, name = m.groups()
        if kind in ("ob", "cob"):
            if name:
                objs[ident] = name
            if kind == "ob":
                cur = objs.get(ident)
            continue
        if name:
            names[ident] = name
        if kind == "fn" and cur and cur.endswith("/" + binary):
            out.append(names[ident])
    return out


OWN = re.compile(r"(\d|\$LT\$|\.\.)built_")  # a built program's own crate


def usable(name):
    return (
        (name == "main" or name.startswith(("_ZN", "_R")))
        and not re.search(r'[\s"\[\]?\\*]', name)
        and not OWN.search(name)
    )


def pattern(name):
    if HASH.search(name):
        return HASH.sub("*", name)
    return LLVM.sub("*", name)


def functions(binary):
    """(name, address, size) of each function symbol defined in BINARY."""
    nm = subprocess.run(
        ["nm", "--defined-only", "-S", binary], capture_output=True, text=True, check=True
    )
    out = []
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            out.append((parts[3], int(parts[0], 16), int(parts[1], 16)))
    return out


def breadth(binary):
    count = {}
    for name, _, _ in functions(binary):
        if usable(name):
            pat = pattern(name)
            count[pat] = count.get(pat, 0) + 1
    return count


def groups(args):
    """(binary, callgrind files, whether it is a built program) of each group."""
    out, cur = [], []
    for arg in args + ["--"]:
        if arg == "--":
            program = bool(cur) and cur[0] == "--program"
            if program:
                cur = cur[1:]
            if cur:
                out.append((cur[0], cur[1:], program))
            cur = []
        else:
            cur.append(arg)
    return out


def matches(rule, names):
    """Whether a rule (a name, or a prefix and `*`: a rule has no other
    wildcard) names one of the sorted function names."""
    prefix = rule[:-1] if rule.endswith("*") else rule
    i = bisect.bisect_left(names, prefix)
    if i == len(names):
        return False
    return names[i].startswith(prefix) if rule.endswith("*") else names[i] == rule


def index(binary):
    return sorted({name for name, _, _ in functions(binary) if usable(name)})


def profile(binary):
    parts = binary.rstrip("/").split("/")
    return parts[-2] if len(parts) > 1 else binary


def write(args):
    builds = groups(args)
    width = {}
    for binary, _, _ in builds:
        for pat, n in breadth(binary).items():
            width[pat] = max(width.get(pat, 0), n)
    score, first = {}, {}
    run = 0
    for binary, files, _ in builds:
        base = binary.rsplit("/", 1)[-1]
        for path in files:
            run += 1
            seen = set()
            for name in executed(path, base):
                if not usable(name):
                    continue
                pat = pattern(name)
                rule = pat
                if width.get(pat, 0) > BROAD:
                    # Name the instance: by its hash where it has one (and
                    # whatever suffix thin LTO gives it); else, a function
                    # copied into several units (std's, named without a
                    # hash), by the suffix that tells the copies apart.
                    rule = LLVM.sub("*", name) if HASH.search(name) else name
                for key in (rule, pat):
                    if key not in seen:
                        seen.add(key)
                        score[key] = score.get(key, 0) + 1
                        first.setdefault(key, (run, len(first)))
    broad = {k for k in score if "*" in k and width.get(k, 0) > BROAD}
    exact = sorted((k for k in score if k not in broad), key=lambda k: (-score[k], first[k]))
    tail = sorted(broad, key=lambda k: (-score[k], first[k]))
    rules = exact + tail
    print("/* Generated by scripts/text-layout.sh: do not edit by hand.")
    print("   The functions that router runs execute, first in .text, so that a")
    print("   run touches few of the binary's pages (docs/PERFORMANCE.md).")
    programs = sum(1 for b in builds if b[2])
    print("   Trained on %d runs of %d builds and %d built programs; the rules" % (run, len(builds) - programs, programs))
    print("   that name a function of each build when written")
    print("   (crates/paraclick/tests/memory.rs):")
    for binary, _, program in builds:
        if program:
            continue
        names = index(binary)
        hit = sum(1 for r in rules if matches(r, names))
        print("   matched %s %d of %d" % (profile(binary), hit, len(rules)))
    print("*/")
    print("SECTIONS {")
    print("  .text : {")
    for key in rules:
        print("    *(.text.%s .text.unlikely.%s)" % (key, key))
    print("  }")
    print("} INSERT BEFORE .init;")


def check(args):
    binary, files = args[0], args[1:]
    base = binary.rsplit("/", 1)[-1]
    run = set()
    for path in files:
        run.update(executed(path, base))
    syms = functions(binary)
    text = subprocess.run(
        ["readelf", "-SW", binary], capture_output=True, text=True, check=True
    ).stdout
    start = end = 0
    for line in text.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 5 and parts[1] == ".text":
            start = int(parts[3], 16)
            end = start + int(parts[5], 16)
    by_name = {}
    for name, addr, size in syms:
        if start <= addr < end:
            by_name.setdefault(name, (addr, size))
    hot = [(n,) + by_name[n] for n in run if n in by_name]
    total = sum(s for _, _, s in hot)
    windows = set()
    for _, addr, size in hot:
        for w in range((addr - start) // WINDOW, (addr - start + max(size, 1) - 1) // WINDOW + 1):
            windows.add(w)
    fewest = -(-total // WINDOW)
    print(
        "%s: %d functions executed, %d kB of code, in %d of the text's %d 64-KiB stretches"
        " (fewest possible %d)"
        % (binary, len(hot), total // 1024, len(windows), -(-(end - start) // WINDOW), fewest)
    )
    # The front: the stretches from the start of .text up to the first gap.
    front = 0
    while front in windows:
        front += 1
    out = sorted((h for h in hot if (h[1] - start) // WINDOW >= front), key=lambda h: -h[2])
    if out:
        print("executed outside the first %d stretches (%d functions), largest first:" % (front, len(out)))
        for name, addr, size in out[:40]:
            print("  %8d  +%-8x %s" % (size, addr - start, name))
    return len(windows), fewest


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("write", "check"):
        sys.exit(__doc__)
    if sys.argv[1] == "write":
        write(sys.argv[2:])
    else:
        check(sys.argv[2:])


main()
