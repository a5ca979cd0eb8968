#!/usr/bin/env python3
"""Scores diagnoses against the worlds' expected.yaml, check by check.

Each world is started, its alarm fired and its notification replayed by
`alarm-triage replay --world DIR --format json`; every expectation is one
check: the classification, the culprit group and service, each finding's
verdict, each cause and not-cause, the change line, each suspect's verdict,
the severity, what the first screen mentions and what nothing may say. Prints one line per world and the pass rates.

    scripts/score_worlds.py [--binary target/debug/alarm-triage] [--strict] DIR...

DIR is a world or a folder of worlds. Without --strict the exit code is 0
whatever the score: `tests/worlds-fresh/` holds held-out worlds that do not
pass yet, and CI reports on them without failing.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml


def worlds_in(paths):
    for p in map(Path, paths):
        if (p / "expected.yaml").exists():
            yield p
        else:
            yield from sorted(d for d in p.iterdir() if (d / "expected.yaml").exists())


def listed(expected, key):
    return [x for x in (expected.get(key) or []) if isinstance(x, str)]


def checks(expected, d, everything=""):
    """(name, passed, detail) for every expectation; `everything` is every
    rendering and the bot's own log, where no planted secret may appear."""
    findings = {f["id"]: f for f in d.get("findings", [])}
    gaps = [g["source"] for g in d.get("evidence_gaps", [])]
    out = []

    def check(name, ok, detail=""):
        out.append((name, bool(ok), detail))

    behaviour = d.get("classification", {}).get("behaviour")
    if "classification" in expected:
        check("classification", behaviour == expected["classification"], f"got {behaviour}")
    culprits = [g for g in d.get("target_groups", []) if g.get("culprit")]
    want_group = expected.get("culprit_target_group")
    if want_group is None:
        check("culprit_target_group", not culprits, f"got {[g['name'] for g in culprits]}")
    else:
        got = culprits[0]["name"] if culprits else None
        check("culprit_target_group", got == want_group, f"got {got}")
        service = (culprits[0].get("kubernetes_service") or {}) if culprits else {}
        got_service = f"{service.get('namespace')}/{service.get('name')}" if service else None
        check("culprit_service", got_service == expected.get("culprit_service"), f"got {got_service}")
    for fid, want in (expected.get("findings") or {}).items():
        f = findings.get(fid)
        if f is None:
            kube = fid.split(".")[0] in ("pods", "hpa", "deploy")
            explained = kube and any(g.startswith(("kubernetes", "prometheus")) for g in gaps)
            check(f"finding {fid}", explained, "absent" + (" (gap)" if explained else ""))
        else:
            check(f"finding {fid}", f["verdict"] == want, f"got {f['verdict']}, want {want}")
    for fid in listed(expected, "causes"):
        role = findings.get(fid, {}).get("role")
        check(f"cause {fid}", role == "cause", f"role {role}")
    for fid in listed(expected, "not_causes"):
        role = findings.get(fid, {}).get("role")
        check(f"not cause {fid}", role != "cause", f"role {role}")
    changes = d.get("changes", [])
    chosen = next((c for c in changes if c.get("most_plausible")), None)
    line = d.get("what_changed") or ""
    want_change = expected.get("change")
    if want_change == "none":
        check("change none", chosen is None and line.startswith("No change in the 6 h before"), line)
    elif want_change == "acquitted":
        check("change acquitted", chosen is None and "acquitted" in line, line)
    elif isinstance(want_change, dict):
        ok = chosen is not None and chosen["kind"] == want_change.get("kind")
        ok = ok and all(m in line for m in want_change.get("mentions") or [])
        check("change convicted", ok, line)
    suspects = d.get("suspects", [])
    for want in expected.get("suspects") or []:
        mentions = want.get("mentions") or []
        match = [
            s for s in suspects
            if s["kind"] == want.get("kind")
            and all(m in f"{s['subject']} {s['summary']}" for m in mentions)
        ]
        got = sorted({s["verdict"] for s in match})
        check(f"suspect {want.get('kind')} {mentions}", want.get("verdict") in got and len(got) == 1,
              f"got {got or 'no such suspect'}")
    causes = " ".join(f.get("summary", "") for f in d.get("findings", []) if f.get("role") == "cause")
    first_screen = f"{d.get('headline', '')} {line} {causes}"
    for want in listed(expected, "mentions"):
        check(f"mentions {want!r}", want in first_screen, d.get("headline", ""))
    advice = " ".join(s.get("proposal", "") for s in d.get("next_steps", []))
    said = f"{d.get('headline', '')} {line} {advice}".lower()
    for banned in listed(expected, "must_not_say"):
        check(f"does not say {banned!r}", banned.lower() not in said, "said")
    want_logs = expected.get("logs") or {}
    patterns = (d.get("logs") or {}).get("patterns") or []
    is_new = lambda p: p.get("trend") in ("new", "last_words", "increased")
    named = next((p for p in patterns if is_new(p) and p.get("level") == "error"), None)
    if "new_pattern" in want_logs:
        want = want_logs["new_pattern"].lower()
        check(f"logs new {want!r}", named is not None and want in named["template"].lower(),
              named["template"] if named else "no new error")
    for old in want_logs.get("old_patterns") or []:
        hits = [p for p in patterns if old.lower() in p["template"].lower()]
        ok = bool(hits) and all(not is_new(p) and p.get("before", 0) > 0 for p in hits)
        check(f"logs old {old!r}", ok, ", ".join(f"{p['trend']} {p['before']}" for p in hits) or "not reported")
    if want_logs.get("none_new"):
        new = [p["template"] for p in patterns if is_new(p) and p.get("level") != "info"]
        check("logs none new", not new, "; ".join(new))
    for secret in listed(expected, "secrets"):
        check("no leak", secret not in everything, "a planted secret leaked")
    order = ["info", "warning", "critical"]
    if "severity" in expected:
        check("severity", d.get("severity") == expected["severity"], f"got {d.get('severity')}")
    if "severity_at_most" in expected:
        got = d.get("severity")
        ok = got in order and order.index(got) <= order.index(expected["severity_at_most"])
        check("severity at most", ok, f"got {got}")
    return out


def diagnose(binary, world):
    """The diagnosis, and every rendering plus the bot's own log as one text."""
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run(
            [binary, "replay", "--world", str(world), "--format", "json", "--out-dir", out],
            capture_output=True, text=True, timeout=600,
        )
        if run.returncode != 0:
            raise RuntimeError(f"exit {run.returncode}: {run.stderr.strip()[-800:]}")
        rendered = [p.read_text(errors="replace") for p in Path(out).rglob("*") if p.suffix in (".json", ".txt")]
    return json.loads(run.stdout.strip().splitlines()[0]), "\n".join([run.stdout, run.stderr, *rendered])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--binary", default="target/debug/alarm-triage")
    parser.add_argument("--strict", action="store_true", help="exit 1 unless every check passes")
    parser.add_argument("--save", help="write each diagnosis to this folder")
    parser.add_argument("--verbose", "-v", action="store_true", help="list every failed check")
    args = parser.parse_args()
    total = passed = worlds = whole = 0
    for world in worlds_in(args.paths):
        expected = yaml.safe_load((world / "expected.yaml").read_text())
        worlds += 1
        try:
            d, everything = diagnose(args.binary, world)
        except Exception as e:  # a world that cannot be diagnosed fails every check
            n = max(1, len(checks(expected, {})))
            total += n
            print(f"{world.name:50} 0/{n}  not diagnosed: {e}")
            continue
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            (Path(args.save) / f"{world.name}.json").write_text(json.dumps(d, indent=2))
        results = checks(expected, d, everything)
        ok = sum(1 for _, p, _ in results if p)
        total += len(results)
        passed += ok
        whole += ok == len(results)
        print(f"{world.name:50} {ok}/{len(results)}")
        for name, p, detail in results:
            if not p and args.verbose:
                print(f"    FAIL {name}: {detail}")
        for s in d.get("suspects", []) if args.verbose else []:
            print(f"    suspect {s['verdict']:10} {s['reason']}")
    rate = 100.0 * passed / total if total else 100.0
    print(f"== {whole}/{worlds} worlds pass every check; {passed}/{total} checks ({rate:.1f} %)")
    if args.strict and passed != total:
        sys.exit(1)


if __name__ == "__main__":
    main()
