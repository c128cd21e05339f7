#!/usr/bin/env python3
"""Every relative link of the project's Markdown pages resolves.

    check_links.py SOURCE_DIR

Reads README.md, every docs/**/*.md, example_project/README.md,
bench/README.md and templates/**/*.md under SOURCE_DIR. For each link
[text](target) and image ![alt](target) whose target is not a URL
(http:, https:, mailto:): the file or folder must exist, relative to the
page; a #fragment must be a heading of the target page (GitHub's anchor:
lower case, punctuation other than '-' and '_' dropped, spaces to '-',
a repeated heading gets -1, -2, ...) or an <a id/name> in it.
Exit status: 0 all resolve, 1 some do not (each printed as PAGE:LINE:
TARGET: why), 2 bad usage.
"""
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
ANCHOR_TAG = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)                   # inline HTML tags
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text, flags=re.UNICODE)  # keeps letters, digits, _, -, space
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path in cache:
        return cache[path]
    found, seen = set(), {}
    fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            m = HEADING.match(line)
            if m:
                s = slug(m.group(2))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else "%s-%d" % (s, n))
            for a in ANCHOR_TAG.findall(line):
                found.add(a)
    cache[path] = found
    return found


def pages(root):
    out = []
    for top in ("README.md", os.path.join("example_project", "README.md"), os.path.join("bench", "README.md")):
        if os.path.isfile(os.path.join(root, top)):
            out.append(top)
    for sub in ("docs", "templates"):
        for d, _, files in os.walk(os.path.join(root, sub)):
            for f in sorted(files):
                if f.endswith(".md"):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def check(root, page):
    problems = []
    path = os.path.join(root, page)
    fence = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            line = re.sub(r"`[^`]*`", "", line)  # code spans hold no links
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # a URL
                file_part, _, fragment = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                where = "%s:%d: %s" % (page, number, target)
                if not os.path.exists(dest):
                    problems.append("%s: no such file or folder" % where)
                    continue
                if fragment and dest.endswith(".md") and fragment not in anchors(dest):
                    problems.append("%s: no heading with the anchor '#%s' in %s" % (where, fragment,
                                                                                   os.path.relpath(dest, root)))
    return problems


def main(argv):
    if len(argv) != 2:
        print("usage: check_links.py SOURCE_DIR", file=sys.stderr)
        return 2
    root = argv[1]
    problems, checked = [], pages(root)
    for page in checked:
        problems += check(root, page)
    for p in problems:
        print(p)
    print("%d page(s) checked, %d broken link(s)" % (len(checked), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
