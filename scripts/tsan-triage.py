#!/usr/bin/env python3
"""Sorts ThreadSanitizer reports (files written with TSAN_OPTIONS=log_path=DIR/report).

Swift's Synchronization.Mutex locks with futexes inside the standard library, which TSan does
not instrument, so TSan reports every access made inside `mutex.withLock { ... }` from two
threads as a race. A report is counted as "inside Mutex.withLock" when both of its accesses
are, within their first four frames, on a source line that calls withLock; every other report
is printed in full and makes the exit status 1.

    python3 scripts/tsan-triage.py /tmp/tsan
"""
import collections
import glob
import os
import re
import sys


def source_line(path, line):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().split("\n")[int(line) - 1]
    except (OSError, IndexError, ValueError):
        return ""


def main(directory):
    reports = sorted(glob.glob(os.path.join(directory, "report.*")))
    locked = collections.Counter()
    other = []
    total = 0
    for report in reports:
        text = open(report, encoding="utf-8", errors="replace").read()
        for block in text.split("WARNING: ThreadSanitizer")[1:]:
            block = block.split("SUMMARY:")[0]
            total += 1
            accesses = [s for s in re.split(r"\n\n", block) if re.search(r" by (main )?thread", s)][:2]
            places = []
            for stack in accesses:
                for _, _, path, line in re.findall(r"#(\d+) (\S+) (/\S+?):(\d+)", stack)[:4]:
                    if "withLock" in source_line(path, line):
                        places.append(f"{os.path.basename(path)}:{line}")
                        break
            if len(accesses) == 2 and len(places) == 2:
                locked[" / ".join(sorted(set(places)))] += 1
            else:
                other.append((report, block))
    print(f"{total} reports in {len(reports)} files; {total - len(other)} inside Mutex.withLock, {len(other)} elsewhere")
    for places, count in locked.most_common():
        print(f"  {count:4} inside withLock at {places}")
    for report, block in other:
        print(f"\n== {report}\nWARNING: ThreadSanitizer{block}")
    return 1 if other else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tsan"))
