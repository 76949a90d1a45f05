"""Charts for the report, as SVG data URIs for `<img>` tags: an image cannot run script, whatever text a
label holds, and the report stays one file."""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams.update({"svg.fonttype": "path", "svg.hashsalt": "verifybench", "font.size": 9})


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue().encode()).decode()


def pr_curve_svg(title: str, recall: list[float], precision: list[float], prevalence: float | None,
                 point: tuple[float, float] | None = None) -> str:
    """Precision against recall, with the no-skill line at the positive rate and the chosen point."""
    fig, ax = plt.subplots(figsize=(3.6, 3.0))
    ax.step(recall, precision, where="post", color="#3b6ea5", lw=1.6)
    if prevalence is not None:
        ax.axhline(prevalence, color="#999", lw=0.8, ls="--", label=f"no skill ({prevalence:.2f})")
    if point is not None and None not in point:
        ax.plot([point[0]], [point[1]], "o", color="#c0392b", ms=5, label="chosen threshold")
    ax.set(xlim=(0, 1.02), ylim=(0, 1.02), xlabel="recall", ylabel="precision", title=title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=7, frameon=False)
    return _svg(fig)
