# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""A fixed batch of the differential fuzzer (fuzz/diff_fuzz.py): random model
graphs compiled with ml.MlirBackend against torch, outputs and gradients.

Each trial is a test. The trials listed in KNOWN_FAILURES fail today with the
category given (see the fuzzer's docstring); they are strict xfails, so that
a fix shows up as an XPASS to remove from the list, and a trial that fails in
another way is a failure. A failing trial prints its standalone reproducer.
Larger runs: `make fuzz-diff` or fuzz/diff_fuzz.py --seed S --count N."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "fuzz"))

import diff_fuzz as D  # noqa: E402

SEED = 7
COUNT = 900

# trial index -> category of today's failure (from fuzz/diff_fuzz.py --seed 7 --count 900).
KNOWN_FAILURES = {
    50: "bad-message",
    61: "rejected-grad",
    64: "rejected-grad",
    70: "rejected",
    147: "rejected",
    161: "rejected",
    249: "rejected",
    251: "rejected",
    288: "rejected-grad",
    347: "bad-message",
    362: "rejected-grad",
    370: "rejected",
    385: "rejected",
    417: "rejected",
    453: "rejected",
    489: "bad-message",
    515: "rejected",
    518: "rejected",
    526: "bad-message",
    533: "crash",
    537: "rejected",
    580: "rejected",
    619: "bad-message",
    633: "bad-message",
    677: "bad-message",
    714: "rejected",
    741: "bad-message",
    754: "rejected",
    758: "rejected",
    760: "crash",
    789: "rejected-grad",
    815: "crash",
    854: "wrong-gradient",
    856: "wrong-gradient",
    858: "rejected",
    860: "crash",
    884: "bad-message",
}


class KnownFailure(AssertionError):
    pass


@pytest.fixture(scope="module")
def results():
    jobs = max(1, min(2, os.cpu_count() or 1))
    pool = D.Pool(jobs, timeout=60)
    try:
        reqs = [{"seed": SEED, "index": i, "dtype": "both", "invalid_p": 0.05}
                for i in range(COUNT)]
        results = dict(pool.run(reqs))
        # Crashed and hung trials come back without their graph: generate it again.
        for i, res in results.items():
            if res["status"] == "fail" and res.get("graph") is None:
                res["graph"] = D.regenerate(pool, reqs[i])
        return results
    finally:
        pool.close()


def _param(i):
    if i in KNOWN_FAILURES:
        return pytest.param(i, marks=pytest.mark.xfail(
            strict=True, raises=KnownFailure, reason=f"known: {KNOWN_FAILURES[i]}"))
    return i


@pytest.mark.parametrize("index", [_param(i) for i in range(COUNT)])
def test_trial(results, index):
    res = results[index]
    if res["status"] != "fail":
        return
    graph = res.get("graph")
    text = D.describe(res) if graph else f"{SEED}:{index} [{res['category']}] {res.get('detail')}"
    if graph is not None:
        text += "\n\n" + D.repro_source(graph, res)
    elif res.get("log"):
        text += "\n\nworker log:\n" + res["log"][-2000:]
    if KNOWN_FAILURES.get(index) == res["category"]:
        raise KnownFailure(text)
    pytest.fail(text, pytrace=False)
