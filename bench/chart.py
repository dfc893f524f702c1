"""Draw bench/netbench's results.json as a PNG: wall time per run (median,
min-max whiskers) beside the bytes that crossed the workers' shaped links."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(results_path, png_path):
    with open(results_path) as f:
        r = json.load(f)
    runs = [x for x in r["runs"] if x["failed"] < x["reps"]]
    names = [x["Name"] for x in runs]
    med = [x["medianSeconds"] for x in runs]
    lo = [x["medianSeconds"] - x["minSeconds"] for x in runs]
    hi = [x["maxSeconds"] - x["medianSeconds"] for x in runs]
    link = [(x["linkToWorkers"] + x["linkFromWorkers"]) / 2**20 for x in runs]
    control = [(x["linkToControl"] + x["linkFromControl"]) / 2**20 for x in runs]
    colors = ["#c0504d" if x["Workers"] == 1 else "#4f81bd" for x in runs]

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    a.bar(names, med, yerr=[lo, hi], capsize=4, color=colors)
    for i, v in enumerate(med):
        a.text(i, v + hi[i], f"{v:.1f} s", ha="center", va="bottom", fontsize=9)
    a.set_ylabel("wall time, s (median; whiskers min-max)")
    a.set_title("Wall time")
    b.bar(names, link, color=colors, label="workers")
    b.bar(names, control, bottom=link, color="#a5a5a5", label="planner + finalizer")
    b.set_ylabel("MiB through the capped links")
    b.set_title("Bytes through Lambdas' networks")
    b.legend(fontsize=8)
    for ax in (a, b):
        ax.tick_params(axis="x", rotation=20)
    archive = max(x["archiveBytes"] for x in runs) / 2**20 if runs else 0
    fig.suptitle(
        f"s3zip, {r['count']} objects ({archive:.0f} MiB archive), each worker capped at "
        f"{r['shaping']['Rate']} each way; red: 1 worker, blue: {r['workers']} workers",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
