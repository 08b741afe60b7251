"""Replaces the section of BENCHMARKS.md between <!-- begin NAME bench and <!-- end NAME bench -->
(or appends it): python3 bench/section.py BENCHMARKS.md NAME SECTION. Used by the bench scripts."""
import re
import sys

path, name, section = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path).read()
pattern = re.compile(r"<!-- begin %s bench.*?<!-- end %s bench -->" % (re.escape(name), re.escape(name)), re.S)
text = pattern.sub(lambda m: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
