#!/usr/bin/env python3
"""Draws the plots of a soac reproduction: python3 plot.py REPRODUCE_JSON OUT_DIR.

`soac reproduce` runs this script (a copy of reproduce/plot.py that it writes beside its report)
after measuring; run it again by hand to redraw. Each table in the JSON lists plots, each a
figure of panels: "lines" panels (series of x and y, the papers' series dashed) or "bars"
panels (categories, one bar per series). Writes OUT_DIR/<file>.png and .svg and names each file
it wrote on stderr ("wrote <file>").
"""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def positive(values):
    return [v if v is not None and v > 0 else float("nan") for v in values]


def draw_lines(ax, panel):
    for s in panel.get("series", []):
        x, y = s.get("x", []), positive(s.get("y", []))
        if not x:
            continue
        style = "--" if s.get("paper") else "-"
        ax.plot(x, y, style, marker="o", markersize=3, linewidth=1.2, label=s.get("name", ""))
    if panel.get("xlog"):
        ax.set_xscale("log", base=2)
    if panel.get("ylog"):
        ax.set_yscale("log")


def draw_bars(ax, panel):
    categories = panel.get("categories", [])
    series = panel.get("series", [])
    if not categories or not series:
        return
    width = 0.8 / len(series)
    for k, s in enumerate(series):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(categories))]
        ax.bar(xs, positive(s.get("y", [])), width, label=s.get("name", ""))
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(categories, rotation=30, ha="right", fontsize=7)
    if panel.get("ylog"):
        ax.set_yscale("log")


def draw(plot, out_dir):
    panels = plot.get("panels", [])
    if not panels:
        return []
    cols = min(len(panels), 3 if len(panels) != 4 else 2)
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels):
        if panel.get("kind") == "bars":
            draw_bars(ax, panel)
        else:
            draw_lines(ax, panel)
        ax.set_title(panel.get("title", ""), fontsize=9)
        ax.set_xlabel(panel.get("xlabel", ""), fontsize=8)
        ax.set_ylabel(panel.get("ylabel", ""), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="major", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6, loc="best")
    fig.suptitle(plot.get("title", ""), fontsize=10)
    fig.tight_layout()
    written = []
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, plot["file"] + "." + ext)
        fig.savefig(path, dpi=110)
        written.append(path)
    plt.close(fig)
    return written


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py REPRODUCE_JSON OUT_DIR")
    with open(sys.argv[1]) as f:
        reproduction = json.load(f)
    os.makedirs(sys.argv[2], exist_ok=True)
    for table in reproduction.get("tables", []):
        for plot in table.get("plots", []):
            if draw(plot, sys.argv[2]):
                print("wrote " + plot["file"], file=sys.stderr)


if __name__ == "__main__":
    main()
