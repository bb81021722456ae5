#!/usr/bin/env python3
"""Where a packet's instructions go: the difference of two callgrind runs
of different lengths, per part of the router (scripts/where-packets.sh).

    where_packets.py table BIN SHORT.callgrind LONG.callgrind PACKETS
        [--cycles C] [--profile REPORT[,REPORT...]] [--title T]
    where_packets.py merge LABEL=TABLE...
    where_packets.py --self-test

`table` reads two callgrind files (`--dump-instr=yes`) of the same binary,
takes the difference of each instruction address's own cost (the long run
less the short one, so start-up and exit drop out), and charges each
address to a part: every address of BIN is resolved to its chain of
inlined functions (`addr2line -i`), and the innermost frame that names a
part decides (an element's code by its module under paraclick_elements,
the packet pool's allocation and free, the runtime's hop dispatch, node
wrappers and scheduler pass); code of other objects (libc's memcpy) is
charged to the address in BIN that called it. The table is instructions a
packet (the difference over PACKETS) per part, with an `other` row for
addresses no frame names, and a check that the parts sum to the
difference of the two runs' totals as callgrind reports them.

`--profile` adds the router's own cycle profile (`--report costs` with
`-h InfiniteSource.count`: cycles a packet per element, with the cycle
counter's cost inside each; summed by class, the median of the reports
given, and scaled so the profiled tasks' cycles equal `--cycles`, the
measured cycles a packet).
"""

import re
import subprocess
import sys
from collections import defaultdict

# ---------------------------------------------------------------- callgrind


def parse_callgrind(lines):
    """Own cost per (object, function, address), the inclusive cost of
    calls per (caller object, caller function, address, callee object,
    callee function), and the file's `summary:` total.

    The callgrind format (valgrind's docs, "Callgrind Format
    Specification"): names are compressed as `(id) name` the first time,
    `(id)` after; a cost line is `ADDRESS LINE COST` where each position is
    absolute (0x...), relative to the previous cost line (+N, -N) or the
    same (`*`); a `calls=` line says the next cost line is a call's
    inclusive cost (not the caller's own), from the object `cob=` names
    (the caller's when absent)."""
    kind = {
        "ob": "ob", "cob": "ob",
        "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl",
        "fn": "fn", "cfn": "fn",
    }
    names = {"ob": {}, "fl": {}, "fn": {}}

    def name(key, value):
        m = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if not m:
            return value
        table = names[kind[key]]
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        if m.group(1) not in table:
            raise ValueError(f"callgrind: {key}=({m.group(1)}) used before it was named")
        return table[m.group(1)]

    pos = [0, 0]

    def sub(tok, i):
        if tok == "*":
            return pos[i]
        if tok[0] in "+-":
            return pos[i] + int(tok, 0)
        return int(tok, 0)

    own = defaultdict(int)
    calls = defaultdict(int)
    summary = None
    ob = fn = cob = cfn = None
    call = False
    positions = 2
    for line in lines:
        c = line[:1]
        if c and (c.isdigit() or c in "+-*"):
            t = line.split()
            for i in range(positions):
                pos[i] = sub(t[i], i)
            cost = int(t[positions]) if len(t) > positions else 0
            if call:
                call = False
                callee_ob = cob if cob is not None else ob
                calls[(ob, fn, pos[0], callee_ob, cfn)] += cost
                cob = None
            else:
                own[(ob, fn, pos[0])] += cost
            continue
        if line.startswith("positions:"):
            positions = len(line.split()) - 1
            if positions < 1 or line.split()[1] != "instr":
                raise ValueError("callgrind: the run needs --dump-instr=yes")
            continue
        if line.startswith("summary:"):
            summary = int(line.split()[1])
            continue
        if line.startswith("events:") and line.split()[1:] != ["Ir"]:
            raise ValueError("callgrind: expected the one event Ir")
        if "=" not in line:
            continue
        key, value = line.rstrip("\n").split("=", 1)
        if key == "ob":
            ob = name(key, value)
        elif key == "fn":
            fn = name(key, value)
        elif key == "cob":
            cob = name(key, value)
        elif key == "cfn":
            cfn = name(key, value)
        elif key in kind:
            name(key, value)
        elif key == "calls":
            call = True
    if summary is None:
        raise ValueError("callgrind: no summary line")
    return own, calls, summary


def difference(short, long):
    """long - short for every key of either, zeros left out."""
    d = {}
    for k in set(short) | set(long):
        v = long.get(k, 0) - short.get(k, 0)
        if v:
            d[k] = v
    return d


# ---------------------------------------------------------------- parts

# The pool's functions (crates/packet/src/pool.rs) by what they do; its
# other frames (a buffer's deref, the thread-local) pass to their caller.
POOL_FN = re.compile(r"paraclick_packet::pool::(?:Local::)?([a-z_]+)")
POOL_ALLOC = re.compile(r"^(alloc\w*|fill|drain_returns)$")
POOL_FREE = re.compile(r"^(free\w*|release\w*|staged_for|flush_staged|send_home)$")
PACKET_DROP = re.compile(
    r"drop_in_place<paraclick_packet::(packet::Packet|batch::Batch)>"
    r"|<paraclick_packet::(packet::Packet|batch::Batch) as core::ops::drop::Drop>::drop"
)
ELEMENT = re.compile(r"paraclick_elements::(\w+)::([a-z_0-9]+)::")
# Element-library modules that hold code shared by elements, not an
# element: their frames are passed over for the element that called them.
SHARED_MODULES = {("iproute", "lpm")}
DISPATCH = re.compile(
    r"paraclick_runtime::cx::Cx::(forward|push|pull|output|note_drained|has_deferred|deliver)"
    r"|paraclick_runtime::core::Peer\b"
    r"|paraclick_runtime::cx::Cx::forward_code"
)
RING = re.compile(r"paraclick_runtime::ring\b")
WRAPPER = re.compile(r"paraclick_runtime::element::(ActionNode|ElementNode)\b")
COMPILED = re.compile(r"paraclick_runtime::compiled\b")
SCHED = re.compile(r"paraclick_runtime::(sched|timer|core::ThreadShared)\b")
# A built program's own crate (`paraclick build -o NAME`: built_NAME):
# its dispatch of the compiled task runs, and its chains' own code.
PROGRAM_TASKS = re.compile(r"(?:^|<)built_\w+::\w+ as paraclick_runtime::compiled::CompiledTasks>")
PROGRAM = re.compile(r"(?:^|<)built_\w+::")


def part_of(frames, element_names=None):
    """The part an instruction is charged to, from its inlined frames
    (function names, innermost first), or None."""
    for f in frames:
        m = POOL_FN.search(f)
        if m and POOL_ALLOC.match(m.group(1)):
            return "packet pool: allocation"
        if m and POOL_FREE.match(m.group(1)):
            return "packet pool: free"
        if PACKET_DROP.search(f):
            return "packet pool: free"
        m = ELEMENT.search(f)
        if m and (m.group(1), m.group(2)) not in SHARED_MODULES:
            key = m.group(1) + "::" + m.group(2)
            if element_names and key in element_names:
                return element_names[key]
            return key
        if RING.search(f):
            return "queue rings (runtime::ring)"
        if DISPATCH.search(f):
            return "hop dispatch (Cx, peers)"
        if WRAPPER.search(f):
            return "node wrappers (ActionNode, ElementNode)"
        if PROGRAM_TASKS.search(f):
            return "built program: its task runs' dispatch"
        if PROGRAM.search(f):
            return "built program: its chains' own code"
        if COMPILED.search(f):
            return "compiled entries (runtime::compiled)"
        if SCHED.search(f):
            return "scheduler (worker's pass, task runs)"
    return None


def element_name(frames_list):
    """Module -> the element type named like it (check_ip_header ->
    CheckIPHeader), from every frame seen; the route lookup's generic
    type by its module."""
    names = {}
    pat = re.compile(r"paraclick_elements::(\w+)::([a-z_0-9]+)::([A-Z]\w*)")
    for frames in frames_list:
        for f in frames:
            for m in pat.finditer(f):
                mod, ty = m.group(2), m.group(3)
                if ty.lower() == mod.replace("_", "").lower():
                    names[m.group(1) + "::" + mod] = ty
    names.setdefault("iproute::route_table", "IPRouteLookup")
    names.setdefault("sources::gen", "sources::gen (a source's packet made)")
    return names


def inline_frames(binary, addrs):
    """address -> inlined function names, innermost first (addr2line -i)."""
    if not addrs:
        return {}
    text = "".join("%x\n" % a for a in addrs)
    out = subprocess.run(
        ["addr2line", "-a", "-f", "-i", "-C", "-e", binary],
        input=text, capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    res = {}
    cur = None
    want_fn = True
    for line in out:
        if line.startswith("0x") and want_fn:
            cur = int(line, 16)
            res[cur] = []
            continue
        if want_fn:
            res[cur].append(line)
            want_fn = False
        else:
            want_fn = True  # the file:line of the frame just read
    return res


def attribute(own, calls, binary_obj, frames, packets):
    """Parts -> instructions (not yet over packets), and the unnamed
    functions the `other` row holds.

    An address no frame names (a function of its own that no rule knows,
    such as a `Vec`'s drain) is charged to the parts of the places that
    call its function, in proportion to what each call costs (the calls'
    inclusive costs), up the callers until one is named; what has no
    named caller stays in `other`."""
    names = element_name(frames.values())
    parts = defaultdict(int)
    unnamed = defaultdict(int)  # function in the binary -> its unnamed cost
    lib_own = 0
    for (ob, fn, addr), v in own.items():
        if ob != binary_obj:
            lib_own += v
            continue
        p = part_of(frames.get(addr, []), names)
        if p is None:
            unnamed[fn] += v
        else:
            parts[p] += v
    callers = defaultdict(list)  # callee function -> [(caller function, address, cost)]
    lib_called = 0
    for (ob, fn, addr, cob, cfn), v in calls.items():
        if ob != binary_obj:
            continue
        if cob == binary_obj:
            if v > 0:
                callers[cfn].append((fn, addr, v))
            continue
        lib_called += v
        p = part_of(frames.get(addr, []), names)
        if p is None:
            unnamed[fn] += v
        else:
            parts[p] += v

    memo = {}

    def spread(fn, seen):
        """Part -> share of what `fn` costs, by its callers."""
        if fn in memo:
            return memo[fn]
        ws = callers.get(fn, [])
        total = sum(w for _, _, w in ws)
        dist = defaultdict(float)
        if not ws or fn in seen or len(seen) > 16:
            dist[None] = 1.0
        else:
            for cfn, addr, w in ws:
                p = part_of(frames.get(addr, []), names)
                sub = {p: 1.0} if p is not None else spread(cfn, seen | {fn})
                for k, f in sub.items():
                    dist[k] += f * w / total
        memo[fn] = dist
        return dist

    other = defaultdict(int)
    for fn, v in unnamed.items():
        dist = spread(fn, frozenset())
        shares = {k: int(v * f) for k, f in dist.items()}
        # what rounding left goes to the largest share, so the sum is exact
        big = max(dist, key=lambda k: dist[k])
        shares[big] += v - sum(shares.values())
        for k, c in shares.items():
            if k is None:
                other[fn] += c
                parts["other"] += c
            else:
                parts[k] += c
    if lib_own != lib_called:
        # Library code not called from the binary (the dynamic loader's)
        # or calling back into it: kept apart so the sum stays exact.
        parts["other"] += lib_own - lib_called
        other["(libraries, not called from the binary)"] += lib_own - lib_called
    return parts, other


# ---------------------------------------------------------------- profile


def parse_profile(text):
    """`--report costs`: (elements: [(name, class, packets, cycles a
    packet)], tasks: [(name, packets, cycles a packet)])."""
    elements, tasks = [], []
    section = None
    for line in text.splitlines():
        t = line.split()
        if not t:
            continue
        if t[0] == "element" and "class" in t:
            section = "e"
            continue
        if t[0] == "task" and "thread" in t:
            section = "t"
            continue
        if line.startswith("("):
            continue
        if section == "e" and len(t) >= 5:
            cyc = None if t[3] == "-" else float(t[3])
            elements.append((t[0], t[1], int(t[2]), cyc))
        elif section == "t" and len(t) >= 6:
            cyc = None if t[4] == "-" else float(t[4])
            tasks.append((t[0], int(t[3]), cyc))
    return elements, tasks


def profile_parts(text, packets=None):
    """Class -> profiled cycles a packet (per packet the sources sent: the
    report's lines that hold a number alone, the sources' counts, unless
    given), and the tasks' total cycles a packet."""
    if packets is None:
        packets = sum(int(t) for t in text.split("\n") if t.strip().isdigit())
        if packets <= 0:
            raise SystemExit("profile: no packet counts (-h InfiniteSource.count) in the report")
    elements, tasks = parse_profile(text)
    by_class = defaultdict(float)
    for _, cls, n, cyc in elements:
        if cyc is not None:
            by_class[cls] += cyc * n / packets
    total = sum(cyc * n for _, n, cyc in tasks if cyc is not None) / packets
    return by_class, total


# ---------------------------------------------------------------- table


def table(binary, short_path, long_path, packets, cycles=None, profile=None, title=None):
    with open(short_path) as f:
        s_own, s_calls, s_sum = parse_callgrind(f)
    with open(long_path) as f:
        l_own, l_calls, l_sum = parse_callgrind(f)
    for path, own, summ in ((short_path, s_own, s_sum), (long_path, l_own, l_sum)):
        if sum(own.values()) != summ:
            raise SystemExit(f"{path}: own costs sum to {sum(own.values())}, summary {summ}")
    own = difference(s_own, l_own)
    calls = difference(s_calls, l_calls)
    objs = {ob for ob, _, _ in own}
    binary_obj = next((o for o in objs if o.endswith("/" + binary.split("/")[-1])), None)
    if binary_obj is None:
        raise SystemExit(f"no costs of {binary} in the runs")
    addrs = {a for ob, _, a in own if ob == binary_obj}
    addrs |= {a for ob, _, a, _, _ in calls if ob == binary_obj}
    frames = inline_frames(binary, sorted(addrs))
    parts, other = attribute(own, calls, binary_obj, frames, packets)
    total = l_sum - s_sum
    summed = sum(parts.values())
    if summed != total:
        raise SystemExit(f"parts sum to {summed}, the runs differ by {total}")
    if not any(len(f) > 1 for f in frames.values()):
        print(f"where_packets: {binary} has no inlined frames (no debug information?): "
              "inlined code is charged to the function it is in (the release profile "
              "has debug = 1)", file=sys.stderr)

    prof, scale = None, None
    if profile:
        prof, prof_total = median_profile(profile.split(","))
        if cycles and prof_total > 0:
            scale = cycles / prof_total
    # Parts under 0.05 a packet (start-up code that ran a little more or
    # less in one run) go into `other`.
    for p in [p for p in parts if p != "other" and abs(parts[p]) < 0.05 * packets]:
        parts["other"] = parts.get("other", 0) + parts.pop(p)
    if title:
        print(f"### {title}\n")
    head = "| part | instructions a packet |"
    rule = "|---|---|"
    if prof is not None:
        head += " profiled cycles a packet | scaled to the measured |"
        rule += "---|---|"
    print(head)
    print(rule)
    order = sorted((p for p in parts if p != "other"), key=lambda p: -parts[p])
    prof_left = dict(prof) if prof is not None else None
    for p in order + ["other"]:
        if p not in parts:
            continue
        row = f"| {p} | {parts[p] / packets:,.1f} |"
        if prof is not None:
            cls = profile_class(p, prof_left)
            if cls is not None:
                c = prof_left.pop(cls)
                row += f" {c:,.1f} | " + (f"{c * scale:,.1f} |" if scale else "- |")
            else:
                row += " | |"
        print(row)
    if prof is not None:
        for cls, c in sorted(prof_left.items(), key=lambda x: -x[1]):
            if c:
                print(f"| {cls} (profile only) | | {c:,.1f} | " + (f"{c * scale:,.1f} |" if scale else "- |"))
        elems = sum(prof.values())
        rest = prof_total - elems
        print(f"| tasks' cycles beyond their elements' (profile) | | {rest:,.1f} | "
              + (f"{rest * scale:,.1f} |" if scale else "- |"))
    line = f"| **total** | **{total / packets:,.1f}** |"
    if prof is not None:
        line += f" {prof_total:,.1f} | " + (f"{cycles:,.1f} |" if scale else "- |")
    print(line)
    print()
    top = sorted(other.items(), key=lambda x: -abs(x[1]))[:4]
    if top:
        print("other: " + "; ".join(f"{fn} {v / packets:,.1f}" for fn, v in top if v))
    print(f"check: parts sum to {summed:,} instructions = callgrind's totals "
          f"{l_sum:,} - {s_sum:,}; over {packets:,} packets")
    print()


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def median_profile(paths):
    """Per class and for the tasks' total, the median over the reports: a
    thread preempted inside a timed run adds its whole wait to the one
    element it was in, so a report of a loaded machine has outliers."""
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(profile_parts(f.read()))
    classes = set().union(*(r[0] for r in runs))
    by_class = {c: median([r[0].get(c, 0.0) for r in runs]) for c in classes}
    return by_class, median([r[1] for r in runs])


def profile_class(part, prof):
    """The profile's class for a part of the instruction table, if any."""
    if prof is None:
        return None
    if part in prof:
        return part
    if part == "IPRouteLookup" and "StaticIPLookup" in prof:
        return "StaticIPLookup"
    return None


def merge(columns):
    """One table of instructions a packet, a column per `table` output
    ((label, text)), parts in the first column's order, then the others'."""
    rows, order = {}, []
    for label, text in columns:
        for line in text.splitlines():
            t = [c.strip() for c in line.split("|")]
            if len(t) < 4 or t[1] in ("part", "") or t[1].startswith("---") or not t[2]:
                continue
            part = t[1].strip("*")
            if part not in rows:
                rows[part] = {}
                order.append(part)
            rows[part][label] = t[2].strip("*")
    labels = [label for label, _ in columns]
    order = [p for p in order if p not in ("other", "total")] + ["other", "total"]
    out = ["| part | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for p in order:
        if p in rows:
            out.append(f"| {p} | " + " | ".join(rows[p].get(label, "") for label in labels) + " |")
    return "\n".join(out)


# ---------------------------------------------------------------- self-test

SAMPLE = """# callgrind format
version: 1
positions: instr line
events: Ir
summary: 116

ob=(1) /bin/router
fl=(1) a.rs
fn=(1) main
0x1000 10 5
+2 +1 7
cob=(2) /lib/libc.so.6
cfn=(3) memcpy
calls=1 0x500 0
* * 30
+4 * 1
fn=(2) worker
0x2000 20 40
-0x1000 -10 3
ob=(2)
fl=(2) m.S
fn=(3)
0x500 1 30
+1 * 30
"""


def self_test():
    own, calls, summ = parse_callgrind(SAMPLE.splitlines(True))
    assert summ == 116, summ
    assert sum(own.values()) == 116, own
    # relative positions: +2 after 0x1000, `*` for the call's line, +4 after that
    assert own[("/bin/router", "main", 0x1000)] == 5
    assert own[("/bin/router", "main", 0x1002)] == 7
    assert own[("/bin/router", "main", 0x1006)] == 1
    # a negative offset from the previous cost line, across a fn= line
    assert own[("/bin/router", "worker", 0x1000)] == 3
    # the call's cost is the caller's address's, into libc's memcpy
    assert calls == {("/bin/router", "main", 0x1002, "/lib/libc.so.6", "memcpy"): 30}, calls
    assert own[("/lib/libc.so.6", "memcpy", 0x501)] == 30
    assert difference({1: 3, 2: 5}, {1: 4, 2: 5, 3: 1}) == {1: 1, 3: 1}

    # parts: the innermost frame that names one decides
    names = element_name([["<paraclick_elements::ip::check_ip_header::CheckIPHeader as "
                           "paraclick_runtime::element::Action>::action"]])
    assert names["ip::check_ip_header"] == "CheckIPHeader", names
    chk = ["paraclick_packet::wire::checksum::sum",
           "paraclick_elements::ip::check_ip_header::CheckIPHeader::validate",
           "<paraclick_runtime::element::ActionNode<A> as paraclick_runtime::element::FusedAction>::run_one"]
    assert part_of(chk, names) == "CheckIPHeader"
    assert part_of(chk[2:], names) == "node wrappers (ActionNode, ElementNode)"
    # shared element-library code goes to the element that called it
    lpm = ["paraclick_elements::iproute::lpm::Lpm::lookup",
           "paraclick_elements::iproute::route_table::IPRouteLookup<T>::route"]
    assert part_of(lpm, names) == "IPRouteLookup"
    # the pool inside a source: allocation, not the source
    alloc = ["alloc::vec::Vec<T,A>::pop", "paraclick_packet::pool::Local::alloc",
             "paraclick_packet::pool::alloc",
             "<paraclick_elements::sources::infinite_source::InfiniteSource as x>::run_task"]
    assert part_of(alloc, names) == "packet pool: allocation"
    assert part_of(["core::ptr::drop_in_place<paraclick_packet::packet::Packet>"]) == "packet pool: free"
    assert part_of(["core::ptr::drop_in_place<paraclick_packet::batch::Batch>"]) == "packet pool: free"
    assert part_of(["paraclick_packet::pool::release_batch",
                    "core::ptr::drop_in_place<paraclick_packet::batch::Batch>"]) == "packet pool: free"
    # a buffer's deref is the pool's code but the element's work
    assert part_of(["<paraclick_packet::pool::Buf as core::ops::deref::DerefMut>::deref_mut",
                    "<paraclick_elements::ip::dec_ip_ttl::DecIPTTL as x>::action"]) == "ip::dec_ip_ttl"
    assert part_of(["paraclick_runtime::ring::Ring<T>::pop_burst_inner"]) == "queue rings (runtime::ring)"
    # Cx's hop code inside an element's task run is dispatch; its clock is not
    assert part_of(["paraclick_runtime::cx::Cx::pull_packet_plain",
                    "paraclick_elements::standard::discard::Discard::run_task_with"]) \
        == "hop dispatch (Cx, peers)"
    assert part_of(["paraclick_runtime::cx::Cx::timestamp",
                    "paraclick_elements::sources::infinite_source::InfiniteSource::x"]) \
        == "sources::infinite_source"
    assert part_of(["core::sync::atomic::atomic_load", "paraclick_runtime::sched::Pass::run_in"]) \
        == "scheduler (worker's pass, task runs)"
    assert part_of(["hashbrown::raw::RawTable<T,A>::find"]) is None
    # a built program's code
    assert part_of(["<built_fir::T as paraclick_runtime::compiled::CompiledTasks>::run_task"]) \
        == "built program: its task runs' dispatch"
    assert part_of(["paraclick_runtime::compiled::ElemRef<T>::get", "built_fir::e16"]) \
        == "compiled entries (runtime::compiled)"
    assert part_of(["built_fir::e16", "built_fir::e15"]) == "built program: its chains' own code"

    # attribution: library costs go to the calling address, parts sum exactly
    frames = {0x1000: ["paraclick_runtime::sched::worker"],
              0x1002: ["<paraclick_elements::sources::infinite_source::InfiniteSource "
                       "as paraclick_runtime::element::Element>::run_task"],
              0x1006: ["main"]}
    parts, other = attribute(own, calls, "/bin/router", frames, 1)
    assert sum(parts.values()) == 116, parts
    assert parts["InfiniteSource"] == 7 + 30, parts
    assert parts["scheduler (worker's pass, task runs)"] == 5 + 3, parts
    # the worker's address 0x2000 has no frames: other
    assert parts["other"] == 40 + 1 + 30, parts  # memcpy's second 30: not called from the binary
    assert other["worker"] == 40 and other["main"] == 1, other

    # an unnamed function's cost goes to its callers' parts, by what each
    # call costs, up through unnamed callers; exact in the sum
    B = "/bin/router"
    q = "<paraclick_elements::standard::queue::Queue as x>::push"
    d = "<paraclick_elements::standard::discard::Discard as x>::run_task"
    own2 = {(B, "drain", 0x10): 100, (B, "drain", 0x11): 1,
            (B, "mid", 0x20): 10, (B, "queue", 0x30): 5, (B, "lonely", 0x40): 7}
    calls2 = {(B, "queue", 0x31, B, "drain"): 75,   # a Queue calls drain directly
              (B, "mid", 0x21, B, "drain"): 25,     # and through an unnamed `mid`
              (B, "discard", 0x50, B, "mid"): 35}   # that a Discard calls
    frames2 = {0x30: [q], 0x31: [q], 0x50: [d]}
    parts, other = attribute(own2, calls2, B, frames2, 1)
    assert sum(parts.values()) == 123, parts
    assert parts["Queue"] == 5 + 75 + 1, parts   # drain's 101 split 3:1, the rest rounded to the larger
    assert parts["Discard"] == 25 + 10, parts
    assert parts["other"] == 7 and other == {"lonely": 7}, (parts, other)

    prof = """element                      class                   packets    cyc/pkt    share
src0                         InfiniteSource          1000          100.0     4.4%
c0                           Classifier              1000           50.0     1.9%
c1                           Classifier              1000           70.0     1.9%
DriverManager@2              DriverManager              0              -     0.0%

task                         thread         runs      packets    cyc/pkt    share
src0[0]                           0      1001      1000     400.0    35.0%
d0[0]                             0      1001      1000     100.0    11.7%
(cycle counter 2.60 GHz; element cycles exclude the elements they call)
"""
    by_class, total = profile_parts(prof, 1000)
    assert by_class == {"InfiniteSource": 100.0, "Classifier": 120.0}, by_class
    assert total == 500.0, total
    # the packets from the sources' counts printed before the report
    by_class, total = profile_parts("src0.count:\n500\n\nsrc1.count:\n500\n\n" + prof)
    assert by_class == {"InfiniteSource": 100.0, "Classifier": 120.0}, by_class
    assert median([3, 1, 2]) == 2 and median([4, 1, 2, 3]) == 2.5

    merged = merge([("a", "| part | instructions a packet |\n|---|---|\n| Queue | 5.0 |\n"
                          "| other | 1.0 |\n| **total** | **6.0** |\n"),
                    ("b", "| part | instructions a packet | x | y |\n|---|---|---|---|\n"
                          "| Discard | 2.0 | 1 | 2 |\n| Queue | 3.0 | | |\n"
                          "| tasks' x (profile) | | 3 | 4 |\n| other | 0.0 | | |\n"
                          "| **total** | **5.0** | 9 | 9 |\n")])
    assert merged.splitlines()[2:] == ["| Queue | 5.0 | 3.0 |", "| Discard |  | 2.0 |",
                                       "| other | 1.0 | 0.0 |", "| total | 6.0 | 5.0 |"], merged
    print("where_packets: self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return
    if len(argv) >= 3 and argv[1] == "merge":
        cols = []
        for a in argv[2:]:
            label, path = a.split("=", 1)
            with open(path) as f:
                cols.append((label, f.read()))
        print(merge(cols))
        return
    if len(argv) >= 6 and argv[1] == "table":
        binary, short, long, packets = argv[2], argv[3], argv[4], int(argv[5])
        opts = dict(zip(argv[6::2], argv[7::2]))
        cycles = float(opts["--cycles"]) if "--cycles" in opts else None
        profile = opts.get("--profile")
        table(binary, short, long, packets, cycles, profile, opts.get("--title"))
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
