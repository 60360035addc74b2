"""Generates python/neuronsim/special_coefficients.py: Chebyshev expansions of the smooth
parts of special functions (Bessel, Airy, error functions), computed here from mpmath at
40 digits, so the decompositions in python/neuronsim need no published coefficient tables.

    python tools/special_fits.py          # rewrites the module, prints each fit's error

Each fit is f(t) = sum_k c_k T_k(t) on t in [-1, 1]; the decomposition maps its argument to
t (the mapping is written next to each fit below and in the module that uses it). The
coefficients are the Chebyshev interpolant at 96 Chebyshev-Gauss nodes, truncated after the
last one above 1e-10 of the largest; the printed error is the truncated series' largest
relative error (absolute where f crosses zero) on 4000 points, in float64.
"""

from __future__ import annotations

import math
import os

import mpmath as mp
import numpy as np

mp.mp.dps = 40
NODES = 96
TOLERANCE = 1e-10

ZETA_AI_POS = mp.mpf(2) / 3 * mp.mpf(2) ** 1.5  # Airy: x >= 2
ZETA_AI_NEG = mp.mpf(2) / 3 * mp.mpf(5) ** 1.5  # Airy: x <= -5
ERFINV_TAIL = (mp.sqrt(-mp.log(mp.mpf("0.15"))), mp.mpf(3), mp.mpf("10.7"))


def _from_unit(t, low, high):
    return low + (high - low) * (t + 1) / 2


def _airy_negative(t, part):
    zeta = 2 * ZETA_AI_NEG / (t + 1)
    y = (zeta * mp.mpf(3) / 2) ** (mp.mpf(2) / 3)
    phase = zeta + mp.pi / 4
    scale = mp.sqrt(mp.pi) * y**0.25
    a, b = scale * mp.airyai(-y), scale * mp.airybi(-y)
    if part == "p":
        return a * mp.sin(phase) + b * mp.cos(phase)
    return b * mp.sin(phase) - a * mp.cos(phase)


def _airy_positive(t):
    zeta = 2 * ZETA_AI_POS / (t + 1)
    x = (zeta * mp.mpf(3) / 2) ** (mp.mpf(2) / 3)
    return mp.airyai(x) * 2 * mp.sqrt(mp.pi) * x**0.25 * mp.exp(zeta)


def _hankel_parts(order, x):
    """(P, Q) of J = A (P cos w - Q sin w), Y = A (P sin w + Q cos w), A = sqrt(2 / (pi x)),
    w = x - (2 order + 1) pi / 4."""
    w = x - (2 * order + 1) * mp.pi / 4
    scale = mp.sqrt(mp.pi * x / 2)
    j, y = mp.besselj(order, x), mp.bessely(order, x)
    return scale * (j * mp.cos(w) + y * mp.sin(w)), scale * (y * mp.cos(w) - j * mp.sin(w))


def _square(t, high):
    """x for x^2 = high (t + 1) / 2: fits of even functions in x^2 on x in [0, sqrt(high)]."""
    return mp.sqrt(high * (t + 1) / 2)


def _erfinv(x):
    return mp.erfinv(x)


def _erfinv_of_y(y):
    """erfinv(1 - 2 exp(-y^2)), at the precision 1 - 2 exp(-y^2) needs."""
    with mp.workdps(160):
        return +mp.erfinv(1 - 2 * mp.exp(-y * y))


# name -> (f(t), comment giving the mapping)
FITS = {
    # modified Bessel functions of the first kind
    "I0_SMALL": (lambda t: mp.exp(-4 * (t + 1)) * mp.besseli(0, 4 * (t + 1)),
                 "exp(-x) I0(x), x in [0, 8], t = x / 4 - 1"),
    "I0_LARGE": (lambda t: mp.exp(-16 / (t + 1)) * mp.besseli(0, 16 / (t + 1))
                 * mp.sqrt(16 / (t + 1)), "exp(-x) sqrt(x) I0(x), x >= 8, t = 16 / x - 1"),
    "I1_SMALL": (lambda t: mp.exp(-4 * (t + 1)) * mp.besseli(1, 4 * (t + 1)) / (4 * (t + 1)),
                 "exp(-x) I1(x) / x, x in [0, 8], t = x / 4 - 1"),
    "I1_LARGE": (lambda t: mp.exp(-16 / (t + 1)) * mp.besseli(1, 16 / (t + 1))
                 * mp.sqrt(16 / (t + 1)), "exp(-x) sqrt(x) I1(x), x >= 8, t = 16 / x - 1"),
    # modified Bessel functions of the second kind
    "K0_SMALL": (lambda t: (lambda x: mp.besselk(0, x) + mp.log(x / 2) * mp.besseli(0, x))(
        _square(t, 4)), "K0(x) + log(x / 2) I0(x), x in [0, 2], t = x^2 / 2 - 1"),
    "K0_LARGE": (lambda t: (lambda x: mp.exp(x) * mp.sqrt(x) * mp.besselk(0, x))(4 / (t + 1)),
                 "exp(x) sqrt(x) K0(x), x >= 2, t = 4 / x - 1"),
    "K1_SMALL": (lambda t: (lambda x: (mp.besselk(1, x) - mp.log(x / 2) * mp.besseli(1, x)
                                       - 1 / x) / x)(_square(t, 4)),
                 "(K1(x) - log(x / 2) I1(x) - 1 / x) / x, x in [0, 2], t = x^2 / 2 - 1"),
    "K1_LARGE": (lambda t: (lambda x: mp.exp(x) * mp.sqrt(x) * mp.besselk(1, x))(4 / (t + 1)),
                 "exp(x) sqrt(x) K1(x), x >= 2, t = 4 / x - 1"),
    # Bessel functions of the first and second kind
    "J0_SMALL": (lambda t: mp.besselj(0, _square(t, 64)), "J0(x), x in [0, 8], t = x^2 / 32 - 1"),
    "J1_SMALL": (lambda t: (lambda x: mp.besselj(1, x) / x)(_square(t, 64)),
                 "J1(x) / x, x in [0, 8], t = x^2 / 32 - 1"),
    "Y0_SMALL": (lambda t: (lambda x: mp.bessely(0, x) - 2 / mp.pi * mp.log(x)
                            * mp.besselj(0, x))(_square(t, 64)),
                 "Y0(x) - 2 / pi log(x) J0(x), x in [0, 8], t = x^2 / 32 - 1"),
    "Y1_SMALL": (lambda t: (lambda x: (mp.bessely(1, x) - 2 / mp.pi * mp.log(x)
                                       * mp.besselj(1, x) + 2 / (mp.pi * x)) / x)(
        _square(t, 64)),
                 "(Y1(x) - 2 / pi log(x) J1(x) + 2 / (pi x)) / x, x in [0, 8], t = x^2 / 32 - 1"),
    "P0": (lambda t: _hankel_parts(0, mp.sqrt(128 / (t + 1)))[0],
           "P0(x) of the Hankel expansion, x >= 8, t = 128 / x^2 - 1"),
    "Q0": (lambda t: (lambda x: x * _hankel_parts(0, x)[1])(mp.sqrt(128 / (t + 1))),
           "x Q0(x), x >= 8, t = 128 / x^2 - 1"),
    "P1": (lambda t: _hankel_parts(1, mp.sqrt(128 / (t + 1)))[0],
           "P1(x), x >= 8, t = 128 / x^2 - 1"),
    "Q1": (lambda t: (lambda x: x * _hankel_parts(1, x)[1])(mp.sqrt(128 / (t + 1))),
           "x Q1(x), x >= 8, t = 128 / x^2 - 1"),
    # Airy function Ai
    "AI_MIDDLE": (lambda t: mp.airyai(_from_unit(t, -5, 2)), "Ai(x), x in [-5, 2], t = (2 x + 3) / 7"),
    "AI_POSITIVE": (_airy_positive,
                    "2 sqrt(pi) x^(1/4) exp(z) Ai(x), z = 2/3 x^(3/2), x >= 2, t = 2 z0 / z - 1"),
    "AI_NEGATIVE_P": (lambda t: _airy_negative(t, "p"),
                      "P of Ai(-y) = (P sin(z + pi/4) - Q cos(z + pi/4)) / (sqrt(pi) y^(1/4)),"
                      " z = 2/3 y^(3/2), y >= 5, t = 2 z0 / z - 1"),
    "AI_NEGATIVE_Q": (lambda t: _airy_negative(t, "q"), "Q of the same expansion"),
    # error functions
    "ERFCX_SMALL": (lambda t: mp.exp((t + 1) ** 2) * mp.erfc(t + 1),
                    "erfcx(x) = exp(x^2) erfc(x), x in [0, 2], t = x - 1"),
    "ERFCX_MIDDLE": (lambda t: (lambda x: x * mp.exp(x * x) * mp.erfc(x))(4 / (t + 1.5)),
                     "x erfcx(x), x in [1.6, 8], t = 4 / x - 1.5"),
    "ERFINV_CENTRAL": (lambda t: (lambda x: _erfinv(x) / x)(mp.sqrt(0.49 * (t + 1) / 2)),
                       "erfinv(x) / x, |x| <= 0.7, t = x^2 / 0.245 - 1"),
    "ERFINV_TAIL": (lambda t: _erfinv_of_y(_from_unit(t, *ERFINV_TAIL[:2])),
                    "erfinv(x), y = sqrt(-log((1 - |x|) / 2)) in [sqrt(-log 0.15), 3],"
                    " t = 2 (y - y0) / (3 - y0) - 1"),
    "ERFINV_FAR": (lambda t: _erfinv_of_y(_from_unit(t, *ERFINV_TAIL[1:])),
                   "erfinv(x), y in [3, 10.7], t = 2 (y - 3) / 7.7 - 1"),
}  # fmt: skip


def chebyshev_coefficients(f) -> list[float]:
    nodes = [mp.cos(mp.pi * (k + 0.5) / NODES) for k in range(NODES)]
    values = [f(t) for t in nodes]
    coefficients = []
    for j in range(NODES):
        total = mp.fsum(v * mp.cos(mp.pi * j * (k + 0.5) / NODES) for k, v in enumerate(values))
        coefficients.append(total * (1 if j == 0 else 2) / NODES)
    largest = max(abs(c) for c in coefficients)
    last = max(j for j, c in enumerate(coefficients) if abs(c) > TOLERANCE * largest)
    return [float(c) for c in coefficients[: last + 1]]


def _error(f, coefficients: list[float]) -> float:
    ts = np.cos(np.linspace(0.0005, math.pi - 0.0005, 4000))
    approx = np.polynomial.chebyshev.chebval(ts, coefficients)
    exact = np.array([float(f(mp.mpf(float(t)))) for t in ts])
    return float(np.max(np.abs(approx - exact) / np.maximum(np.abs(exact), 1e-3)))


def main() -> None:
    lines = [
        '"""Chebyshev coefficients of special functions\' smooth parts, generated by',
        "tools/special_fits.py from mpmath (do not edit: rerun the script). Each tuple holds",
        "c_0..c_n of sum_k c_k T_k(t); the comment gives the function and the mapping to t.",
        '"""',
        "",
        f"AIRY_Z_POSITIVE = {float(ZETA_AI_POS)!r}",
        f"AIRY_Z_NEGATIVE = {float(ZETA_AI_NEG)!r}",
        f"ERFINV_Y0 = {float(ERFINV_TAIL[0])!r}",
        "",
    ]
    for name, (f, comment) in FITS.items():
        coefficients = chebyshev_coefficients(f)
        error = _error(f, coefficients)
        print(f"{name}: {len(coefficients)} terms, error {error:.2e}")
        lines.append(f"# {comment}")
        lines.append(f"{name} = (")
        lines.extend(f"    {c!r}," for c in coefficients)
        lines.append(")")
    path = os.path.join(os.path.dirname(__file__), "..", "python", "neuronsim",
                        "special_coefficients.py")  # fmt: skip
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
