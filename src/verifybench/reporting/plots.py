"""Charts for the report, as SVG data URIs for `<img>` tags: an image cannot run script, whatever text a
label holds, and the report stays one file."""

from __future__ import annotations

import base64
import functools
import io

import numpy as np


@functools.cache
def _pyplot():
    """matplotlib's pyplot on the Agg backend, loaded at the first chart: importing it costs about a second
    that a command drawing nothing (gate, compare, baseline) and the test collection need not pay."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "path", "svg.hashsalt": "verifybench", "font.size": 8.5})
    return plt


def _uri(fig) -> str:
    plt = _pyplot()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue().encode()).decode()


def _rates(curve: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tp, fp = np.asarray(curve["tp"], float), np.asarray(curve["fp"], float)
    recall = tp / curve["n_pos"] if curve["n_pos"] else np.zeros_like(tp)
    fpr = fp / curve["n_neg"] if curve["n_neg"] else np.zeros_like(fp)
    precision = np.divide(tp, tp + fp, out=np.ones_like(tp), where=(tp + fp) > 0)
    return recall, precision, fpr


def curves_svg(curve: dict, threshold: float | None, auroc: float | None, auprc: float | None) -> str:
    """Precision-recall and ROC side by side, with the no-skill lines and the chosen threshold marked."""
    plt = _pyplot()
    recall, precision, fpr = _rates(curve)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.0, 3.0))
    prevalence = curve["n_pos"] / max(curve["n_pos"] + curve["n_neg"], 1)
    ax1.step(np.r_[0, recall], np.r_[precision[0] if len(precision) else 1, precision], where="post", color="#3b6ea5")
    ax1.axhline(prevalence, color="#999", lw=0.8, ls="--", label=f"no skill ({prevalence:.2f})")
    ax2.plot(np.r_[0, fpr], np.r_[0, recall], color="#3b6ea5")
    ax2.plot([0, 1], [0, 1], color="#999", lw=0.8, ls="--", label="chance")
    if threshold is not None and len(curve["threshold"]):
        th = np.asarray(curve["threshold"], float)
        i = np.searchsorted(-th, -threshold, side="right") - 1
        if i >= 0:
            ax1.plot([recall[i]], [precision[i]], "o", color="#c0392b", ms=5, label="fitted threshold")
            ax2.plot([fpr[i]], [recall[i]], "o", color="#c0392b", ms=5, label="fitted threshold")
    ax1.set(xlim=(0, 1.02), ylim=(0, 1.02), xlabel="recall", ylabel="precision",
            title="precision-recall" + (f" (AP {auprc:.3f})" if auprc is not None else ""))
    ax2.set(xlim=(0, 1.02), ylim=(0, 1.02), xlabel="false positive rate", ylabel="true positive rate",
            title="ROC" + (f" (AUROC {auroc:.3f})" if auroc is not None else ""))
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right" if ax is ax2 else "lower left", fontsize=7, frameon=False)
    fig.tight_layout()
    return _uri(fig)


def reliability_svg(rel: dict, ece: float | None, brier: float | None) -> str:
    """Observed hallucination rate against the mean predicted probability, per bin (marker size = count)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(3.2, 3.0))
    ax.plot([0, 1], [0, 1], color="#999", lw=0.8, ls="--", label="perfect calibration")
    sizes = 10 + 90 * np.asarray(rel["count"], float) / max(max(rel["count"]), 1)
    ax.plot(rel["predicted"], rel["observed"], color="#3b6ea5", lw=1)
    ax.scatter(rel["predicted"], rel["observed"], s=sizes, color="#3b6ea5", zorder=3)
    title = "reliability"
    if ece is not None:
        title += f" (ECE {ece:.3f}, Brier {brier:.3f})"
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="predicted P(hallucinated)", ylabel="observed rate", title=title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=7, frameon=False)
    return _uri(fig)


def operating_svg(points: list[dict]) -> str:
    """Test-split F1 against p95 latency (and cost, when any verifier reports one); Pareto front joined."""
    plt = _pyplot()
    pts = [p for p in points if p.get("f1") is not None and p.get("p95_ms") is not None]
    has_cost = any((p.get("cost_per_1k") or 0) > 0 for p in pts)
    fig, axes = plt.subplots(1, 2 if has_cost else 1, figsize=(7.0 if has_cost else 4.2, 3.0), squeeze=False)
    for ax, key, label in zip(axes[0], ("p95_ms", "cost_per_1k"), ("p95 latency per case (ms, log)", "cost per 1k cases ($)")):
        for p in pts:
            ax.scatter([max(p[key] or 0, 1e-4)], [p["f1"]], color="#c0392b" if p["pareto"] else "#7f8c8d", zorder=3)
            ax.annotate(p["verifier"], (max(p[key] or 0, 1e-4), p["f1"]), fontsize=7, xytext=(4, 3),
                        textcoords="offset points")
        front = sorted((p for p in pts if p["pareto"]), key=lambda p: p[key] or 0)
        if len(front) > 1:
            ax.plot([max(p[key] or 0, 1e-4) for p in front], [p["f1"] for p in front], color="#c0392b", lw=0.8, ls=":")
        if key == "p95_ms":
            ax.set_xscale("log")
        ax.set(xlabel=label, ylabel="F1 on the test split", ylim=(0, 1.02), title="operating points (red: Pareto front)")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return _uri(fig)
