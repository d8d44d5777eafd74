#!/usr/bin/env python3
"""Writes the symbol order the release desktop binary is linked with (src-tauri/build.rs,
OSPREY_SYMBOL_ORDER): the functions of the binary that run from its launch until it has painted
its first chat view and gone idle, so lld lays them out together. Without it, start-up touches
code all over a 50 MB `.text` and keeps about 24 MiB of it resident; with it, about the 4 MB
that ran (scripts/bench --desktop measures the difference).

Steps: build the binary as the release build does, but with its symbol table (`cargo rustc ...
-C strip=none`: same features, so the same symbol names); run it once under valgrind's
callgrind on a fresh profile (OSPREY_PAINT_PROBE tells when it painted); take every function of
the binary the trace saw (lld packs them together). Needs valgrind and an X display (a private
Xvfb and D-Bus session is started when there is none).

Usage: scripts/symbol_order.py OUTPUT [cargo feature args...]
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_desktop as bench  # noqa: E402

# How long the traced launch may take to paint (callgrind runs it about fifty times slower).
PAINT_TIMEOUT = 600.0
# After painting, the app settles (services start, the page finishes): the trace goes on until
# the process is idle, at most this long.
IDLE_DEADLINE = 120.0
# Mangled, uncompressed names, as lld's --symbol-ordering-file wants them and `functions_of` reads.
CALLGRIND = ["valgrind", "--tool=callgrind", "--demangle=no", "--compress-strings=no",
             "--compress-pos=no"]


def functions_of(binary, dumps):
    """The functions of `binary` in callgrind dumps (uncompressed names), each once, in the
    order the dumps list them (callgrind's own, not the order they ran)."""
    seen, order = set(), []
    for path in dumps:
        current = None
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("ob="):
                    current = line[3:].strip()
                elif line.startswith("fn=") and current == binary:
                    name = line[3:].strip()
                    if name not in seen:
                        seen.add(name)
                        order.append(name)
    return order


def cpu_seconds(pid):
    stat = bench.read_stat(pid)
    if stat is None:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_idle(pid, deadline, interval=2.0, busy=0.2):
    """Until the process used less than `busy` CPU seconds in `interval`, or the deadline."""
    end = time.monotonic() + deadline
    last = cpu_seconds(pid)
    while time.monotonic() < end:
        time.sleep(interval)
        now = cpu_seconds(pid)
        if now is None or last is None or now - last < busy:
            return
        last = now


def trace(binary, scratch):
    """Runs `binary` once under callgrind; the dump files it wrote."""
    home = os.path.join(scratch, "home")
    os.makedirs(home)
    out = os.path.join(scratch, "callgrind.out")
    argv = [*CALLGRIND, f"--callgrind-out-file={out}", binary,
            "--data-dir", os.path.join(scratch, "data")]
    launch = bench.Launch(argv, bench.fresh_env(home), os.path.join(scratch, "log"))
    try:
        launch.wait_for(bench.INTERACTIVE, PAINT_TIMEOUT)
        wait_idle(launch.process.pid, IDLE_DEADLINE)
        subprocess.run(["callgrind_control", "--dump", str(launch.process.pid)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    finally:
        launch.close()
        bench.kill_orphans()
    dumps = sorted(p for p in (os.path.join(scratch, n) for n in os.listdir(scratch))
                   if os.path.basename(p).startswith("callgrind.out"))
    if not dumps:
        raise RuntimeError(f"callgrind wrote no dump; see {os.path.join(scratch, 'log')}")
    return dumps


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.split("\n\n")[-1])
    output, features = os.path.abspath(sys.argv[1]), sys.argv[2:]
    if not shutil.which("valgrind"):
        sys.exit("symbol order: valgrind is missing (apt-get install valgrind)")
    session = bench.in_session([sys.executable, os.path.abspath(__file__), *sys.argv[1:]])
    if session:
        os.execvp(session[0], session)

    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(bench.ROOT, "target")
    env = dict(os.environ)
    env.pop("OSPREY_SYMBOL_ORDER", None)
    subprocess.run(["cargo", "rustc", "--release", "-p", "osprey-desktop", *features,
                    "--bin", "osprey-desktop", "--", "-C", "strip=none"],
                   cwd=bench.ROOT, env=env, check=True, stdout=sys.stderr)
    scratch = tempfile.mkdtemp(prefix="osprey-symbol-order-")
    traced = os.path.join(scratch, "osprey-desktop")
    shutil.copy2(os.path.join(target, "release", "osprey-desktop"), traced)
    bench.become_subreaper()
    started = time.monotonic()
    order = functions_of(traced, trace(traced, scratch))
    if not order:
        sys.exit(f"symbol order: the trace saw no function of {traced}")
    with open(output, "w") as f:
        f.write("".join(name + "\n" for name in order))
    print(f"symbol order: {len(order)} functions in {output} (traced in "
          f"{time.monotonic() - started:.0f} s)", file=sys.stderr)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
