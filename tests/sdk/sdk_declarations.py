#!/usr/bin/env python3
"""Where each function declared in a runtime header is defined, when that is not the .cpp of
the same name: a review aid for "every declaration in the header beside the file that defines
it" (docs/architecture.md). Needs Universal Ctags; not run by ctest.

   sdk_declarations.py [SDK_SRC_DIR]    (default: sdk/src)

Prints one line per header and defining file; a definition in another folder than its header
is marked FOLDER, and is what the layer order (sdk_layers.py) cannot allow a part to link.
"""
import collections
import os
import subprocess
import sys


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else 'sdk/src'
    tags = subprocess.run(
        ['ctags', '-R', '--languages=C++', '--kinds-C++=+p', '--fields=+KnS', '--extras=-q',
         '-f', '-', '.'], cwd=src, check=True, capture_output=True, text=True).stdout
    declared = collections.defaultdict(set)
    defined = collections.defaultdict(set)
    for line in tags.splitlines():
        if line.startswith('!'):
            continue
        parts = line.split('\t')
        name, path = parts[0], parts[1]
        kind = parts[3] if len(parts) > 3 else ''
        extra = parts[4:]
        if any(p.startswith(('class:', 'struct:')) for p in extra):
            continue  # members: declared in their class
        if kind == 'prototype' and path.endswith('.h'):
            declared[name].add(path)
        elif (kind == 'function' and path.endswith('.cpp')
              and not any('__anon' in p for p in extra)):
            defined[name].add(path)
    report = collections.defaultdict(list)
    for name, headers in declared.items():
        for header in headers:
            stem = os.path.splitext(header)[0]
            where = defined.get(name, set())
            if where and all(os.path.splitext(d)[0] != stem for d in where):
                report[(header, tuple(sorted(where)))].append(name)
    for (header, where), names in sorted(report.items()):
        folder = any(os.path.dirname(d) != os.path.dirname(header) for d in where)
        print(('FOLDER ' if folder else '') + f"{header} <- {', '.join(where)}: "
              + ' '.join(sorted(names)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
