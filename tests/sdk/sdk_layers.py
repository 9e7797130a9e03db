#!/usr/bin/env python3
"""The runtime's folders include only their own layer's headers and those of layers below.

   sdk_layers.py SDK_SRC_DIR LAYER...

Each LAYER is a folder of SDK_SRC_DIR, lowest first; folders of one layer are joined by '+'
(hooks+api: the two doors, which call each other). A file of a folder no layer names fails
too, so that a new folder gets its place in the order (sdk/CMakeLists.txt) before it is used.
"""
import os
import re
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src = sys.argv[1]
    rank = {}
    for i, layer in enumerate(sys.argv[2:]):
        for folder in layer.split('+'):
            rank[folder] = i
    include = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]+"', re.M)
    problems = []
    files = 0
    for root, _, names in os.walk(src):
        for name in sorted(names):
            if not name.endswith(('.h', '.cpp', '.c')):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            folder = rel.split(os.sep)[0]
            if folder not in rank:
                problems.append(f'{rel}: folder {folder}/ has no layer in the order')
                continue
            files += 1
            with open(path, encoding='utf-8') as f:
                text = f.read()
            for m in include.finditer(text):
                target = m.group(1)
                if target not in rank:
                    continue  # another component's header (inprof/...), not a runtime folder
                if rank[target] > rank[folder]:
                    line = text.count('\n', 0, m.start()) + 1
                    problems.append(f'{rel}:{line}: includes {m.group(0).split(chr(34))[1]}, '
                                    f'of layer {target}/ above {folder}/')
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} include(s) against the layer order ' + ' < '.join(sys.argv[2:]))
        return 1
    print(f'{files} files include only their own layer and those below: '
          + ' < '.join(sys.argv[2:]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
