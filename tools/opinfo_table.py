"""The OpInfo table: how many of torch 2.13's in-scope OpInfos lantern passes, partly passes or lacks.

Reads tests/opinfo_expected.json (written by `tools/opinfo_sweep.py --full --write`, the full sweep over every
sample), so it prints in a moment:

    .venv/bin/python tools/opinfo_table.py               # the table, overall and by namespace
    .venv/bin/python tools/opinfo_table.py --failures    # and each partial or missing OpInfo with its reason
    .venv/bin/python tools/opinfo_table.py --from FILE   # a results file of `opinfo_sweep.py --json FILE`

An OpInfo passes when every sample matches torch (values, dtypes, shapes, float64 gradients, error classes), is
partial when some sample does not, and is missing when lantern has no such function. Samples are counted over
the OpInfos lantern has.
"""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opinfo_sweep import EXPECTED_PATH, read_expected, summarize, table  # noqa: E402  (tools/ is not a package)


def namespace(key):
    """The namespace an OpInfo key belongs to: linalg.norm -> linalg, nn.functional.relu -> nn.functional."""
    parts = key.split(".")
    if parts[0] == "nn" and len(parts) > 2:
        return "nn.functional"
    if parts[0] in ("linalg", "special", "fft", "signal", "masked", "sparse"):
        return parts[0]
    return "torch / Tensor"


def render_table(summary):
    numbers = table(summary)
    lines = ["| OpInfos | pass | partial | missing | samples passed / total (OpInfos lantern has) |",
             "|---:|---:|---:|---:|---:|",
             f"| {numbers['opinfos']} | {numbers['pass']} | {numbers['partial']} | {numbers['missing']} | "
             f"{numbers['samples_passed']} / {numbers['samples']} ({_share(numbers['samples_passed'], numbers['samples'])}) |",
             "", "| namespace | OpInfos | pass | partial | missing | samples passed / total |",
             "|---|---:|---:|---:|---:|---:|"]
    groups = collections.defaultdict(dict)
    for key, entry in summary["ops"].items():
        groups[namespace(key)][key] = entry
    for name, ops in sorted(groups.items()):
        n = table({"ops": ops})
        lines.append(f"| {name} | {n['opinfos']} | {n['pass']} | {n['partial']} | {n['missing']} | "
                     f"{n['samples_passed']} / {n['samples']} |")
    return "\n".join(lines)


def _share(part, whole):
    return f"{part / whole:.1%}" if whole else "n/a"


def render_failures(summary):
    """One line per OpInfo that is not a pass: its status, failing samples and the commonest reason."""
    lines = []
    for key, entry in sorted(summary["ops"].items()):
        if entry["status"] == "missing":
            lines.append(f"- `{key}`: missing ({entry['reason']})")
        elif entry["status"] == "partial":
            failing = entry["failing"]
            reasons = collections.Counter(failing.values())
            reason, count = reasons.most_common(1)[0]
            more = f"; {len(reasons) - 1} other reasons" if len(reasons) > 1 else ""
            lines.append(f"- `{key}`: {len(failing)}/{entry['samples']} samples fail, e.g. "
                         f"{min(sid for sid, r in failing.items() if r == reason)}: {reason} ({count}x{more})")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--failures", action="store_true", help="list every partial or missing OpInfo")
    parser.add_argument("--from", dest="source", help="a results file of `opinfo_sweep.py --json` to tabulate")
    args = parser.parse_args(argv)
    if args.source:
        with open(args.source, encoding="utf-8") as f:
            summary = summarize(json.load(f))
    else:
        summary = read_expected(EXPECTED_PATH)
    print(render_table(summary))
    if args.failures:
        print("\n" + render_failures(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
