#!/usr/bin/env python3
"""Quality of `paraclick parallelize` (issue 18): for each configuration at
-j 2, every candidate the tool considered (all written from one profile
with --emit-all) is measured with the bench harness (`bench --mlffr`), in
the same run, beside the unmodified configuration under the adaptive
scheduler. Rounds alternate over all variants and the median of each is
reported (the machine is shared and noisy). Printed per configuration:
predicted vs measured per candidate, the rank of the chosen plan among the
measured candidates, and the chosen plan against the unmodified
configuration (adaptive) and the naive round-robin placement (candidate 0).

On a VM the core-to-core line time moves between two states (~30 ns and
~155 ns) for minutes at a time, and the model predicts for the state it
sees when it profiles. The line is taken before every measured run (the
model's example line_now): each configuration's table also gives the
runs in the prediction's state, ranked on those alone where every
variant has at least two.

    scripts/parallelize-quality.py [--rounds 3] [--trial 0.5] [--offered [--loss F]] [CONF ...]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "paraclick")
DEFAULT = ["conf/fake-iprouter.click", "conf/nat-bench.click",
           "conf/vpn-bench.click", "conf/replicated-qos.click"]
BIG_N = "N=1000000000000"
LINE_NOW = os.path.join(ROOT, "target", "release", "examples", "line_now")
SLOW_NS = 100.0  # between the fast (~25 ns) and the slow (~190 ns) line state of this VM


def line_ns():
    out = subprocess.run([LINE_NOW], capture_output=True, text=True).stdout
    m = re.search(r"line ([\d.]+) ns", out)
    return float(m.group(1)) if m else 0.0


EXTRA = []  # --offered / --loss, passed to every bench run


def mlffr(args, trial):
    out = subprocess.run(
        [BIN, "bench", "--mlffr", "-j", "2", "--trial", str(trial),
         "--warmup", "0.2"] + EXTRA + args,
        cwd=ROOT, capture_output=True, text=True)
    m = re.search(r"^MLFFR (\d+) pps", out.stdout, re.M)
    lossy = "dropped" in out.stdout
    if not m:
        sys.stderr.write(out.stdout + out.stderr)
        return None, lossy
    return float(m.group(1)), lossy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trial", type=float, default=0.5)
    ap.add_argument("--offered", action="store_true",
                    help="offer rates through FastUDPFlows too (bench --offered): the "
                         "loss-free rate of configurations that drop by design when "
                         "saturated, as QoS schedulers do")
    ap.add_argument("--loss", type=float, default=0.0,
                    help="loss fraction a passing trial may have (bench --loss)")
    ap.add_argument("confs", nargs="*")
    a = ap.parse_args()
    if a.offered:
        EXTRA.append("--offered")
    if a.loss:
        EXTRA.extend(["--loss", str(a.loss)])
    confs = a.confs or [c for c in DEFAULT if os.path.exists(os.path.join(ROOT, c))]
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "paraclick"],
                   cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "paraclick-model",
                    "--example", "line_now"], cwd=ROOT, check=True)
    summary = []
    for conf in confs:
        d = tempfile.mkdtemp(prefix="par-quality-")
        plan = subprocess.run(
            [BIN, "parallelize", "-j", "2", "--emit-all", d, conf, BIG_N],
            cwd=ROOT, capture_output=True, text=True)
        if plan.returncode != 0:
            print(f"{conf}: parallelize failed: {plan.stderr.strip()}")
            continue
        cands = []
        for line in plan.stdout.splitlines():
            # "// *K  PREDICTED  FLOOR  NAME  PLACEMENT"
            m = re.match(r"^// ([ *])(\d+)\s+(\d+)\s+(\d+)\s+(.*?)\s{2,}", line)
            if m:
                cands.append({"k": int(m.group(2)), "chosen": m.group(1) == "*",
                              "pred": float(m.group(3)), "floor": float(m.group(4)),
                              "name": m.group(5)})
        variants = [("unmodified, adaptive", [conf, BIG_N, "--sched", "adaptive"])]
        # Candidates whose rewrites are the same configuration (the best
        # placement is often round-robin's) are measured once, as one:
        # two runs of one plan differ by the machine's noise, and ranking
        # a plan against its own twin measures that noise.
        twin = {}
        first_of = {}
        for c in cands:
            f = os.path.join(d, f"candidate-{c['k']}.click")
            with open(f) as fh:
                body = "".join(l for l in fh if not l.startswith("//"))
            name = f"#{c['k']} {c['name']}"
            if body in first_of:
                twin[name] = first_of[body]
                continue
            first_of[body] = name
            variants.append((name, [f]))
        m = re.search(r"core-to-core line (\d+) ns", plan.stdout)
        pred_line = float(m.group(1)) if m else 0.0
        pred_slow = pred_line >= SLOW_NS
        runs = {v[0]: [] for v in variants}
        same = {v[0]: [] for v in variants}
        slow_runs = 0
        drops = {v[0]: 0 for v in variants}
        for _ in range(a.rounds):
            for name, args in variants:
                slow = line_ns() >= SLOW_NS
                slow_runs += slow
                r, lossy = mlffr(args, a.trial)
                if r is not None:
                    runs[name].append(r)
                    if slow == pred_slow:
                        same[name].append(r)
                    drops[name] += lossy
        # Ranked on the runs in the prediction's line state where every
        # variant has two of them, else on all runs.
        use_same = all(len(v) >= 2 for v in same.values())
        chosen_runs = same if use_same else runs
        med = {k: statistics.median(v) if v else 0.0 for k, v in chosen_runs.items()}
        for name, of in twin.items():
            med[name] = med[of]
        total = a.rounds * len(variants)
        print(f"\n{conf} at -j 2 (bench --mlffr --trial {a.trial} {' '.join(EXTRA)}, {a.rounds} alternating "
              f"rounds; predicted at a {pred_line:.0f} ns line, "
              f"{'slow' if pred_slow else 'fast'} state; {slow_runs} of {total} runs "
              f"met the slow state; medians of "
              f"{'the runs in the prediction' + chr(39) + 's state' if use_same else 'all runs'})")
        print(f"  {'variant':<62} {'predicted':>10} {'floor':>10} {'measured':>10} {'error':>7}  rank")
        measured = sorted(((med[f"#{c['k']} {c['name']}"], c['k']) for c in cands),
                          reverse=True)
        # Twins share a rank: the best of equal rates.
        rank = {}
        for i, (r, k) in enumerate(measured):
            rank[k] = next(j + 1 for j, (r2, _) in enumerate(measured) if r2 == r)
        adaptive = med["unmodified, adaptive"]
        print(f"  {'unmodified, adaptive':<62} {'':>10} {'':>10} {adaptive:>10.0f} {'':>7}"
              + (f"  ({drops['unmodified, adaptive']} runs with drops)"
                 if drops["unmodified, adaptive"] else ""))
        chosen = None
        for c in cands:
            name = f"#{c['k']} {c['name']}"
            m = med[name]
            err = (c["pred"] - m) / m * 100 if m else float("nan")
            mark = " <- chosen" if c["chosen"] else ""
            nd = drops[twin.get(name, name)]
            dr = f" ({nd} runs with drops)" if nd else ""
            if name in twin:
                dr += f" (the same configuration as {twin[name].split()[0]}, measured as one)"
            print(f"  {name:<62} {c['pred']:>10.0f} {c['floor']:>10.0f} {m:>10.0f} {err:>+6.0f}%  "
                  f"{rank[c['k']]}{mark}{dr}")
            if c["chosen"]:
                chosen = c
        if chosen is None:
            continue
        cm = med[f"#{chosen['k']} {chosen['name']}"]
        best = measured[0][0]
        rr = med[f"#0 {cands[0]['name']}"]
        def root(n):
            return twin.get(n, n)
        rr_twin = chosen['k'] != 0 and \
            root(f"#{chosen['k']} {chosen['name']}") == root(f"#0 {cands[0]['name']}")
        line = (f"  chosen #{chosen['k']}{' (= round-robin)' if rr_twin else ''}: "
                f"rank {rank[chosen['k']]} of {len(cands)}, "
                f"{(cm / best - 1) * 100:+.1f}% vs best measured, "
                f"{(cm / adaptive - 1) * 100 if adaptive else float('nan'):+.1f}% vs unmodified adaptive, "
                f"{(cm / rr - 1) * 100 if rr else float('nan'):+.1f}% vs round-robin; "
                f"model {(chosen['pred'] - cm) / cm * 100 if cm else float('nan'):+.0f}% on it")
        print(line)
        summary.append((conf, line.strip() + ("" if use_same else
                                               " [runs in both line states]")))
    print("\nsummary:")
    for conf, line in summary:
        print(f"  {conf}: {line}")


if __name__ == "__main__":
    main()
