"""Intervals for a proportion k / n at the sizes teams have (a few dozen cases), vectorised over arrays.

- Wilson's score interval: the usual choice for one proportion; its coverage stays near nominal down to
  a handful of cases, where the Wald interval (p +- z se) collapses to a point at 0 or 1.
- Jeffreys' interval: the alpha/2 and 1 - alpha/2 quantiles of Beta(k + 1/2, n - k + 1/2), the
  posterior under Jeffreys' prior; `jeffreys_draws` samples that posterior, so that precision, recall
  and F1, which share counts, get intervals from one set of draws.

`n` may be fractional (an effective sample size); n = 0 gives (0, 1): nothing is known.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def _z(alpha: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2))


def wilson(k: ArrayLike, n: ArrayLike, alpha: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval of k / n (arrays broadcast), as (low, high)."""
    k, n = np.asarray(k, float), np.asarray(n, float)
    z = _z(alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, k / np.where(n > 0, n, 1), 0.5)
        den = 1 + z * z / np.where(n > 0, n, 1)
        mid = (p + z * z / (2 * np.where(n > 0, n, 1))) / den
        half = z * np.sqrt(p * (1 - p) / np.where(n > 0, n, 1) + z * z / (4 * np.where(n > 0, n, 1) ** 2)) / den
    low, high = np.clip(mid - half, 0, 1), np.clip(mid + half, 0, 1)
    # At k = 0 (or n) the interval's end is exactly 0 (or 1); rounding must not leave it a hair off.
    low, high = np.where(k <= 0, 0.0, low), np.where(k >= n, 1.0, high)
    return np.where(n > 0, low, 0.0), np.where(n > 0, high, 1.0)


def jeffreys(k: ArrayLike, n: ArrayLike, alpha: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Jeffreys' interval of k / n, as (low, high); the end at k = 0 (k = n) is 0 (1), as Brown, Cai and
    DasGupta (2001) define it."""
    from scipy.stats import beta

    k, n = np.asarray(k, float), np.asarray(n, float)
    a, b = k + 0.5, np.maximum(n - k, 0) + 0.5
    low = np.where(k <= 0, 0.0, beta.ppf(alpha / 2, a, b))
    high = np.where(k >= n, 1.0, beta.ppf(1 - alpha / 2, a, b))
    return low, high


def jeffreys_draws(k: ArrayLike, n: ArrayLike, size: int, rng: np.random.Generator) -> np.ndarray:
    """`size` draws of each proportion from its Jeffreys posterior Beta(k + 1/2, n - k + 1/2)
    (shape: size x the broadcast shape of k and n)."""
    k, n = np.asarray(k, float), np.asarray(n, float)
    a, b = k + 0.5, np.maximum(n - k, 0) + 0.5
    return rng.beta(a, b, size=(size, *np.broadcast(a, b).shape))
