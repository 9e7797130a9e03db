#!/usr/bin/env python3
"""Is a profile as true as sampling can be? Runs inprof_alias_loop (bench/alias_loop.cpp)
under LD_PRELOAD=libinprof.so and compares what the profile says with what the program did:

  loop      5:3:2 loops (work_alpha/beta/gamma) with rounds of --rounds-us microseconds:
            every run's shares must lie within --se standard errors of 50/30/20; also prints
            how concentrated the sample instants are modulo the kernel tick (the resultant
            length of their phases: 1 = every sample at the same phase, about 1/sqrt(n) for
            phases spread uniformly)
  threads   --threads threads of --thread-ms ms of CPU each: samples got against CPU time x
            rate, from the samples themselves and from the health block's expected/weight
  syscalls  rounds of 1 ms in user space and 1 ms inside read(2): the share each side gets

Configurations are ENGINE[:lazy] words: auto, auto:eager, timer, perf, itimer, and
auto-noperf (auto where perf_event_open is refused, as under perf_event_paranoid 3; uses the
INPROF_TEST_PERF_ERRNO seam). Other INPROF_ variables in the environment (INPROF_TIMER_JITTER)
pass through. Prints one markdown row per configuration and exits 1 when a run broke the
rule. The short version CI runs is PreloadTest.TheDefaultEngineDoesNotAliasWithTheTick.

  bench/alias.py --build build loop --configs auto,timer --hz 99,250 --rounds-us 3900,4000 --runs 10
"""
import argparse
import cmath
import json
import math
import os
import subprocess
import sys
import tempfile
import time

TRUTH = {"work_alpha": 0.5, "work_beta": 0.3, "work_gamma": 0.2}


def tick_ns():
    # The kernel tick: CLOCK_REALTIME_COARSE's resolution (clock id 5 on Linux), as the
    # runtime reads it.
    try:
        res = time.clock_getres(5)
        if res > 0:
            return int(round(res * 1e9))
    except OSError:
        pass
    return 4000000


def config_env(config):
    env = {}
    engine, _, start = config.partition(":")
    if engine == "auto-noperf":
        env["INPROF_TEST_PERF_ERRNO"] = "EACCES"
        engine = "auto"
    env["INPROF_ENGINE"] = engine
    env["INPROF_LAZY"] = "0" if start == "eager" else "1"
    return env


def run(args, config, hz, argv):
    with tempfile.TemporaryDirectory(prefix="inprof-alias-") as tmp:
        scope = os.path.join(tmp, "p.speedscope.json")
        annotation = os.path.join(tmp, "p.json")
        env = dict(os.environ)
        env.update(config_env(config))
        env.update({
            "LD_PRELOAD": args.lib or os.path.join(args.build, "sdk", "libinprof.so"),
            "INPROF_OUTPUT": scope + "," + annotation,
            "INPROF_FREQUENCY": str(hz),
            "INPROF_QUIET": "1",
            "INPROF_SYMBOL_CACHE": "off",
        })
        program = os.path.join(args.build, "bench", "inprof_alias_loop")
        if args.program:
            program = args.program
        out = subprocess.run([program] + argv, env=env, check=True, capture_output=True,
                             text=True, timeout=600)
        if not os.path.exists(scope):
            sys.exit("%s wrote no profile (%s):\n%s" % (program, config, out.stderr))
        with open(scope) as f:
            speedscope = json.load(f)
        with open(annotation) as f:
            health = json.load(f).get("health", {})
        return speedscope, health, out.stdout


def samples(speedscope):
    """(names on the stack, weight, time_ns or None) per sample, weights in periods."""
    names = [frame["name"] for frame in speedscope["shared"]["frames"]]
    scale = speedscope.get("inprof", {}).get("weight_scale", 1) or 1
    for profile in speedscope["profiles"]:
        times = profile.get("inprof", {}).get("times_ns") or profile.get("times_ns") or []
        for i, (stack, weight) in enumerate(zip(profile["samples"], profile["weights"])):
            yield ({names[f] for f in stack if f < len(names)}, weight / scale,
                   times[i] if i < len(times) else None)


def phase_resultant(times, period_ns):
    if not times:
        return float("nan")
    total = sum(cmath.exp(2j * math.pi * (t % period_ns) / period_ns) for t in times)
    return abs(total) / len(times)


def loop_run(args, config, hz, round_us):
    speedscope, health, _ = run(args, config, hz, ["loop", str(round_us), str(args.seconds)])
    weight = {name: 0.0 for name in TRUTH}
    total = sum_sq = 0.0
    times = []
    for stack, w, t in samples(speedscope):
        hit = [name for name in TRUTH if name in stack]
        if not hit:
            continue
        weight[hit[0]] += w
        total += w
        sum_sq += w * w
        if t is not None:
            times.append(t)
    if total == 0:
        return {"z": float("inf"), "shares": (0, 0, 0), "n": 0, "r_tick": float("nan"), "got": 0,
                "engine": health.get("engine", "?")}
    # Weighted samples (timer overruns) count as fewer independent ones: n_eff = (sum w)^2 /
    # sum w^2.
    n_eff = total * total / sum_sq
    z = 0.0
    shares = []
    for name, truth in TRUTH.items():
        share = weight[name] / total
        shares.append(share)
        z = max(z, abs(share - truth) / math.sqrt(truth * (1 - truth) / n_eff))
    threads = health.get("threads", [])
    expected = sum(t.get("expected", 0) for t in threads)
    got = sum(t.get("weight", 0) for t in threads)
    return {"z": z, "shares": tuple(shares), "n": n_eff, "got": got / expected if expected else 0,
            "r_tick": phase_resultant(times, tick_ns()), "engine": health.get("engine", "?")}


def cmd_loop(args):
    failed = 0
    print("| configuration | Hz | round (us) | runs | outside %.1f SE | worst z | worst shares "
          "| samples/run | weight / CPU x rate | phase resultant vs tick (median) | engine |"
          % args.se)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for config in args.configs.split(","):
        for hz in [int(h) for h in args.hz.split(",")]:
            for round_us in [float(r) for r in args.rounds_us.split(",")]:
                results = [loop_run(args, config, hz, round_us) for _ in range(args.runs)]
                bad = [r for r in results if r["z"] > args.se]
                failed += len(bad)
                worst = max(results, key=lambda r: r["z"])
                rs = sorted(r["r_tick"] for r in results)
                print("| %s | %d | %g | %d | %d | %.1f | %s | %.0f | %.0f %% | %.2f | %s |" % (
                    config, hz, round_us, len(results), len(bad), worst["z"],
                    "/".join("%.0f" % (100 * s) for s in worst["shares"]),
                    sum(r["n"] for r in results) / len(results),
                    100 * sum(r["got"] for r in results) / len(results), rs[len(rs) // 2],
                    worst["engine"]), flush=True)
    return 1 if failed else 0


def cmd_threads(args):
    failed = 0
    print("| configuration | Hz | threads x ms | in work_alpha: got / its CPU x rate | "
          "all the threads' samples / their whole CPU x rate | "
          "health weight / expected (all threads) | engine |")
    print("|---|---|---|---|---|---|---|")
    for config in args.configs.split(","):
        for hz in [int(h) for h in args.hz.split(",")]:
            for _ in range(args.runs):
                speedscope, health, stdout = run(
                    args, config, hz, ["threads", str(args.threads), str(args.thread_ms)])
                words = stdout.split()
                cpu, whole = float(words[1]), float(words[3])
                got = all_threads = 0.0
                for stack, w, _ in samples(speedscope):
                    if "work_alpha" in stack:
                        got += w
                    # Every sample of a started thread: in its work, its set-up, and the one
                    # its exit takes (charged to its start routine) under CPU timers.
                    if "main" not in stack and ("start_thread" in stack or "__clone3" in stack):
                        all_threads += w
                threads = health.get("threads", [])
                h_exp = sum(t.get("expected", 0) for t in threads)
                h_got = sum(t.get("weight", 0) for t in threads)
                ratio = all_threads / (whole * hz) if whole else 0
                if abs(ratio - 1) > 0.1:
                    failed += 1
                print("| %s | %d | %d x %g | %.0f / %.0f = %.1f %% | %.0f / %.0f = %.1f %% "
                      "| %.0f / %.0f = %.1f %% | %s |" % (
                    config, hz, args.threads, args.thread_ms, got, cpu * hz,
                    100 * got / (cpu * hz) if cpu else 0, all_threads, whole * hz, 100 * ratio,
                    h_got, h_exp, 100 * h_got / h_exp if h_exp else 0,
                    health.get("engine", "?")),
                    flush=True)
    return 1 if failed else 0


def cmd_syscalls(args):
    print("| configuration | Hz | work_user / work_kernel (truth 50/50) | samples | engine |")
    print("|---|---|---|---|---|")
    for config in args.configs.split(","):
        for hz in [int(h) for h in args.hz.split(",")]:
            for _ in range(args.runs):
                speedscope, health, _ = run(args, config, hz, ["syscalls", str(args.seconds)])
                user = kernel = 0.0
                for stack, w, _ in samples(speedscope):
                    if "work_user" in stack:
                        user += w
                    elif "work_kernel" in stack:
                        kernel += w
                total = user + kernel
                print("| %s | %d | %.0f / %.0f | %.0f | %s |" % (
                    config, hz, 100 * user / total if total else 0,
                    100 * kernel / total if total else 0, total, health.get("engine", "?")),
                    flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["loop", "threads", "syscalls"])
    parser.add_argument("--build", default="build")
    parser.add_argument("--program", help="inprof_alias_loop (default: BUILD/bench/...)")
    parser.add_argument("--lib", help="libinprof.so (default: BUILD/sdk/libinprof.so)")
    parser.add_argument("--configs", default="auto,auto:eager,timer,perf,auto-noperf")
    parser.add_argument("--hz", default="99,250,999")
    parser.add_argument("--rounds-us", default="500,1000,2000,3900,4000,4100,6000,8000")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--se", type=float, default=3.5)
    parser.add_argument("--threads", type=int, default=300)
    parser.add_argument("--thread-ms", type=float, default=10.0)
    args = parser.parse_args()
    if args.mode == "loop":
        return cmd_loop(args)
    if args.mode == "threads":
        return cmd_threads(args)
    return cmd_syscalls(args)


if __name__ == "__main__":
    sys.exit(main())
