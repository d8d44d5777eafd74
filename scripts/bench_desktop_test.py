#!/usr/bin/env python3
"""Tests of the desktop benchmark's process handling on real processes, and of the release
build's symbol order read from a real callgrind trace: `python3 scripts/bench_desktop_test.py`."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_desktop as bench  # noqa: E402
import symbol_order  # noqa: E402


def wait_for(condition, timeout=10.0):
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= end:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


class ProcessTree(unittest.TestCase):
    def setUp(self):
        # A shell with two children, one of which has a child of its own.
        self.shell = subprocess.Popen(
            ["sh", "-c", "sleep 60 & sh -c 'sleep 60 & wait' & wait"], start_new_session=True)
        self.addCleanup(self.end_shell)
        # Four processes, each past its exec (a loaded machine is slow to exec).
        wait_for(lambda: sorted(bench.process_name(p) for p in bench.process_tree(self.shell.pid))
                 == ["sh", "sh", "sleep", "sleep"])

    def end_shell(self):
        if self.shell.poll() is None:
            bench.stop(self.shell)

    def test_the_tree_holds_children_and_grandchildren_and_nothing_else(self):
        tree = bench.process_tree(self.shell.pid)
        self.assertEqual(tree[0], self.shell.pid)
        names = sorted(bench.process_name(pid) for pid in tree)
        self.assertEqual(names, ["sh", "sh", "sleep", "sleep"])
        for pid in tree[1:]:
            self.assertIn(bench.parent_from_stat(bench.read_stat(pid)), tree)
        self.assertNotIn(os.getpid(), tree)

    def test_pss_is_summed_over_the_whole_tree(self):
        tree = bench.process_tree(self.shell.pid)
        each = [bench.pss_kb(pid) for pid in tree]
        self.assertTrue(all(kb and kb > 0 for kb in each), each)
        # The processes sleep, but their shared pages' PSS moves as other programs on the machine
        # map and unmap the same files (sh, libc): the two reads agree within a tenth. Missing one
        # of the four processes would be off by about a quarter.
        total = bench.tree_pss_kb(self.shell.pid)
        self.assertLess(abs(total - sum(each)), sum(each) / 10, (total, each))
        self.assertGreater(bench.tree_pss_kb(self.shell.pid), bench.pss_kb(self.shell.pid))

    def test_stop_ends_every_process_of_the_tree(self):
        tree = bench.process_tree(self.shell.pid)
        bench.stop(self.shell, grace=2.0)
        self.assertIsNotNone(self.shell.returncode)
        self.assertEqual([pid for pid in tree if bench.alive(pid)], [])

    def test_stop_kills_a_process_that_ignores_sigterm(self):
        stubborn = subprocess.Popen(
            ["sh", "-c", "trap '' TERM; sleep 60 & wait; wait"], start_new_session=True)
        wait_for(lambda: len(bench.process_tree(stubborn.pid)) == 2)
        started = time.monotonic()
        bench.stop(stubborn, grace=0.5)
        self.assertGreaterEqual(time.monotonic() - started, 0.5)
        self.assertFalse(bench.alive(stubborn.pid))

    def test_a_gone_process_has_no_pss(self):
        gone = subprocess.Popen(["true"])
        gone.wait()
        self.assertIsNone(bench.pss_kb(gone.pid))


class Orphans(unittest.TestCase):
    def test_a_detached_process_is_found_and_killed(self):
        # What a daemonizing helper does: its parent exits and leaves it running.
        bench.become_subreaper()
        subprocess.run(["sh", "-c", "sleep 60 >/dev/null 2>&1 &"], check=True)

        def orphans():
            tree = bench.process_tree(os.getpid())
            return [pid for pid in tree[1:] if bench.process_name(pid) == "sleep"]

        # The forked shell may not have become `sleep` yet (a loaded machine is slow to exec).
        wait_for(lambda: len(orphans()) == 1)
        orphans = orphans()
        self.assertEqual(bench.kill_orphans(), ["sleep"])
        self.assertFalse(bench.alive(orphans[0]))
        self.assertEqual(bench.kill_orphans(), [])


class Stages(unittest.TestCase):
    """A launch times each probe line from spawn, once, and says when one never comes."""

    def launch(self, script):
        scratch = tempfile.mkdtemp(prefix="stages-test-")
        self.addCleanup(shutil.rmtree, scratch, True)
        launch = bench.Launch(["sh", "-c", script], dict(os.environ),
                              os.path.join(scratch, "log"))
        self.addCleanup(launch.close)
        return launch

    def test_painted_then_working_each_timed_once(self):
        # `interactive` waits for a file the test makes after it has seen `painted`.
        scratch = tempfile.mkdtemp(prefix="stages-gate-")
        self.addCleanup(shutil.rmtree, scratch, True)
        gate = os.path.join(scratch, "gate")
        launch = self.launch(f"echo loading; echo painted; while [ ! -e {gate} ]; do sleep 0.01; "
                             "done; echo painted; echo interactive; exec sleep 60")
        painted = launch.wait_for(bench.PAINTED, 10)
        self.assertFalse(launch.seen[bench.INTERACTIVE].is_set())
        open(gate, "w").close()
        working = launch.wait_for(bench.INTERACTIVE, 10)
        self.assertGreater(working, painted)
        # The second `painted` line moved nothing.
        self.assertEqual(launch.wait_for(bench.PAINTED, 1), painted)

    def test_a_stage_that_never_comes_is_an_error_naming_it(self):
        launch = self.launch("echo painted; exec sleep 60")
        launch.wait_for(bench.PAINTED, 10)
        with self.assertRaisesRegex(RuntimeError, "no `interactive` line within 0 s"):
            launch.wait_for(bench.INTERACTIVE, 0.2)

    def test_an_exit_before_the_stage_is_an_error(self):
        launch = self.launch("echo painted; exit 3")
        with self.assertRaisesRegex(RuntimeError, "exited with 3 before printing `interactive`"):
            launch.wait_for(bench.INTERACTIVE, 10)


class Parsing(unittest.TestCase):
    def test_a_command_name_with_parentheses_and_spaces(self):
        stat = "4242 (Web (Content) ) S 17 4242 4242 0 -1 4194560 0"
        self.assertEqual(bench.parent_from_stat(stat), 17)
        self.assertEqual(bench.state_from_stat(stat), "S")

    def test_this_process_stat(self):
        self.assertEqual(bench.parent_from_stat(bench.read_stat(os.getpid())), os.getppid())

    def test_cpu_ticks_are_user_plus_system_time(self):
        # Fields 14 (utime) and 15 (stime) of proc(5), after a name with a ") " in it.
        stat = "4242 (Web (Content) ) S 17 4242 4242 0 -1 4194560 0 0 0 0 120 35 0 0 20 0 1"
        self.assertEqual(bench.cpu_ticks_from_stat(stat), 155)

    def test_switches_are_voluntary_plus_involuntary(self):
        status = "Name:\tsleep\nvoluntary_ctxt_switches:\t40\nnonvoluntary_ctxt_switches:\t2\n"
        self.assertEqual(bench.switches_from_status(status), 42)


class IdleActivity(unittest.TestCase):
    def test_growth_of_threads_in_both_samples_plus_new_threads_whole(self):
        before = {(1, 1): (10, 100), (1, 2): (5, 50), (2, 3): (0, 7)}
        # Thread 2 ended; thread 4 started.
        after = {(1, 1): (12, 130), (2, 3): (0, 7), (2, 4): (1, 9)}
        self.assertEqual(bench.activity_between(before, after), (3, 39))

    def test_a_thread_that_wakes_is_counted_and_a_sleeping_one_is_not(self):
        # A shell whose child wakes about 50 times a second, beside one that sleeps throughout.
        shell = subprocess.Popen(
            ["sh", "-c", "sleep 60 & python3 -c 'import time\nwhile True: time.sleep(0.02)' & wait"],
            start_new_session=True)
        self.addCleanup(lambda: bench.stop(shell))
        wait_for(lambda: sorted(bench.process_name(p) for p in bench.process_tree(shell.pid))
                 == ["python3", "sh", "sleep"])
        before = bench.thread_activity(shell.pid)
        time.sleep(1.0)
        after = bench.thread_activity(shell.pid)
        self.assertEqual(len(after), 3, after)
        _, switches = bench.activity_between(before, after)
        # 50 wake-ups in the second; a loaded machine delays some, none adds many.
        self.assertGreater(switches, 25)
        self.assertLess(switches, 150)
        quiet = {key: value for key, value in after.items()
                 if bench.process_name(key[0]) != "python3"}
        self.assertEqual(bench.activity_between(before, quiet)[1], 0)


class Environment(unittest.TestCase):
    def test_a_launch_gets_a_fresh_home_and_no_backtrace_or_wayland_variables(self):
        saved = dict(os.environ)
        os.environ.update({"RUST_BACKTRACE": "1", "RUST_LIB_BACKTRACE": "1",
                           "WAYLAND_DISPLAY": "wayland-0", "OSPREY_DATA_DIR": "/elsewhere"})
        try:
            env = bench.fresh_env("/tmp/bench-home")
        finally:
            os.environ.clear()
            os.environ.update(saved)
        for name in ("RUST_BACKTRACE", "RUST_LIB_BACKTRACE", "WAYLAND_DISPLAY", "OSPREY_DATA_DIR"):
            self.assertNotIn(name, env)
        self.assertEqual(env["HOME"], "/tmp/bench-home")
        self.assertEqual(env["XDG_CACHE_HOME"], "/tmp/bench-home/.cache")
        self.assertEqual(env["OSPREY_PAINT_PROBE"], "1")


class Settle(unittest.TestCase):
    def run_settle(self, values, **options):
        samples = iter(values)
        clock = [0.0]

        def sleep(seconds):
            clock[0] += seconds

        return bench.settle(lambda: next(samples), interval=1.0, clock=lambda: clock[0],
                            sleep=sleep, **options)

    def test_stops_once_the_window_is_within_the_tolerance(self):
        values = [100, 200, 300, 1000, 1005, 1003, 1008, 9999]
        self.assertEqual(self.run_settle(values, window=4, tolerance=0.01), (1008, True))

    def test_gives_the_last_sample_at_the_deadline(self):
        values = list(range(100, 10_000, 100))
        self.assertEqual(self.run_settle(values, deadline=5.0), (600, False))


class Table(unittest.TestCase):
    def test_rows_are_aligned_as_scripts_bench_prints_them(self):
        out = bench.table([("a", "1 ms", "b", "2 ms", bench.ratio(1, 2), "<= 1.0x")]).splitlines()
        self.assertEqual(out[0].split("|")[1].strip(), "figure")
        self.assertEqual(out[2], "| a      | 1 ms   | b        | 2 ms            | 0.50x | <= 1.0x |")
        self.assertEqual(len({len(line) for line in out}), 1)

    def test_a_ratio_of_nothing_is_zero_and_one_without_a_baseline_is_none(self):
        self.assertEqual(bench.ratio(0, 24), "0.00x")
        self.assertEqual(bench.ratio(36, 24), "1.50x")
        self.assertEqual(bench.ratio(None, 24), "-")
        self.assertEqual(bench.ratio(5, 0), "-")


class SymbolOrder(unittest.TestCase):
    def test_the_functions_that_ran_are_listed_and_no_others(self):
        scratch = tempfile.mkdtemp(prefix="symbol-order-test-")
        self.addCleanup(shutil.rmtree, scratch, True)
        source = os.path.join(scratch, "program.c")
        with open(source, "w") as f:
            f.write("__attribute__((noinline)) int ran_second(int x) { return x * 3; }\n"
                    "__attribute__((noinline)) int ran_first(int x) { return x + 1; }\n"
                    "__attribute__((noinline)) int never_ran(int x) { return x - 1; }\n"
                    "int main(int argc, char **argv) {\n"
                    "  (void)argv; int x = ran_first(argc);\n"
                    "  return ran_second(x) == 0 ? never_ran(x) : 0;\n}\n")
        program = os.path.join(scratch, "program")
        subprocess.run(["cc", "-O1", "-o", program, source], check=True)
        out = os.path.join(scratch, "callgrind.out")
        subprocess.run([*symbol_order.CALLGRIND, f"--callgrind-out-file={out}", program],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        order = symbol_order.functions_of(program, [out])
        # callgrind lists functions in an order of its own: the set is what counts (lld packs
        # them together whatever their order).
        self.assertTrue({"main", "ran_first", "ran_second"} <= set(order), order)
        self.assertEqual(len(order), len(set(order)), "each function once")
        self.assertNotIn("never_ran", order)
        # Only the program's own functions: nothing of libc or the loader.
        self.assertNotIn("__libc_start_main", order)


if __name__ == "__main__":
    unittest.main()
