#!/usr/bin/env python3
"""Writes a large folded-stacks file for the flame graph benchmark, the same bytes every run.

  bench/flame_stacks.py [STACKS] [SEED] > big.folded

Stacks look like a real service's: a few entry points, a shared vocabulary of C++-style
names (templates, namespaces, operators that need escaping), depths of 8 to 48, recursion,
and heavy-tailed counts. Every line is a distinct stack, written in an unsorted order.
A private generator (not `random`) keeps the output identical across Python versions.
"""
import sys


class Lcg:
    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self, bound):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        return (self.state >> 33) % bound


def vocabulary(rng, size):
    spaces = ["app", "net", "db", "std", "json", "http", "core", "util", "io", "sched"]
    verbs = ["parse", "read", "write", "encode", "decode", "lookup", "insert", "flush",
             "poll", "handle", "dispatch", "compress", "hash", "compare", "visit"]
    nouns = ["Request", "Buffer", "Row", "Node", "Token", "Page", "Frame", "Key", "Value"]
    names = []
    for i in range(size):
        ns = spaces[rng.next(len(spaces))]
        verb = verbs[rng.next(len(verbs))]
        noun = nouns[rng.next(len(nouns))]
        kind = rng.next(6)
        if kind == 0:
            names.append(f"{ns}::{noun}<std::vector<{noun}>>::{verb}{i}(int, char const*)")
        elif kind == 1:
            names.append(f"{ns}::operator<<(std::ostream&, {noun} const&)#{i}")
        else:
            names.append(f"{ns}::{noun}::{verb}_{i}")
    return names


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 60000
    rng = Lcg(int(sys.argv[2]) if len(sys.argv) > 2 else 42)
    names = vocabulary(rng, 3000)
    roots = ["_start;__libc_start_main;main", "clone3;start_thread;worker_main",
             "clone3;start_thread;io_loop"]
    seen = set()
    out = sys.stdout
    while len(seen) < count:
        stack = [roots[rng.next(len(roots))]]
        depth = 8 + rng.next(41)
        # Callers share prefixes the way real code paths do: the first levels come from a
        # small set, deeper levels from the whole vocabulary.
        for level in range(depth):
            pool = min(len(names), 8 * (level + 1) ** 2)
            stack.append(names[rng.next(pool)])
        line = ";".join(stack)
        if line in seen:
            continue
        seen.add(line)
        weight = 1 + rng.next(10) * rng.next(10) * rng.next(50)
        out.write(f"{line} {weight}\n")


if __name__ == "__main__":
    main()
