#!/usr/bin/env python3
"""The bad-input suite: runs every case of cases.py against a built `kopt`.

Each case runs in a fresh copy of fixtures/ (plus, where it asks, a copy of a
real run folder made once with the fake worker), under `ulimit` (address space
2 GiB, no core files, files up to 512 MiB, and a process limit where the case is
about threads) and a timeout, in its own session so that a timeout kills every
process it started. What is asserted is in README.md.

Usage (CTest runs one group per test, see tests/CMakeLists.txt):
  run_bad_input.py --kopt build/tool/kopt --fake-worker build/tests/kopt_fake_worker \\
                   --build-dir build [-k GROUP_OR_SUBSTRING] [--summary] [-j N]
Exit status: 0 when every case passed; 1 when any failed; 2 on a usage error of
this script.
Python 3 standard library only.
"""
import argparse
import concurrent.futures
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"

AS_LIMIT_KIB = 2 * 1024 * 1024   # ulimit -v: 2 GiB of address space
FSIZE_LIMIT_KIB = 512 * 1024     # ulimit -f (bash counts 1024-byte blocks)
MAX_STDERR = 256 * 1024          # a bad input never warrants more stderr than this
MAX_FIRST_LINE = 4096            # ... nor a first line longer than this
NOBODY = 65534
NOBODY_LOCK = os.path.join(tempfile.gettempdir(), "kopt-bad-input-nobody.lock")
# Never on stderr, whatever the input: the class of the defect, not one example.
FORBIDDEN = [
    (r"\bkopt tune\b", "a command that does not exist"),
    (r"std::bad_alloc|bad_alloc", "memory ran out: a read without a size limit?"),
    (r"terminate called", "an exception escaped"),
]


# --------------------------------------------------------------------------
# Case model
# --------------------------------------------------------------------------

class Case:
    """One bad input and what must happen.

    id        "<group>.<name>"; the group is what -k and CTest select.
    argv      the command, a list of str; "{kopt}", "{fake}", "{dir}",
              "{spec}", "{run}", "{cache}", "{src}", "{build}" are replaced.
    exit      the expected exit code, or a set of acceptable ones.
    first     regex that the FIRST line of stderr must match (re.search), e.g.
              the option name or the file's basename; None: not checked.
              Checked when the command fails as expected; first_always: also
              when it exits 0 (e.g. a warning).
    stderr    regex that stderr as a whole must match (optional).
    setup     fn(ctx) run before the command: writes the bad files.
    stdin     bytes, or fn(ctx) -> path of a file to feed on stdin.
    run_folder  copy the suite's fixture run folder to {run} first.
    unchanged   hash every file in the case folder before and after; nothing
                that existed may change, and no file may appear inside a run
                folder (default: on unless the expected exit is 0); "on_error":
                only when the command did not exit 0.
    nproc     process/thread limit (ulimit -u; run as user nobody when the
              suite runs as root, since root ignores the limit).
    nobody    run as user nobody (when root), e.g. to make chmod 000 bite.
    timeout   seconds (default 20).
    env       extra environment.
    check     fn(ctx, res) -> list of failure strings, extra assertions.
    custom    fn(ctx) -> list of failure strings: the case drives the
              processes itself (concurrency, signals); argv is then unused.
    """

    def __init__(self, id, argv=None, exit=2, first=None, stderr=None, setup=None, stdin=None,
                 run_folder=False, unchanged=None, nproc=None, nobody=False, timeout=20, env=None,
                 check=None, custom=None, note="", first_always=False):
        self.id = id
        self.group = id.split(".", 1)[0]
        self.argv = argv or []
        self.exit = exit
        self.first = first
        self.first_always = first_always
        self.stderr = stderr
        self.setup = setup
        self.stdin = stdin
        self.run_folder = run_folder
        exits = exit if isinstance(exit, (set, frozenset, tuple, list)) else {exit}
        self.unchanged = (0 not in exits) if unchanged is None else unchanged
        self.nproc = nproc
        self.nobody = nobody or nproc is not None
        self.timeout = timeout
        self.env = env or {}
        self.check = check
        self.custom = custom
        self.note = note

    def exits(self):
        return set(self.exit) if isinstance(self.exit, (set, frozenset, tuple, list)) else {self.exit}


class Result:
    def __init__(self, returncode, stdout, stderr, timed_out, seconds):
        self.returncode = returncode
        self.stdout = stdout  # bytes (first MiB)
        self.stderr = stderr  # bytes (first MiB)
        self.timed_out = timed_out
        self.seconds = seconds

    @property
    def stderr_text(self):
        return self.stderr.decode("utf-8", "replace")

    @property
    def first_line(self):
        for line in self.stderr_text.splitlines():
            if line.strip():
                return line
        return ""


# --------------------------------------------------------------------------
# The suite's environment
# --------------------------------------------------------------------------

class Suite:
    def __init__(self, args):
        self.kopt = str(Path(args.kopt).resolve())
        self.fake = str(Path(args.fake_worker).resolve())
        self.src = str(Path(args.source_dir).resolve())
        self.build = str(Path(args.build_dir).resolve()) if args.build_dir else ""
        self.keep = args.keep
        self.root = Path(tempfile.mkdtemp(prefix="kopt-bad-input-"))
        os.chmod(self.root, 0o755)
        self.cache = self.root / "nvrtc-cache"          # shared NVRTC cache: compiles once
        self.cache.mkdir()
        os.chmod(self.cache, 0o777)
        self.is_root = os.geteuid() == 0
        self._run_lock = threading.Lock()
        self._run_dir = None
        self._run_error = None
        self._nobody_lock = threading.Lock()
        self._nobody_exe = None
        self.nobody_run_lock = threading.Lock()
        self.numbers = {}

    # Case folders are named by number, not by id: a case's name in its
    # paths could otherwise match its own regex ("..._is_directory").
    def case_dir(self, case):
        return self.root / ("c%03d" % self.numbers[case.id])

    def remove_case_dir(self, case):
        d = self.case_dir(case)
        rmtree(d)
        for f in self.root.glob(d.name + ".*"):
            f.unlink()

    def cleanup(self):
        if not self.keep:
            rmtree(self.root)

    # A real run folder, made once with the fake worker; cases copy it.
    def fixture_run(self):
        with self._run_lock:
            if self._run_dir or self._run_error:
                if self._run_error:
                    raise RuntimeError(self._run_error)
                return self._run_dir
            d = self.root / "fixture-run"
            shutil.copytree(FIXTURES, d / "spec")
            argv = [self.kopt, "optimize", "--spec", str(d / "spec" / "tiny.json"), "--arch", "sm_90",
                    "--quiet", "--budget", "evals=3", "--top", "1", "--retime-rounds", "1",
                    "--results-dir", str(d / "results"), "--cache-dir", str(self.cache),
                    "--worker-command", self.fake]
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
            run = d / "results" / "run-001"
            if p.returncode != 0 or not (run / "history.json").is_file():
                self._run_error = ("could not make the fixture run folder (exit %d): %s"
                                   % (p.returncode, p.stderr.decode(errors="replace")[-2000:]))
                raise RuntimeError(self._run_error)
            self._run_dir = run
            return run

    # The executables as user nobody can run them: the originals when nobody
    # can reach them, else copies in the suite's folder.
    def nobody_exe(self):
        with self._nobody_lock:
            if self._nobody_exe:
                return self._nobody_exe
            kopt, fake = self.kopt, self.fake
            probe = subprocess.run([kopt, "--version"], user=NOBODY, group=NOBODY, extra_groups=[],
                                   capture_output=True, timeout=30)
            if probe.returncode != 0:
                b = self.root / "bin"
                b.mkdir(exist_ok=True)
                os.chmod(b, 0o755)
                shutil.copy2(self.kopt, b / "kopt")
                shutil.copy2(self.fake, b / "kopt_fake_worker")
                kopt, fake = str(b / "kopt"), str(b / "kopt_fake_worker")
            self._nobody_exe = (kopt, fake)
            return self._nobody_exe


class Ctx:
    """What a case's setup, checks and custom drivers see."""

    def __init__(self, suite, case, dir):
        self.suite = suite
        self.case = case
        self.dir = dir
        self.spec = dir / "tiny.json"
        self.run = dir / "results" / "run-001"
        self.kopt = suite.kopt
        self.fake = suite.fake
        self.cache = suite.cache
        if case.nobody and suite.is_root:
            self.kopt, self.fake = suite.nobody_exe()

    def path(self, *parts):
        return self.dir.joinpath(*parts)

    def write(self, rel, data, mode=None):
        p = self.path(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        p.write_bytes(data)
        if mode is not None:
            os.chmod(p, mode)
        return p

    def spec_json(self):
        return json.loads(self.spec.read_text())

    def write_spec(self, doc, name="tiny.json"):
        text = doc if isinstance(doc, (str, bytes)) else json.dumps(doc, indent=1)
        return self.write(name, text)

    def fmt(self, s):
        return (s.replace("{kopt}", self.kopt).replace("{fake}", self.fake)
                 .replace("{dir}", str(self.dir)).replace("{spec}", str(self.spec))
                 .replace("{run}", str(self.run)).replace("{cache}", str(self.cache))
                 .replace("{src}", self.suite.src).replace("{build}", self.suite.build))

    def argv(self, argv):
        return [self.fmt(a) if isinstance(a, str) else a for a in argv]

    # ---- running processes under the limits ----

    def _wrap(self, argv, nproc):
        limits = "ulimit -S -c 0; ulimit -v %d; ulimit -f %d" % (AS_LIMIT_KIB, FSIZE_LIMIT_KIB)
        if nproc is not None:
            limits += "; ulimit -u %d" % nproc
        return ["bash", "-c", limits + ' || exit 125; exec "$@"', "bash"] + list(argv)

    def spawn(self, argv, stdin=None, env=None, nproc=None, out_name="out"):
        """Starts argv under the limits in its own session; stdout and stderr go to files."""
        e = dict(os.environ)
        e.update({"KOPT_CACHE_DIR": str(self.cache), "LC_ALL": "C.UTF-8"})
        e.pop("KOPT_TARGET_GPU", None)
        e.pop("KOPT_REQUIRE_GPU", None)
        e.update(self.case.env)
        if env:
            e.update(env)
        kw = {}
        if self.case.nobody and self.suite.is_root:
            kw = dict(user=NOBODY, group=NOBODY, extra_groups=[])
            e["HOME"] = str(self.dir)
            e["KOPT_CACHE_DIR"] = str(self.dir / ".nvrtc-cache")  # the shared one holds root's folders
        if nproc is None:
            nproc = self.case.nproc
        if nproc is not None and not self.suite.is_root:
            nproc += user_threads()  # ulimit -u counts every thread of the user
        out = open(self.dir.parent / (self.dir.name + "." + out_name + ".stdout"), "wb")
        err = open(self.dir.parent / (self.dir.name + "." + out_name + ".stderr"), "wb")
        fin = subprocess.DEVNULL
        if isinstance(stdin, (str, Path)):
            fin = open(stdin, "rb")
        try:
            p = subprocess.Popen(self._wrap(self.argv(argv), nproc), stdin=fin, stdout=out, stderr=err,
                                 env=e, cwd=str(self.dir), start_new_session=True, **kw)
        finally:
            out.close()
            err.close()
            if fin is not subprocess.DEVNULL:
                fin.close()
        p.out_name = out_name
        return p

    def wait(self, p, timeout):
        """Waits for p (killing its whole session on timeout); returns a Result."""
        t0 = time.monotonic()
        timed_out = False
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        kill_session(p.pid)  # a timeout, or anything it left behind
        if timed_out:
            p.wait()
        base = self.dir.parent / (self.dir.name + "." + p.out_name)
        return Result(p.returncode, read_head(str(base) + ".stdout"), read_head(str(base) + ".stderr"),
                      timed_out, time.monotonic() - t0)

    def run_cmd(self, argv, stdin=None, env=None, timeout=None, nproc=None, out_name="out"):
        p = self.spawn(argv, stdin=stdin, env=env, nproc=nproc, out_name=out_name)
        return self.wait(p, timeout or self.case.timeout)


def kill_session(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def read_head(path, limit=1 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""


def user_threads():
    """Threads of this user now (what RLIMIT_NPROC counts)."""
    uid, n = os.getuid(), 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = os.stat("/proc/" + d)
            if st.st_uid == uid:
                n += len(os.listdir("/proc/%s/task" % d))
        except OSError:
            pass
    return n


def rmtree(p):
    def onerror(func, path, exc):
        try:
            os.chmod(os.path.dirname(path), 0o755)
            os.chmod(path, 0o755)
            func(path)
        except OSError:
            pass
    for dirpath, dirnames, _ in os.walk(p):
        for d in dirnames:
            try:
                os.chmod(os.path.join(dirpath, d), 0o755, follow_symlinks=False)
            except OSError:
                pass
    shutil.rmtree(p, onerror=onerror)


# --------------------------------------------------------------------------
# Snapshots: "nothing recorded changed"
# --------------------------------------------------------------------------

def snapshot(root):
    """relative path -> what it is: a regular file's SHA-256 (size and mtime
    beyond 64 MiB), a link's target, or the kind of a special file. Never
    opens anything but regular files (a FIFO would block)."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                snap[rel] = "link:" + os.readlink(full)
            elif stat.S_ISDIR(st.st_mode):
                snap[rel] = "dir"
            elif stat.S_ISREG(st.st_mode):
                if st.st_size > 64 << 20:
                    snap[rel] = "big:%d:%d" % (st.st_size, st.st_mtime_ns)
                else:
                    try:
                        h = hashlib.sha256()
                        with open(full, "rb") as f:
                            for chunk in iter(lambda: f.read(1 << 20), b""):
                                h.update(chunk)
                        snap[rel] = "file:" + h.hexdigest()
                    except OSError:
                        snap[rel] = "unreadable:%d:%d" % (st.st_size, st.st_mtime_ns)
            else:
                snap[rel] = "special:%o" % stat.S_IFMT(st.st_mode)
    return snap


def compare(before, after, strict_dirs):
    """Changed or removed entries, and entries new inside a strict folder."""
    problems = []
    for rel, what in before.items():
        if rel not in after:
            problems.append("removed " + rel)
        elif after[rel] != what:
            problems.append("changed " + rel)
    for rel in after:
        if rel not in before and any(rel.startswith(d + os.sep) for d in strict_dirs):
            problems.append("new " + rel)
    return problems


def run_folders(root):
    """Folders in the case folder that look like run folders (have history.json or run.json)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        if "history.json" in filenames or "run.json" in filenames:
            out.append(os.path.relpath(dirpath, root))
    return out


# --------------------------------------------------------------------------
# Running one case
# --------------------------------------------------------------------------

def describe_exit(res):
    if res.timed_out:
        return "timed out after %.0f s (killed)" % res.seconds
    if res.returncode < 0:
        return "killed by signal %d (%s)" % (-res.returncode, signal.Signals(-res.returncode).name)
    return "exit %d" % res.returncode


def check_result(case, res):
    """The assertions every command case gets. Returns failure strings."""
    fails = []
    if res.timed_out:
        fails.append(describe_exit(res))
        return fails
    if res.returncode < 0:
        fails.append(describe_exit(res) + "; stderr: " + short(res.stderr_text))
        return fails
    if res.returncode == 125 and b"ulimit" in res.stderr:
        fails.append("could not set the limits: " + short(res.stderr_text))
        return fails
    if res.returncode not in case.exits():
        fails.append("expected exit %s, got %d; stderr: %s"
                     % ("/".join(str(x) for x in sorted(case.exits())), res.returncode, short(res.stderr_text)))
    if len(res.stderr) > MAX_STDERR:
        fails.append("stderr is %d bytes (more than %d)" % (len(res.stderr), MAX_STDERR))
    first = res.first_line
    if len(first) > MAX_FIRST_LINE:
        fails.append("the first stderr line is %d characters (more than %d)" % (len(first), MAX_FIRST_LINE))
    if case.first and res.returncode in case.exits() and (res.returncode != 0 or case.first_always):
        if not re.search(case.first, first):
            fails.append("first stderr line does not match /%s/: %s" % (case.first, short(first)))
    for pattern, why in FORBIDDEN:
        m = re.search(pattern, res.stderr_text)
        if m:
            fails.append("stderr says %r (%s)" % (m.group(0), why))
    if case.stderr and not re.search(case.stderr, res.stderr_text):
        fails.append("stderr does not match /%s/: %s" % (case.stderr, short(res.stderr_text)))
    return fails


def short(s, n=400):
    s = s.strip().replace("\n", " | ")
    return s if len(s) <= n else s[:n] + "...(%d chars)" % len(s)


def run_case(suite, case):
    """Returns (failures, seconds, first stderr line)."""
    t0 = time.monotonic()
    d = suite.case_dir(case)
    shutil.copytree(FIXTURES, d)
    ctx = Ctx(suite, case, d)
    fails = []
    shown = ""
    try:
        if case.run_folder:
            shutil.copytree(suite.fixture_run(), ctx.run, symlinks=True)
        if case.setup:
            case.setup(ctx)
        if case.nobody and suite.is_root:
            for dirpath, dirnames, filenames in os.walk(d):
                for n in [dirpath] + [os.path.join(dirpath, f) for f in dirnames + filenames]:
                    os.lchown(n, NOBODY, NOBODY)
        before = snapshot(d) if case.unchanged else None
        strict = run_folders(d)
        if case.custom:
            fails += case.custom(ctx)
        else:
            stdin = case.stdin(ctx) if callable(case.stdin) else case.stdin
            if isinstance(stdin, bytes):
                stdin = ctx.write("../" + d.name + ".stdin", stdin)
            if case.nobody and suite.is_root:
                # ulimit -u counts every process of the user: one nobody case at a
                # time, across the suite's processes too (CTest runs groups at once)
                with suite.nobody_run_lock, open(NOBODY_LOCK, "a") as lk:
                    fcntl.flock(lk, fcntl.LOCK_EX)
                    res = ctx.run_cmd(case.argv, stdin=stdin)
            else:
                res = ctx.run_cmd(case.argv, stdin=stdin)
            shown = "%s: %s" % (describe_exit(res), res.first_line[:300])
            fails += check_result(case, res)
            if case.check and not res.timed_out and res.returncode >= 0:
                fails += case.check(ctx, res)
            if case.unchanged == "on_error" and res.returncode == 0:
                before = None  # it went on, as it may: what it wrote is its business
        if before is not None:
            fails += ["run folder or input files: " + p for p in compare(before, snapshot(d), strict)[:10]]
    except Exception as e:  # a bug of the case or the runner is a failure too
        fails.append("runner error: %s: %s" % (type(e).__name__, e))
    if not fails and not suite.keep:
        suite.remove_case_dir(case)
    return fails, time.monotonic() - t0, shown


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def select(cases, patterns):
    """A pattern that is a group's name selects that group; any other, the ids containing it."""
    if not patterns:
        return cases
    groups = {c.group for c in cases}
    out = []
    for c in cases:
        for p in patterns:
            if (c.group == p) if p in groups else (p in c.id):
                out.append(c)
                break
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kopt", help="the kopt executable (required to run cases)")
    ap.add_argument("--fake-worker", help="kopt_fake_worker (tests/fake_worker; required to run cases)")
    ap.add_argument("--source-dir", default=str(HERE.parent.parent), help="the repository (default: this one)")
    ap.add_argument("--build-dir", default="", help="the build tree (KernelOptimizer_DIR for the cmake cases)")
    ap.add_argument("-k", action="append", default=[], metavar="GROUP",
                    help="run only this group, case id or id substring (repeatable)")
    ap.add_argument("-j", type=int, default=2, help="cases run at once (default 2)")
    ap.add_argument("--summary", action="store_true", help="one line per failing case, then the counts")
    ap.add_argument("--list", action="store_true", help="list the selected cases and exit")
    ap.add_argument("--keep", action="store_true", help="keep the case folders (printed at the end)")
    ap.add_argument("--check-groups", metavar="G1;G2", default=None,
                    help="exit 1 unless these are exactly the table's groups (CTest's registration)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="a line for every case, with the first line of its stderr")
    args = ap.parse_args(argv)

    sys.path.insert(0, str(HERE))
    import cases as table  # noqa: E402 (the table lives beside this file)
    all_cases = table.CASES
    ids = [c.id for c in all_cases]
    dups = {i for i in ids if ids.count(i) > 1}
    if dups:
        print("duplicate case ids: " + ", ".join(sorted(dups)), file=sys.stderr)
        return 2
    if args.check_groups is not None:
        table_groups = sorted({c.group for c in all_cases})
        given = sorted(g for g in re.split("[;,]", args.check_groups) if g)
        if given != table_groups:
            print("CTest registers groups %s, the table has %s: update tests/CMakeLists.txt"
                  % (given, table_groups), file=sys.stderr)
            return 1
        print("%d groups, %d cases: %s" % (len(table_groups), len(all_cases), ", ".join(
            "%s %d" % (g, sum(c.group == g for c in all_cases)) for g in table_groups)))
        return 0
    chosen = select(all_cases, args.k)
    if args.list:
        for c in chosen:
            print(c.id)
        print("%d cases" % len(chosen))
        return 0
    if not chosen:
        print("no case matches " + " ".join(args.k), file=sys.stderr)
        return 2
    if not args.kopt or not args.fake_worker:
        print("give --kopt and --fake-worker", file=sys.stderr)
        return 2
    suite = Suite(args)
    suite.numbers = {c.id: i for i, c in enumerate(all_cases)}
    t0 = time.monotonic()
    results = {}
    lock = threading.Lock()

    def one(c):
        fails, secs, shown = run_case(suite, c)
        with lock:
            results[c.id] = (fails, secs)
            if args.verbose:
                state = "ok" if not fails else "FAIL"
                print("%-52s %-16s %5.1fs  %s" % (c.id, state, secs, shown), flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
        list(ex.map(one, chosen))

    failed = [c for c in chosen if results[c.id][0]]
    passed = [c for c in chosen if not results[c.id][0]]

    def first_fail(c):
        return results[c.id][0][0]

    out = []
    if args.summary:
        for c in failed:
            out.append("FAIL  %-48s %s" % (c.id, short(first_fail(c), 300)))
    else:
        for c in failed:
            out.append("FAIL %s" % c.id)
            for f in results[c.id][0]:
                out.append("    " + f)
            out.append("    folder: %s" % suite.case_dir(c))
    print("\n".join(out))
    groups = {}
    for c in chosen:
        groups.setdefault(c.group, [0, 0])
        groups[c.group][0] += 1
        if results[c.id][0]:
            groups[c.group][1] += 1
    print("groups: " + ", ".join("%s %d (%d failing)" % (g, n, f) for g, (n, f) in groups.items()))
    print("%d cases in %.0f s: %d passed, %d FAILED" % (len(chosen), time.monotonic() - t0, len(passed), len(failed)))
    if args.keep or failed:
        print("case folders: %s" % suite.root)
    if not args.keep and not failed:  # a passing case's folder is gone already; failing ones stay
        suite.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
