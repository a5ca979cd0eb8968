"""Depth of the critical path of evidence gathering, from diagnoses run with a
delay injected in front of every request of one kind of server (bench.sh, 1).

    bench_depth.py RUNS.tsv

RUNS.tsv has one line per diagnosis: SERIES <tab> DELAY_MS <tab> JSON_FILE,
the file being `alarm-triage replay --format json` output. For each series,
the median `timings.total_ms` of the runs at each delay is fitted by least
squares against the delay: with every request of the series held back d ms,
gathering takes about (dependent round trips on the critical path) x d longer,
so the slope is that number of round trips. Prints the raw table, the fit of
each series and one summary line.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict


def fit(points: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Least-squares line through (x, y): slope, intercept, largest residual."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a slope needs at least two different delays")
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    intercept = my - slope * mx
    worst = max(abs(y - (intercept + slope * x)) for x, y in points)
    return slope, intercept, worst


def read_runs(manifest: str) -> dict[str, dict[int, list[dict]]]:
    """series -> delay -> runs ({"total_ms", "gaps"}), in the manifest's order."""
    runs: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    with open(manifest) as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                series, delay, path = line.rstrip("\n").split("\t")
            except ValueError:
                raise SystemExit(f"{manifest}:{number}: expected SERIES<tab>DELAY_MS<tab>FILE, got {line!r}")
            with open(path) as file:
                diagnosis = json.load(file)
            runs[series][int(delay)].append({
                "total_ms": float(diagnosis["timings"]["total_ms"]),
                "gaps": len(diagnosis.get("evidence_gaps") or []),
            })
    return runs


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = read_runs(sys.argv[1])
    if not runs:
        raise SystemExit(f"{sys.argv[1]}: no runs")
    slopes = []
    more_gaps = False
    print(f"   {'series':<22} {'delay ms':>8} {'median ms':>9}  runs: ms (evidence gaps)")
    for series, by_delay in runs.items():
        # The world's own gaps, without delay: more than these under delay means
        # a source ran out of time, and that run's time is a floor, not the path.
        usual = min(r["gaps"] for r in by_delay[min(by_delay)])
        points = []
        for delay in sorted(by_delay):
            group = by_delay[delay]
            median = statistics.median(r["total_ms"] for r in group)
            points.append((delay, median))
            each = ", ".join(f"{r['total_ms']:.0f} ({r['gaps']}{'!' if r['gaps'] > usual else ''})" for r in group)
            more_gaps |= any(r["gaps"] > usual for r in group)
            print(f"   {series:<22} {delay:>8} {median:>9.0f}  {each}")
        slope, intercept, worst = fit(points)
        print(f"   {series:<22} fit: total_ms = {intercept:.0f} + {slope:.2f} x delay; largest residual {worst:.0f} ms")
        slopes.append((series, slope))
    if more_gaps:
        print("   (!) more evidence gaps than without delay: a source ran out of time, so that run's time "
              "is a floor, not the critical path")
    first, *rest = slopes
    print(f"   depth: {first[0]} slope {first[1]:.2f} (dependent round trips)"
          + "".join(f", {series} slope {slope:.2f}" for series, slope in rest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
