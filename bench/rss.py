#!/usr/bin/env python3
"""Runs a command and samples its /proc/PID/status every millisecond (bench/inspect.sh): prints
`exit=N wall_s=S hwm_kib=K anon_kib=A file_kib=F` with the peak total RSS (VmHWM, the kernel's own
peak) and the peaks of its anonymous and file-backed parts (RssAnon, RssFile; sampled, so a spike
shorter than a millisecond may be missed). The command's output goes to /dev/null.

    rss.py CMD [ARGS...]
"""
import subprocess
import sys
import time


def status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "RssAnon", "RssFile", "RssShmem"):
                    out[key] = int(value.split()[0])
    except (FileNotFoundError, ProcessLookupError, ValueError):
        pass
    return out


def main():
    t0 = time.monotonic()
    p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = {"VmHWM": 0, "RssAnon": 0, "RssFile": 0}
    while p.poll() is None:
        s = status(p.pid)
        # a zombie's status has no Rss lines: keep what was seen while it ran
        for k in peak:
            peak[k] = max(peak[k], s.get(k, 0))
        time.sleep(0.001)
    wall = time.monotonic() - t0
    print(f"exit={p.returncode} wall_s={wall:.4f} hwm_kib={peak['VmHWM']} anon_kib={peak['RssAnon']} "
          f"file_kib={peak['RssFile']}")


if __name__ == "__main__":
    main()
