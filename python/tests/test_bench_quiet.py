# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""The benchmarks' quiet-block test (bench/hostinfo.py, bench/peers.py): at
more than one thread, a block timed while the host ran the two vCPUs on
cores far apart (a cache line's round trip 460-510 ns instead of 100-115 on
the VMs measured) is left out of the table like a block in a slow period;
one-thread blocks, which carry no round trip, are judged by the speed probe
alone."""

import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
hostinfo = pytest.importorskip("hostinfo")
peers = pytest.importorskip("peers")


def block(ms, link=None, speed=2.0e-3):
    return [ms * 1e-3, speed, speed, link, link]


def test_cores_apart_blocks_are_left_out():
    fast, apart = [block(1.10, 105), block(1.12, 110)] * 5, [block(1.85, 490), block(1.90, 500)]
    one_thread = [block(2.04), block(2.05, speed=3.5e-3)]  # the second in a slow period
    results = {(2, "mlptrain64", "ours"): {"runs": [{"blocks": fast + apart}]},
               (1, "mlptrain64", "ours"): {"runs": [{"blocks": one_thread}]}}
    limit, quiet, total, link = peers.probe_stats(results)
    assert limit.link == pytest.approx(2 * 105)
    assert (quiet, total) == (11, 14)
    apart_blocks, measured, near, far = link
    assert (apart_blocks, measured) == (2, 12)
    assert near == pytest.approx(107.5) and far == pytest.approx(495)
    assert peers.quiet_time(results[2, "mlptrain64", "ours"]["runs"][0], limit) == \
        pytest.approx(1.11e-3)
    assert peers.quiet_time(results[1, "mlptrain64", "ours"]["runs"][0], limit) == \
        pytest.approx(2.04e-3)
    assert "cores apart in 2 of 12 blocks, 495 ns" in peers.link_text(link, limit)


def test_a_far_run_throughout_keeps_its_blocks():
    # With every probe far apart there is no nearer time to hold them to.
    results = {(2, "mlp16", "ours"): {"runs": [{"blocks": [block(1.0, 480), block(1.1, 500)]}]}}
    limit, quiet, total, _ = peers.probe_stats(results)
    assert (quiet, total) == (2, 2)


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core")
def test_link_probe_times_a_round_trip_and_keeps_the_affinity():
    path = hostinfo.build_link_probe(tempfile.mkdtemp())
    assert path and os.path.exists(path)
    mask = os.sched_getaffinity(0)
    probe = hostinfo.LinkProbe(path)
    times = [probe() for _ in range(3)]
    assert all(t is not None and 1 < t < 1e6 for t in times), times
    assert os.sched_getaffinity(0) == mask


def test_link_probe_is_off_on_one_core():
    path = hostinfo.build_link_probe(tempfile.mkdtemp())
    mask = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(mask)})
        assert hostinfo.LinkProbe(path)() is None
    finally:
        os.sched_setaffinity(0, mask)
