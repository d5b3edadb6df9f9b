# Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
# Exceptions. See LICENSE for license information.
"""ml.profile(): where a physical model's time goes, per compiled kernel.

    with ml.profile() as prof:
        outputs = compiled_model.evaluate(params, inputs)
    print(prof.summary())

Inside the block, physical models run code compiled with timers around each
kernel (mithril-profile-kernels: a kernel is a fused loop nest, named by the
logical ops it computes, such as "linear_0.matrixmultiply_0 + relu_0"). That
code is compiled at the first call inside a profile block and kept; outside
one, models run their code without timers. Gradients and training steps are
profiled the same way.
"""

from __future__ import annotations

from . import _mithril

_active = 0


def active() -> bool:
    return _active > 0


def _snapshot() -> list:
    return list(_mithril.profile_records())


class profile:
    def __init__(self) -> None:
        self.records: list[tuple] = []  # (model, kernel, calls, seconds)

    def __enter__(self) -> "profile":
        global _active
        _active += 1
        self._start = _snapshot()
        return self

    def __exit__(self, *exc) -> bool:
        global _active
        _active -= 1
        end = _snapshot()
        records = []
        for i, (model, kernel, calls, seconds) in enumerate(end):
            if i < len(self._start):
                calls -= self._start[i][2]
                seconds -= self._start[i][3]
            if calls > 0:
                records.append((model, kernel, calls, seconds))
        self.records = records
        return False

    @property
    def total_seconds(self) -> float:
        return sum(r[3] for r in self.records)

    def summary(self, top: int | None = None) -> str:
        """A table of the kernels that ran, slowest first: calls, total time
        and share of the profiled kernels' time."""
        rows = sorted(self.records, key=lambda r: -r[3])[:top]
        total = self.total_seconds or 1.0
        header = ("kernel", "model", "calls", "total ms", "share")
        table = [header] + [(k, m, str(c), f"{s * 1e3:.3f}", f"{100 * s / total:.1f}%")
                            for m, k, c, s in rows]
        widths = [max(len(r[i]) for r in table) for i in range(5)]
        lines = []
        for n, row in enumerate(table):
            cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])] + \
                [c.rjust(w) for c, w in zip(row[2:], widths[2:])]
            lines.append("  ".join(cells))
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        lines.append(f"{len(self.records)} kernels, {self.total_seconds * 1e3:.3f} ms in all")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()
