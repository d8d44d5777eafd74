#!/usr/bin/env python3
"""The desktop's release benchmarks (`scripts/bench --desktop`), each against its floor: a bare
Tauri window built the same way and showing an empty page (src-tauri/examples/bare_window).

- Cold start to the first painted chat view: each binary is launched --runs times with a fresh
  HOME (and, for Osprey, a fresh data folder), started with OSPREY_PAINT_PROBE=1 so the page
  prints `painted` on stdout two animation frames after its first view is in the page (Osprey's
  built page carries the chat view's markup, ui/src/prerender.ts); the figure is the median time
  from spawn to that line. "Cold" is a new process on a new profile; the page cache is warm (one
  untimed launch of each binary comes first), as it is for a person's second start.
- Cold start to the working chat view: Osprey prints `interactive` two frames after its script
  has run and taken that view over; against the floor's paint (its empty page has nothing to run).
- Idle memory: once painted, the PSS (not RSS: shared pages are split between their users) of
  the app and every process under it (WebKitWebProcess, WebKitNetworkProcess, ...) from
  /proc/<pid>/smaps_rollup, summed when it stops changing (with a deadline); the median of the
  runs.
- Idle activity, in the first IDLE_ROUNDS rounds: IDLE_DELAY seconds after the PSS has settled
  (the page's first full garbage collection, 15-25 s after start, is over by then), the context
  switches (each a thread going to sleep or being put off the CPU, so about one per wake-up)
  and the CPU time of every thread of the app and the processes under it over the next
  IDLE_WINDOW seconds, per minute. A window idle in the tray should not wake; it costs battery
  when it does. The PSS is read again at the end of that window: the memory of a window left
  idle, next to the figure taken as start-up ends.
- Sizes of the release binary (next to the floor's) and of the `.deb` that scripts/package
  builds, when there is one.

Runs under a private Xvfb and D-Bus session when DISPLAY is unset. Every process a launch starts
is killed before the next launch; this script is their subreaper, so none can outlive it unseen.
"""

import argparse
import ctypes
import glob
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# src-tauri/src/paint_probe.rs PAINTED and INTERACTIVE: the first view painted, then working.
PAINTED = "painted"
INTERACTIVE = "interactive"
PR_SET_CHILD_SUBREAPER = 36
# Set in the private X session this script starts, where it also starts a window manager.
SESSION_ENV = "OSPREY_BENCH_SESSION"


# --- Processes --------------------------------------------------------------------------------


def stat_fields(stat):
    """The fields of a /proc/<pid>[/task/<tid>]/stat line after the command name, from field 3
    of proc(5) on. The name may hold spaces and parentheses, so they are read after its last
    ')'."""
    return stat.rsplit(")", 1)[1].split()


def parent_from_stat(stat):
    """The parent pid in a /proc/<pid>/stat line."""
    return int(stat_fields(stat)[1])


def state_from_stat(stat):
    return stat_fields(stat)[0]


def read_stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read()
    except OSError:
        return None


def alive(pid):
    """Running, or stopped; a zombie (exited, not yet reaped) is not alive."""
    stat = read_stat(pid)
    return stat is not None and state_from_stat(stat) not in ("Z", "X")


def process_tree(root):
    """`root` and every process under it, parents before children."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = read_stat(entry)
        if stat is None:
            continue
        children.setdefault(parent_from_stat(stat), []).append(int(entry))
    tree, index = [root], 0
    while index < len(tree):
        tree.extend(sorted(children.get(tree[index], [])))
        index += 1
    return tree


def pss_kb(pid):
    """The process's proportional set size in kB, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def tree_pss_kb(root):
    """PSS summed over `root` and its descendants (processes that ended meanwhile count 0)."""
    return sum(pss_kb(pid) or 0 for pid in process_tree(root))


def cpu_ticks_from_stat(stat):
    """utime + stime (clock ticks) of a /proc/<pid>[/task/<tid>]/stat line."""
    fields = stat_fields(stat)
    # Fields 14 and 15 of proc(5).
    return int(fields[11]) + int(fields[12])


def switches_from_status(status):
    """Voluntary and involuntary context switches of a /proc/.../status text."""
    return sum(int(line.split()[1]) for line in status.splitlines()
               if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")))


def thread_activity(root):
    """{(pid, tid): (CPU ticks, context switches)} of every thread of `root` and the processes
    under it; threads that end while being read are left out."""
    activity = {}
    for pid in process_tree(root):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    stat = f.read()
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    status = f.read()
            except OSError:
                continue
            activity[(pid, int(tid))] = (cpu_ticks_from_stat(stat), switches_from_status(status))
    return activity


def activity_between(before, after):
    """(CPU ticks, context switches) from one `thread_activity` sample to a later one: a thread
    in both counts its growth, one started in between counts whole, one that ended in between
    cannot be read and counts nothing."""
    ticks = switches = 0
    for key, (t, s) in after.items():
        t0, s0 = before.get(key, (0, 0))
        ticks += t - t0
        switches += s - s0
    return ticks, switches


def process_name(pid):
    """The program's file name (comm cuts it at 15 characters)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            program = f.read().split(b"\0", 1)[0].decode(errors="replace")
        if program:
            return os.path.basename(program)
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def settle(sample, interval=0.25, window=4, tolerance=0.01, deadline=20.0, clock=time.monotonic,
           sleep=time.sleep):
    """Samples until the last `window` values lie within `tolerance` (relative) of each other, or
    until `deadline` seconds have passed. Returns (last value, whether it settled)."""
    start = clock()
    values = []
    while True:
        values.append(sample())
        recent = values[-window:]
        if len(recent) == window and max(recent) - min(recent) <= tolerance * max(recent):
            return values[-1], True
        if clock() - start >= deadline:
            return values[-1], False
        sleep(interval)


def stop(process, grace=5.0):
    """Ends `process` and everything under it: SIGTERM to all, SIGKILL to whatever is still
    running after `grace` seconds. Raises if any process survives."""
    pids = process_tree(process.pid)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        # Children started since the first look are caught by a second look.
        pids = list(dict.fromkeys(pids + process_tree(process.pid)))
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + wait
        while time.monotonic() < end:
            process.poll()
            reap_zombies()
            if not any(alive(pid) for pid in pids):
                process.wait()
                return
            time.sleep(0.02)
    left = [f"{pid} ({process_name(pid)})" for pid in pids if alive(pid)]
    raise RuntimeError(f"processes survived SIGKILL: {', '.join(left)}")


# Processes of this script's own that are not a launch's (the window manager).
KEEP = set()


def reap_zombies():
    """Reaps the exited processes that were reparented to this process (the subreaper)."""
    for pid in process_tree(os.getpid())[1:]:
        stat = read_stat(pid)
        if pid not in KEEP and stat and state_from_stat(stat) == "Z" \
                and parent_from_stat(stat) == os.getpid():
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def kill_orphans():
    """Kills what a finished launch left running under this process (a daemon that detached
    from the app, say) and returns its names; there should be none."""
    left = [pid for pid in process_tree(os.getpid())[1:] if pid not in KEEP and alive(pid)]
    names = [process_name(pid) for pid in left]
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    end = time.monotonic() + 5
    while any(alive(pid) for pid in left) and time.monotonic() < end:
        reap_zombies()
        time.sleep(0.02)
    reap_zombies()
    return names


def become_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


# --- One launch -------------------------------------------------------------------------------


class Launch:
    """One binary started on a fresh profile, its stdout watched for the paint probe's lines."""

    def __init__(self, argv, env, log_path):
        self.seen = {stage: threading.Event() for stage in (PAINTED, INTERACTIVE)}
        self.seen_at = {}
        self.log = open(log_path, "wb")
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=self.log,
                                        start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            stage = line.strip().decode(errors="replace")
            if stage in self.seen and not self.seen[stage].is_set():
                self.seen_at[stage] = time.monotonic()
                self.seen[stage].set()
            self.log.write(line)
            self.log.flush()

    def wait_for(self, stage, timeout):
        """Seconds from spawn to the `stage` line; raises with the log's path when it does not
        come."""
        end = time.monotonic() + timeout
        while not self.seen[stage].wait(0.05):
            if self.process.poll() is not None:
                raise RuntimeError(f"exited with {self.process.returncode} before printing "
                                   f"`{stage}`; see {self.log.name}")
            if time.monotonic() >= end:
                raise RuntimeError(f"no `{stage}` line within {timeout:.0f} s (was the binary "
                                   f"built from this tree?); see {self.log.name}")
        return self.seen_at[stage] - self.started_at

    def close(self):
        try:
            stop(self.process)
        finally:
            self.reader.join(timeout=5)
            self.process.stdout.close()
            self.log.close()


def fresh_env(home):
    env = dict(os.environ)
    # A launch from the desktop's menu has no backtrace variables; with them set, every error
    # value Osprey makes at start (no provider set up yet) walks its stack.
    for name in ("WAYLAND_DISPLAY", "OSPREY_DATA_DIR", "RUST_BACKTRACE", "RUST_LIB_BACKTRACE"):
        env.pop(name, None)
    env.update({
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
        "GDK_BACKEND": "x11",
        # No keyring prompt under Xvfb: keys stay in the data folder's file.
        "OSPREY_SECRETS": "file",
        "OSPREY_PAINT_PROBE": "1",
    })
    return env


# Idle activity: measured over IDLE_WINDOW seconds, IDLE_DELAY seconds after the PSS has
# settled, in the first IDLE_ROUNDS rounds.
IDLE_DELAY = 30.0
IDLE_WINDOW = 20.0
IDLE_ROUNDS = 3


def measure(name, binary, is_osprey, scratch, timeout, settle_deadline, idle_window=IDLE_WINDOW):
    """One launch: (seconds to paint, seconds to working (None for the floor, which has no
    script), settled PSS in kB, idle activity as (CPU ms a minute, context switches a minute,
    PSS in kB at its end) or None when `idle_window` is 0, names of the processes). Osprey takes a data folder and reports a
    working view; the floor does neither."""
    run = tempfile.mkdtemp(prefix=f"{name}-", dir=scratch)
    home = os.path.join(run, "home")
    os.makedirs(home)
    argv = [binary]
    if is_osprey:
        argv += ["--data-dir", os.path.join(run, "data")]
    launch = Launch(argv, fresh_env(home), os.path.join(run, "log"))
    try:
        painted = launch.wait_for(PAINTED, timeout)
        working = launch.wait_for(INTERACTIVE, timeout) if is_osprey else None
        pss, settled = settle(lambda: tree_pss_kb(launch.process.pid), deadline=settle_deadline)
        if not settled:
            print(f"bench: {name}: PSS still moving after {settle_deadline:.0f} s; took the last "
                  "sample", file=sys.stderr)
        idle = None
        if idle_window > 0:
            time.sleep(IDLE_DELAY)
            before = thread_activity(launch.process.pid)
            time.sleep(idle_window)
            ticks, switches = activity_between(before, thread_activity(launch.process.pid))
            per_minute = 60.0 / idle_window
            idle = (ticks * 1000.0 / os.sysconf("SC_CLK_TCK") * per_minute,
                    switches * per_minute, tree_pss_kb(launch.process.pid))
        names = sorted({process_name(pid) for pid in process_tree(launch.process.pid)})
    finally:
        launch.close()
        orphans = kill_orphans()
        if orphans:
            print(f"bench: {name}: killed processes left after the app ended: "
                  f"{', '.join(orphans)}", file=sys.stderr)
    return painted, working, pss, idle, names


# --- Figures ----------------------------------------------------------------------------------


def fmt_seconds(s):
    return "-" if s is None else (f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.0f} ms")


def fmt_count(value, unit=""):
    return "-" if value is None else f"{value:.0f}{unit}"


def fmt_mib(kb):
    return "-" if kb is None else f"{kb / 1024:.1f} MiB"


def table(rows):
    """rows: (figure, value, baseline name, baseline value, ratio, goal), as scripts/bench."""
    header = ("figure", "median", "baseline", "baseline median", "ratio", "goal")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    def line(r):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    return "\n".join(out + [line(r) for r in rows])


def ratio(value, base):
    return f"{value / base:.2f}x" if value is not None and base else "-"


def newest_deb(target):
    debs = glob.glob(os.path.join(target, "release", "bundle", "deb", "*.deb"))
    return max(debs, key=os.path.getmtime) if debs else None


def build():
    run = lambda *argv: subprocess.run(argv, cwd=ROOT, check=True, stdout=sys.stderr)
    if not os.path.isdir(os.path.join(ROOT, "ui", "node_modules")):
        run("npm", "--prefix", "ui", "ci", "--no-audit", "--no-fund")
    run("npm", "--prefix", "ui", "run", "build")
    # tauri/custom-protocol is what `tauri build` (scripts/package) adds: the shipped binary,
    # linked with its start-up code together as scripts/package links it (symbol_order.py).
    features = ["--features", "tauri/custom-protocol"]
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    order = os.path.join(target, "release", "osprey-desktop.symbol-order")
    run(sys.executable, os.path.join(ROOT, "scripts", "symbol_order.py"), order, *features)
    subprocess.run(["cargo", "build", "--release", "-p", "osprey-desktop", *features, "--bin",
                    "osprey-desktop", "--example", "bare_window"], cwd=ROOT, check=True,
                   stdout=sys.stderr, env={**os.environ, "OSPREY_SYMBOL_ORDER": order})


def in_session(argv):
    """The command that re-runs this script under a private X display and D-Bus session, when it
    has neither, or a private D-Bus session on its display; None when it has both."""
    if not os.environ.get("DISPLAY"):
        os.environ[SESSION_ENV] = "1"
        return ["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24", "dbus-run-session", "--", *argv]
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return ["dbus-run-session", "--", *argv]
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-build", action="store_true",
                        help="measure the binaries already in the target dir")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds a launch may take to paint")
    parser.add_argument("--settle", type=float, default=20.0,
                        help="seconds to wait for the PSS to stop changing")
    args = parser.parse_args()

    session = in_session([sys.executable, os.path.abspath(__file__), *sys.argv[1:]])
    if session:
        os.execvp(session[0], session)

    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    if not args.no_build:
        build()
    osprey = os.path.join(target, "release", "osprey-desktop")
    floor = os.path.join(target, "release", "examples", "bare_window")
    for path in (osprey, floor):
        if not os.path.exists(path):
            sys.exit(f"bench: {path} is missing; run without --no-build")

    become_subreaper()
    window_manager = None
    if os.environ.get(SESSION_ENV) and shutil.which("openbox"):
        # A desktop has one; without it the window maps without decorations or placement.
        window_manager = subprocess.Popen(["openbox"], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
        KEEP.add(window_manager.pid)
    scratch = tempfile.mkdtemp(prefix="osprey-bench-desktop-")
    load_before = os.getloadavg()[0]
    subjects = [("osprey", osprey, True), ("floor", floor, False)]
    results = {name: {"paint": [], "working": [], "pss": [], "cpu": [], "wakeups": [],
                      "idle_pss": []}
               for name, _, _ in subjects}
    try:
        for name, binary, is_osprey in subjects:
            # Untimed: brings the binary and WebKit's libraries into the page cache.
            measure(name, binary, is_osprey, scratch, args.timeout, 2.0, idle_window=0)
        for round_ in range(args.runs):
            # Alternating the order spreads the machine's other load over both sides.
            order = subjects if round_ % 2 == 0 else subjects[::-1]
            for name, binary, is_osprey in order:
                painted, working, pss, idle, names = measure(
                    name, binary, is_osprey, scratch, args.timeout, args.settle,
                    idle_window=IDLE_WINDOW if round_ < IDLE_ROUNDS else 0)
                results[name]["paint"].append(painted)
                if working is not None:
                    results[name]["working"].append(working)
                results[name]["pss"].append(pss)
                if idle is not None:
                    results[name]["cpu"].append(idle[0])
                    results[name]["wakeups"].append(idle[1])
                    results[name]["idle_pss"].append(idle[2])
                print(f"bench: {name} run {round_ + 1}: painted {fmt_seconds(painted)}"
                      + (f", working {fmt_seconds(working)}" if working is not None else "")
                      + f", PSS {fmt_mib(pss)} over {', '.join(names)}"
                      + (f"; idle {idle[1]:.0f} switches and {idle[0]:.0f} ms of CPU a minute,"
                         f" then PSS {fmt_mib(idle[2])}" if idle is not None else ""),
                      file=sys.stderr)
    except BaseException:
        print(f"bench: the launches' homes and logs are kept in {scratch}", file=sys.stderr)
        raise
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        if window_manager:
            window_manager.terminate()
            window_manager.wait()
        reap_zombies()

    median = {name: {key: statistics.median(values) for key, values in figures.items() if values}
              for name, figures in results.items()}
    deb = newest_deb(target)
    osprey_size, floor_size = os.path.getsize(osprey) // 1024, os.path.getsize(floor) // 1024
    deb_size = os.path.getsize(deb) // 1024 if deb else None
    o, f = median["osprey"], median["floor"]
    floor_name = "a bare Tauri window showing an empty page, same build"
    idle_runs = min(args.runs, IDLE_ROUNDS)
    print(table([
        (f"desktop: cold start to the first painted chat view (median of {args.runs}, Xvfb)",
         fmt_seconds(o["paint"]), floor_name, fmt_seconds(f["paint"]),
         ratio(o["paint"], f["paint"]), "<= 1.0x"),
        (f"desktop: cold start to the working chat view, its script run (median of {args.runs})",
         fmt_seconds(o["working"]), floor_name + " (its paint)", fmt_seconds(f["paint"]),
         ratio(o["working"], f["paint"]), "-"),
        ("desktop: idle memory after start, PSS of the app and its WebKit processes",
         fmt_mib(o["pss"]), floor_name, fmt_mib(f["pss"]), ratio(o["pss"], f["pss"]),
         "<= 1.1x"),
        (f"desktop: memory of the idle window, PSS {IDLE_DELAY + IDLE_WINDOW:.0f} s after "
         f"start-up's (median of {idle_runs})", fmt_mib(o.get("idle_pss")), floor_name,
         fmt_mib(f.get("idle_pss")), ratio(o.get("idle_pss"), f.get("idle_pss")), "-"),
        (f"desktop: idle, context switches a minute (about one per wake-up), all its processes "
         f"(median of {idle_runs})", fmt_count(o.get("wakeups")), floor_name,
         fmt_count(f.get("wakeups")), ratio(o.get("wakeups"), f.get("wakeups")), "-"),
        (f"desktop: idle, CPU time a minute, all its processes (median of {idle_runs})",
         fmt_count(o.get("cpu"), " ms"), floor_name, fmt_count(f.get("cpu"), " ms"),
         ratio(o.get("cpu"), f.get("cpu")), "-"),
        ("desktop: release binary size", fmt_mib(osprey_size), "the bare window's binary",
         fmt_mib(floor_size), ratio(osprey_size, floor_size), "-"),
        ("desktop: the .deb (scripts/package)", fmt_mib(deb_size), "-", "-", "-", "-"),
    ]))
    if deb is None:
        print("No .deb in the target dir: scripts/package builds it.")
    # Start-up times move with the machine's other load; say what it was.
    print(f"Load average before and after the launches: {load_before:.1f}, {os.getloadavg()[0]:.1f} "
          f"({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
