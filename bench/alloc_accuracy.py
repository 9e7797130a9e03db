#!/usr/bin/env python3
"""How true is the allocation profile? Runs inprof_alloc_sites (tests/sdk/fixtures/
alloc_sites.cpp) --runs times under LD_PRELOAD=libinprof.so with INPROF_EVENTS=alloc,
INPROF_ALLOC_RATE=--rate and INPROF_ALLOC_SEED=1..N, and compares each site's estimates with
what the program reports it did (its own JSON on stdout: objects, bytes, live bytes, and every
allocation size with its count).

Per site it prints the ratio estimate / truth of alloc_space and alloc_objects (mean, sd, min,
max over the runs, and in how many runs it was within +-10 %), the expected number of samples
(sum over allocations of p = 1 - exp(-s / rate)) and the relative standard error that Poisson
sampling predicts for each estimate, the in-use space at exit (freed sites must show 0, the
live site its live bytes), and where the sampled bytes landed:

  function  the first frame above the allocator (malloc & co., operator new, the runtime's
            own frames) in the folded stacks: alloc_space on the site's function / the
            profile's total alloc_space;
  line      from the annotation JSON: the inclusive alloc_space on the site's allocation
            line / the profile's total (and per site: / the bytes on its function).

Exits 1 when a target fails: every site with >= 1000 expected samples within +-10 % in
>= 99 % of the runs (alloc_space and alloc_objects; the live site's inuse_space too), the
in-use space of every freed site 0 in every run, and >= 99 % of the sampled bytes (and
objects) on the right line in every run. Exits 2 on a setup error (no build, the runtime
refuses INPROF_EVENTS=alloc, outputs missing).

  bench/alloc_accuracy.py [--build build] [--runs 100] [--rate 64K] [--scale 1] [--first-seed 1]

The module's functions are also used by tests/sdk/alloc_sites_test.py.
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

EVENTS = ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space")

# Frames that belong to the allocator or to the runtime, never to the program's call site:
# skipped from the leaf up to find the function that allocated. operator new's frames sit
# above malloc when new is not interposed itself; names without symbols (module+0xoffset) of
# libc, libstdc++ and the runtime count as allocator frames too.
ALLOCATOR_FRAME = re.compile(
    r"^(?:malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc"
    r"|pvalloc|cfree|__libc_\w+|_int_\w+|__GI_\w+|__posix_memalign|_mid_memalign"
    r"|operator new.*|operator delete.*|std::__new_allocator.*|__gnu_cxx::new_allocator.*"
    r"|inprof::.*|inprof_.*|\[.*\]"
    r"|(?:\S*/)?lib(?:inprof|stdc\+\+|c)\.so[^ ]*\+0x[0-9a-f]+)$")


class SetupError(Exception):
    """The measurement could not be made (not a failed target)."""


def parse_size(text):
    """'64K' -> 65536, '1M' -> 1048576, '4096' -> 4096 (K and M as powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmM]?)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected a size such as 4096, 64K or 1M, got '{text}'")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1 << 20}[m.group(2).lower()]


def site_expectations(site, rate):
    """Expected samples and predicted relative standard errors of one site's estimates.

    A sample of size s is taken with p = 1 - exp(-s/R) and weighted 1/p (objects) and s/p
    (bytes); the estimates are unbiased with variance sum((1 - p) / p) and sum(s^2 (1 - p) / p)
    over the allocations."""
    samples = var_objects = var_bytes = 0.0
    for size, count in site["sizes"]:
        p = -math.expm1(-size / rate)
        samples += count * p
        var_objects += count * (1 - p) / p
        var_bytes += count * size * size * (1 - p) / p
    return {
        "samples": samples,
        "rse_objects": math.sqrt(var_objects) / site["objects"],
        "rse_bytes": math.sqrt(var_bytes) / site["bytes"],
    }


def function_matches(frame, function):
    return frame == function or frame.startswith(function + "(")


def attributed_frame(stack):
    """The first frame above the allocator, from the leaf (the last frame) up."""
    frames = stack.split(";")
    for frame in reversed(frames):
        name = frame[:-4] if frame.endswith("_[i]") else frame
        if not ALLOCATOR_FRAME.match(name):
            return name
    return frames[0] if frames else ""


def read_folded(path):
    """{stack: weight} of a folded file."""
    stacks = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            try:
                stacks[stack] = stacks.get(stack, 0) + float(count)
            except ValueError:
                raise SetupError(f"{path}:{number}: expected 'stack count', got '{line[:80]}'")
    return stacks


def folded_files(prefix, empty_events=()):
    """The per-event folded files of output `prefix`.folded: {event: path}. An event listed in
    `empty_events` (no weight in the profile) may have no file."""
    files = {}
    for event in EVENTS:
        path = f"{prefix}.{event}.folded"
        if os.path.exists(path):
            files[event] = path
    missing = [e for e in EVENTS if e not in files and e not in empty_events]
    if missing:
        present = sorted(os.path.basename(p) for p in glob.glob(os.path.dirname(prefix) + "/*"))
        raise SetupError(f"no folded output for {', '.join(missing)} (expected "
                         f"{os.path.basename(prefix)}.<event>.folded); the run wrote: "
                         f"{', '.join(present) or 'nothing'}")
    return files


def runtime_refuses_alloc(stderr):
    """True when the runtime's error says it does not know the alloc event."""
    return bool(re.search(r"unknown event|INPROF_EVENTS: invalid|invalid INPROF_EVENTS", stderr))


def run_once(program, lib, tmp, rate, seed, scale, preload_prefix=""):
    """Runs the fixture once under the profiler; returns (truth, folded {event: stacks},
    annotation JSON). Raises SetupError when the run or its outputs are not usable."""
    for old in glob.glob(os.path.join(tmp, "p.*")):
        os.unlink(old)
    prefix = os.path.join(tmp, "p")
    env = dict(os.environ)
    env.update({
        "LD_PRELOAD": " ".join(x for x in (preload_prefix, lib) if x),
        "INPROF_EVENTS": "alloc",
        "INPROF_ALLOC_RATE": str(rate),
        "INPROF_ALLOC_SEED": str(seed),
        "INPROF_OUTPUT": f"{prefix}.folded,{prefix}.json",
        "INPROF_QUIET": "1",
    })
    proc = subprocess.run([program, "--scale", str(scale)], env=env, capture_output=True,
                          text=True, timeout=600)
    if runtime_refuses_alloc(proc.stderr):
        raise SetupError("the runtime does not know INPROF_EVENTS=alloc: "
                         + proc.stderr.strip().splitlines()[0])
    if proc.returncode != 0:
        raise SetupError(f"{program} exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    try:
        truth = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise SetupError(f"{program}: its stdout is not the expected JSON ({e})")
    try:
        with open(prefix + ".json", encoding="utf-8") as f:
            annotation = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise SetupError(f"{prefix}.json: {e}")
    empty = [e["name"] for e in annotation.get("events", []) if e.get("total_weight") == 0]
    folded = {event: {} for event in EVENTS}
    for event, path in folded_files(prefix, empty).items():
        folded[event] = read_folded(path)
    return truth, folded, annotation


def source_suffix(path):
    """A path without leading ./ and ../ parts (the fixture's __FILE__ may be relative)."""
    parts = [p for p in path.split("/") if p not in ("", ".", "..")]
    return "/".join(parts)


def analyse(truth, folded, annotation):
    """One run's estimates per site and where its weight landed."""
    sites = truth["sites"]
    per_site = {s["function"]: {e: 0.0 for e in EVENTS} for s in sites}
    totals = {e: 0.0 for e in EVENTS}
    elsewhere = {}  # alloc_space not on any site: attributed frame -> weight
    for event, stacks in folded.items():
        for stack, weight in stacks.items():
            totals[event] += weight
            frame = attributed_frame(stack)
            for s in sites:
                if function_matches(frame, s["function"]):
                    per_site[s["function"]][event] += weight
                    break
            else:
                if event == "alloc_space":
                    elsewhere[frame] = elsewhere.get(frame, 0) + weight

    # Lines: inclusive weight of each site's (file, line) in the annotation JSON.
    names = [e["name"] for e in annotation.get("events", [])]
    for event in ("alloc_objects", "alloc_space"):
        if event not in names:
            raise SetupError(f"the annotation JSON has no event {event} (events: {names})")
    i_obj, i_space = names.index("alloc_objects"), names.index("alloc_space")
    suffix = source_suffix(truth["file"])
    lines = {}
    for f in annotation.get("files", []):
        if source_suffix(f.get("path", "")).endswith(suffix):
            for line in f.get("lines", []):
                lines[line["line"]] = line["inclusive"]
    line_space = {}
    line_objects = {}
    for s in sites:
        inclusive = lines.get(s["line"], [0] * len(names))
        line_space[s["function"]] = inclusive[i_space]
        line_objects[s["function"]] = inclusive[i_obj]
    json_space = annotation["events"][i_space].get("total_weight", 0)
    json_objects = annotation["events"][i_obj].get("total_weight", 0)
    return {
        "sites": per_site,
        "totals": totals,
        "elsewhere": elsewhere,
        "line_space": line_space,
        "line_objects": line_objects,
        "function_share_space": sum(v["alloc_space"] for v in per_site.values())
                                / max(totals["alloc_space"], 1e-300),
        "function_share_objects": sum(v["alloc_objects"] for v in per_site.values())
                                  / max(totals["alloc_objects"], 1e-300),
        "line_share_space": sum(line_space.values()) / max(json_space, 1e-300),
        "line_share_objects": sum(line_objects.values()) / max(json_objects, 1e-300),
    }


def summary(values):
    return {
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="the build directory (default: build)")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rate", type=parse_size, default=parse_size("64K"),
                        help="INPROF_ALLOC_RATE, bytes (K/M suffixes; default 64K)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="the fixture's --scale (default 1: >= 1000 samples per site at 64K)")
    parser.add_argument("--first-seed", type=int, default=1,
                        help="seeds FIRST..FIRST+runs-1 (default 1; seeded runs repeat exactly)")
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--share", type=float, default=0.99,
                        help="required share of runs within tolerance, and of bytes on the line")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    program = os.path.join(args.build, "tests/sdk/inprof_alloc_sites")
    lib = os.path.abspath(os.path.join(args.build, "sdk/libinprof.so"))
    for path in (program, lib):
        if not os.path.exists(path):
            print(f"alloc_accuracy.py: {path} not found: build first (cmake --build {args.build} "
                  "--target inprof inprof_alloc_sites)", file=sys.stderr)
            return 2

    runs = []
    with tempfile.TemporaryDirectory(prefix="inprof-alloc-") as tmp:
        for seed in range(args.first_seed, args.first_seed + args.runs):
            try:
                truth, folded, annotation = run_once(program, lib, tmp, args.rate, seed, args.scale)
                runs.append((truth, analyse(truth, folded, annotation)))
            except SetupError as e:
                print(f"alloc_accuracy.py: run {seed}: {e}", file=sys.stderr)
                return 2
            if (seed - args.first_seed + 1) % 10 == 0:
                print(f"{seed - args.first_seed + 1} runs done", file=sys.stderr)

    truth = runs[0][0]
    tol = args.tolerance
    need = math.ceil(args.share * args.runs - 1e-9)
    failures = []
    print(f"{args.runs} runs (seeds {args.first_seed}..{args.first_seed + args.runs - 1}), "
          f"INPROF_ALLOC_RATE={args.rate}, scale {args.scale}; "
          f"targets: within +-{tol:.0%} in >= {need}/{args.runs} runs for sites with >= 1000 "
          f"expected samples\n")
    # sd / predicted: about 1 (+-0.07 for 100 runs) when the runtime samples as Poisson
    # sampling should; above, something adds noise (weights rounded, samples lost or moved).
    print("| site | expected samples | event | predicted rse | mean | sd | sd / predicted | min "
          "| max | within +-10 % |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for site in truth["sites"]:
        name = site["function"]
        exp = site_expectations(site, args.rate)
        checked = exp["samples"] >= 1000
        rows = [("alloc_space", site["bytes"], exp["rse_bytes"]),
                ("alloc_objects", site["objects"], exp["rse_objects"])]
        if site["live_bytes"] > 0:
            rows += [("inuse_space", site["live_bytes"], exp["rse_bytes"]),
                     ("inuse_objects", site["live_objects"], exp["rse_objects"])]
        for event, true_value, rse in rows:
            ratios = [a["sites"][name][event] / true_value for _, a in runs]
            s = summary(ratios)
            within = sum(1 for r in ratios if abs(r - 1) <= tol)
            sd_ratio = f"{s['sd'] / rse:.2f}" if rse > 0 else "-"
            print(f"| {name} | {exp['samples']:.0f} | {event} | {rse:.2%} | {s['mean']:.4f} | "
                  f"{s['sd']:.4f} | {sd_ratio} | {s['min']:.4f} | {s['max']:.4f} | "
                  f"{within}/{args.runs} |")
            if checked and event != "inuse_objects" and within < need:
                failures.append(f"{name} {event}: within +-{tol:.0%} in {within}/{args.runs} runs"
                                f" (mean {s['mean']:.4f}, min {s['min']:.4f}, max {s['max']:.4f})")

    print("\n| freed site | max inuse_space | max inuse_objects |")
    print("|---|---|---|")
    for site in truth["sites"]:
        if site["live_bytes"] > 0:
            continue
        name = site["function"]
        space = max(a["sites"][name]["inuse_space"] for _, a in runs)
        objects = max(a["sites"][name]["inuse_objects"] for _, a in runs)
        print(f"| {name} | {space:.0f} | {objects:.0f} |")
        if space != 0 or objects != 0:
            failures.append(f"{name}: freed, but in use at exit in some run "
                            f"(up to {space:.0f} bytes, {objects:.0f} objects)")

    print("\n| site | share of its function's alloc_space on its line (min over runs) | line |")
    print("|---|---|---|")
    for site in truth["sites"]:
        name = site["function"]
        shares = [a["line_space"][name] / a["sites"][name]["alloc_space"]
                  for _, a in runs if a["sites"][name]["alloc_space"] > 0]
        print(f"| {name} | {min(shares) if shares else float('nan'):.4f} | {site['line']} |")

    print()
    for key, label in (("function_share_space", "alloc_space on the right function"),
                       ("function_share_objects", "alloc_objects on the right function"),
                       ("line_share_space", "alloc_space on the right file:line"),
                       ("line_share_objects", "alloc_objects on the right file:line")):
        s = summary([a[key] for _, a in runs])
        print(f"{label}: mean {s['mean']:.4%}, min {s['min']:.4%}")
        if s["min"] < args.share:
            failures.append(f"{label}: {s['min']:.4%} in the worst run (target >= "
                            f"{args.share:.0%})")
    elsewhere = {}
    for _, a in runs:
        for frame, weight in a["elsewhere"].items():
            elsewhere[frame] = elsewhere.get(frame, 0) + weight / args.runs
    top = sorted(elsewhere.items(), key=lambda kv: -kv[1])[:5]
    if top:
        print("alloc_space outside the sites (mean per run, by the frame above the allocator): "
              + "; ".join(f"{frame} {weight:.0f}" for frame, weight in top))

    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print("\nall targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
