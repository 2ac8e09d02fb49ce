#!/usr/bin/env python3
"""Draws one picture per benchmark result file: <name>.json -> <name>.png beside it.

  python3 tools/plot_results.py docs/results/h200                 # every JSON file there
  python3 tools/plot_results.py docs/results/h200 --only m2_gemm_ladder

Each row family of the file (vector_add, sgemm_2d, gemm_ladder, ...) becomes one panel of
horizontal bars, one bar per implementation and size, in the order of the table:
TFLOP/s for the GEMMs, each labelled with its share of the library baseline (cuBLAS) at
that size; GB/s for the memory-bound kernels, with the DRAM's theoretical peak as a dashed
line. The numbers are the JSON's, as tools/run_benchmarks.py writes it; nothing is typed in.
A row without a time has no bar but its name and why: "not runnable on this GPU" or "error"
(the table's note column gives the reason).
Needs matplotlib (pip install matplotlib); without it nothing is drawn and it says so.
"""
import argparse
import json
import sys
from pathlib import Path

from run_benchmarks import BASELINES, NOT_RUNNABLE, OK, row_status, split_name, table_rows


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def families(data):
    """{family: {"metric": "TFLOPS" | "GBps", "impls": [...], "sizes": [...], "values": {(impl, size): v},
    "untimed": {(impl, size): "not runnable on this GPU" | "error"}}}"""
    found = {}
    for row in table_rows(data):  # the medians, as the tables show them
        family, impl, size = split_name(row["name"])
        entry = found.setdefault(family, {"impls": [], "sizes": [], "rows": {}, "untimed": {}})
        if impl not in entry["impls"]:
            entry["impls"].append(impl)
        if size not in entry["sizes"]:
            entry["sizes"].append(size)
        status = row_status(row)
        if status == OK:
            entry["rows"][(impl, size)] = row
        else:
            entry["untimed"][(impl, size)] = "not runnable on this GPU" if status == NOT_RUNNABLE else "error"
    for entry in found.values():
        entry["metric"] = "TFLOPS" if any("TFLOPS" in r for r in entry["rows"].values()) else "GBps"
        entry["values"] = {key: float(row[entry["metric"]]) for key, row in entry["rows"].items()
                           if entry["metric"] in row}
    return found


def baseline_of(impls):
    return next((impl for name in BASELINES for impl in impls if impl == name or impl.startswith(name + "_")), None)


def draw(json_path):
    """Writes <json_path without .json>.png; returns its path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(Path(json_path).read_text())
    panels = families(data)
    heights = [0.9 + 0.22 * len(p["impls"]) * len(p["sizes"]) for p in panels.values()]
    figure, axes = plt.subplots(len(panels), 1, figsize=(10, sum(heights) + 0.6),
                                gridspec_kw={"height_ratios": heights}, squeeze=False)
    colours = plt.get_cmap("viridis")
    peak = data.get("context", {}).get("peak_dram_gbps")
    for axis, (family, panel) in zip(axes[:, 0], panels.items()):
        sizes, impls, values = panel["sizes"], panel["impls"], panel["values"]
        baseline = baseline_of(impls)
        bar = 0.8 / len(sizes)
        for s, size in enumerate(sizes):
            ys, widths, labels = [], [], []
            for i, impl in enumerate(impls):
                if (impl, size) in panel["untimed"]:  # no bar: its name and why
                    axis.text(0, i + s * bar, f" {size}: {panel['untimed'][(impl, size)]}", va="center",
                              fontsize=7, color="grey")
                    continue
                if (impl, size) not in values:
                    continue
                value = values[(impl, size)]
                ys.append(i + s * bar)
                widths.append(value)
                label = f"{value:,.1f}" if panel["metric"] == "TFLOPS" else f"{value:,.0f}"
                if baseline and (baseline, size) in values and impl != baseline:
                    label += f"  ({100 * value / values[(baseline, size)]:.0f}% of {baseline})"
                labels.append(label)
            colour = colours(s / max(len(sizes) - 1, 1) * 0.8)
            axis.barh(ys, widths, height=bar * 0.9, color=colour, label=size)
            for y, width, label in zip(ys, widths, labels):
                axis.text(width, y, " " + label, va="center", fontsize=7)
        axis.set_yticks([i + bar * (len(sizes) - 1) / 2 for i in range(len(impls))])
        axis.set_yticklabels(impls, fontsize=8)
        axis.invert_yaxis()
        unit = "TFLOP/s" if panel["metric"] == "TFLOPS" else "GB/s"
        axis.set_xlabel(unit, fontsize=8)
        if panel["metric"] == "GBps" and peak:
            axis.axvline(float(peak), color="grey", linestyle="--", linewidth=1)
            axis.text(float(peak), -0.6, " theoretical DRAM peak", fontsize=7, color="grey")
        # At least some width: a panel whose rows all lack a time still shows their names.
        axis.set_xlim(0, max(list(values.values()) + [float(peak or 0) if panel["metric"] == "GBps" else 0])
                      * 1.35 or 1.0)
        axis.set_title(family, fontsize=9, loc="left")
        axis.legend(fontsize=7, loc="lower right")
        axis.tick_params(axis="x", labelsize=7)
    gpu = data.get("context", {}).get("gpu", "")
    figure.suptitle(f"{Path(json_path).stem} on {gpu}".strip(), fontsize=10)
    figure.tight_layout()
    out = Path(json_path).with_suffix(".png")
    # No software version or date in the file, so redrawing the same numbers changes nothing.
    figure.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(figure)
    return out


def draw_all(results_dir, only=None):
    """Draws every <name>.json of results_dir (or just `only`); returns the pictures written,
    or None when matplotlib is not installed."""
    if not have_matplotlib():
        return None
    paths = sorted(Path(results_dir).glob("*.json"))
    if only:
        paths = [p for p in paths if p.stem in only]
    return [draw(path) for path in paths]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_dir", type=Path, help="a folder of benchmark JSON files, e.g. docs/results/h200")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these files (names without .json)")
    args = parser.parse_args()
    if not args.results_dir.is_dir():
        print(f"plot_results: {args.results_dir} is not a folder", file=sys.stderr)
        return 2
    names = {p.stem for p in args.results_dir.glob("*.json")}
    unknown = sorted(set(args.only or []) - names)
    if unknown:
        print(f"plot_results: no {', '.join(unknown)}.json in {args.results_dir}; there are: "
              f"{', '.join(sorted(names))}", file=sys.stderr)
        return 2
    pictures = draw_all(args.results_dir, args.only)
    if pictures is None:
        print("plot_results: matplotlib is not installed (pip install matplotlib); no pictures drawn",
              file=sys.stderr)
        return 1
    for picture in pictures:
        print(f"plot_results: wrote {picture}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
