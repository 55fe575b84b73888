#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The README's code snippets are taken from examples/ (which CI compiles and runs): every
block announced by `<!-- snippet: examples/FILE.cpp#TAG -->` must equal the lines between
`// [TAG]` and `// [end]` in that file (dedented).

  readme_snippets.py check     fail, naming the snippet, when one differs (a ctest)
  readme_snippets.py update    rewrite the README's blocks from the examples
"""
import re, sys, textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r"<!-- snippet: (examples/[\w.]+)#(\w+) -->\n```cpp\n(.*?)```\n", re.S)


def region(path, tag):
    lines = (ROOT / path).read_text().splitlines(keepends=True)
    start = [i for i, l in enumerate(lines) if l.strip() == f"// [{tag}]"]
    if len(start) != 1:
        sys.exit(f"readme_snippets: {path} has {len(start)} '// [{tag}]' markers, expected 1")
    end = next((i for i in range(start[0] + 1, len(lines)) if lines[i].strip() == "// [end]"), None)
    if end is None:
        sys.exit(f"readme_snippets: {path}: '// [{tag}]' has no '// [end]'")
    return textwrap.dedent("".join(lines[start[0] + 1:end]))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "check"
    readme = ROOT / "README.md"
    text = readme.read_text()
    found = list(MARK.finditer(text))
    if not found:
        sys.exit("readme_snippets: the README announces no snippet")
    bad = [f"{m[1]}#{m[2]}" for m in found if m[3] != region(m[1], m[2])]
    if mode == "update":
        readme.write_text(MARK.sub(lambda m: f"<!-- snippet: {m[1]}#{m[2]} -->\n```cpp\n"
                                   f"{region(m[1], m[2])}```\n", text))
        return
    if bad:
        sys.exit("readme_snippets: README snippets differ from the examples (run "
                 "tests/scripts/readme_snippets.py update): " + ", ".join(bad))
    print(f"readme_snippets: {len(found)} snippets match their examples")


main()
