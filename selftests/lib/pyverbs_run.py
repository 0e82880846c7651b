#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""rdma-core's pyverbs test suite, as its run_tests.py runs it, with a line per test.

usage: /usr/bin/python3 pyverbs_run.py TESTS_DIR [run_tests.py's options: --dev D --gid N]

TESTS_DIR is a copy of /usr/share/doc/rdma-core/tests with its files gunzipped (Debian
compresses the larger ones, which then do not import). Prints "PYVERBS STATUS ID SECS
[WHY]" for each test (PASS, SKIP, FAIL, ERROR) and, last, "PYVERBS-SUMMARY ran=N passed=N
skipped=N failed=N errors=N". A test that takes longer than PYVERBS_TEST_TIMEOUT seconds
(default 120) is interrupted and counts as an error: pyverbs' event tests block in
ibv_get_cq_event() without a timeout of their own.
"""
import os
import signal
import sys
import time
import unittest
from importlib.machinery import SourceFileLoader

tests_dir = os.path.abspath(sys.argv.pop(1))
sys.path.insert(0, tests_dir)

from args_parser import parser  # noqa: E402  (run_tests.py's own options)

PER_TEST = int(os.environ.get("PYVERBS_TEST_TIMEOUT", "120"))


class TestTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise TestTimeout(f"the test took more than {PER_TEST} s")


class Result(unittest.TextTestResult):
    def _log(self, status, test, why=""):
        why = " ".join(str(why).split())[:200]
        secs = time.monotonic() - self._t0
        print(f"PYVERBS {status} {test.id()} {secs:.2f}s {why}".rstrip(), flush=True)

    def startTest(self, test):
        super().startTest(test)
        self._t0 = time.monotonic()
        signal.alarm(PER_TEST)

    def stopTest(self, test):
        signal.alarm(0)
        super().stopTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._log("PASS", test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._log("SKIP", test, reason)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._log("FAIL", test, err[1])

    def addError(self, test, err):
        super().addError(test, err)
        self._log("ERROR", test, f"{err[0].__name__}: {err[1]}")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._log("XFAIL", test)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._log("XPASS", test)


# Tests whose own checks assume InfiniBand's semantics where iWARP's differ, skipped on an
# iWARP device (an RNIC) with the reason. An RDMA Write completes at its data source once
# it is handed to the transport, before it need have reached the data sink's memory (RFC
# 5040 section 5.5, rule 9), while rdma_traffic() reads the sink's buffer as soon as the
# source's completion is polled (utils.py, rdma_traffic).
IWARP_INVALID = {
    "test_mr.MRTest.test_mr_rereg_access_bad_flow":
        "checks the data sink's buffer at the source's Write completion, which iWARP does "
        "not order (RFC 5040 5.5 rule 9; utils.py rdma_traffic)",
}

signal.signal(signal.SIGALRM, _alarm)
tests = SourceFileLoader("tests", os.path.join(tests_dir, "__init__.py")).load_module()
parser.parse_args()
dev = parser.args.get("dev")
try:
    with open(f"/sys/class/infiniband/{dev}/node_type") as f:
        rnic = "RNIC" in f.read()
except OSError:
    rnic = False
if rnic:
    import importlib
    for name, why in IWARP_INVALID.items():
        mod, cls, meth = name.rsplit(".", 2)
        c = getattr(importlib.import_module(f"tests.{mod}"), cls)
        setattr(c, meth, unittest.skip(f"iWARP: {why}")(getattr(c, meth)))
prog = unittest.main(module=tests, exit=False,
                     testRunner=unittest.TextTestRunner(resultclass=Result, stream=sys.stderr))
r = prog.result
failed = len(r.failures) + len(r.unexpectedSuccesses)
passed = r.testsRun - failed - len(r.errors) - len(r.skipped) - len(r.expectedFailures)
print(f"PYVERBS-SUMMARY ran={r.testsRun} passed={passed} skipped={len(r.skipped)} "
      f"failed={failed} errors={len(r.errors)}", flush=True)
sys.exit(0 if r.wasSuccessful() else 1)
