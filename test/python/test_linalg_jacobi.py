"""Symmetric eigenvalues and singular values by unrolled cyclic Jacobi
(python/neuronsim/linalg_jacobi.py) and the ops built on them, compared with eager (fp32:
rtol 1.3e-4, atol 1e-5 on results of magnitude about 1); small singular values against an
fp64 reference at relative precision; the eigen-/singular-vector ops' and the size cap's
error messages."""

import pytest
import torch

import neuronsim
import neuronsim.linalg

FP32 = {"rtol": 1.3e-4, "atol": 1e-5}
SHAPES = [(1, 1), (2, 2), (5, 5), (3, 8, 8), (2, 7, 4), (2, 4, 7), (17, 17)]


def _compiled(fn, *args, **options):
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(fn, backend="neuron", dynamic=False, options=options or None)(*args)
    if not options:
        assert neuronsim.get_fallback_ops() == {}
    return out


def _check(fn, *args, tol=FP32):
    actual = _compiled(fn, *args)
    expected = fn(*args)
    torch.testing.assert_close(actual, expected, **tol)
    return actual


def _random(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _symmetric(shape, seed=0):
    a = _random(shape, seed)
    return a + a.mT


@pytest.mark.parametrize("shape", [s for s in SHAPES if s[-1] == s[-2]])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigvalsh_matches_eager(shape, uplo):
    a = _random(shape)  # not symmetric: only the uplo triangle may be read
    _check(lambda a: torch.linalg.eigvalsh(a, UPLO=uplo), a)


@pytest.mark.parametrize("shape", SHAPES)
def test_svdvals_nuclear_norm_and_cond_match_eager(shape):
    a = _random(shape, 1)
    _check(torch.linalg.svdvals, a)
    _check(lambda a: torch.linalg.matrix_norm(a, "nuc"), a)
    _check(lambda a: torch.linalg.norm(a, "nuc", dim=(-2, -1)), a)
    if shape[-1] == shape[-2]:
        _check(torch.linalg.cond, a, tol={"rtol": 1e-3, "atol": 0})  # cond amplifies rounding


def test_small_singular_values_keep_their_relative_precision():
    """One-sided Jacobi on a column-graded matrix (singular values over 6 decades): each value
    within 1e-4 of the fp64 SVD of the same fp32 matrix, relative to itself."""
    b = _random((2, 12, 12), 3) + 4 * torch.eye(12)
    a = b * torch.logspace(0, -6, 12)
    reference = torch.linalg.svdvals(a.double())
    actual = _compiled(torch.linalg.svdvals, a).double()
    assert ((actual - reference).abs() / reference).max() < 1e-4


@pytest.mark.parametrize("shape", SHAPES)
def test_pinv_and_pinverse_match_eager(shape):
    a = _random(shape, 2)
    _check(torch.linalg.pinv, a)
    _check(torch.pinverse, a)


def test_pinv_of_rank_deficient_matrices_and_tolerances():
    u = _random((2, 6, 3), 4)
    a = u @ _random((2, 3, 5), 5)  # rank 3
    _check(torch.linalg.pinv, a)
    _check(lambda a: torch.linalg.pinv(a, atol=0.5), a)
    _check(lambda a, r: torch.linalg.pinv(a, rtol=r), a, torch.tensor([0.3, 1e-3]))
    _check(lambda a: torch.linalg.matrix_rank(a), a, tol={"rtol": 0, "atol": 0})
    exact = {"rtol": 0, "atol": 0}
    _check(lambda a: torch.linalg.matrix_rank(a, atol=1.0, rtol=0.0), a, tol=exact)


@pytest.mark.parametrize("shape", [(5, 5), (3, 6, 6)])
def test_hermitian_pinv_and_rank_match_eager(shape):
    a = _symmetric(shape, 6)
    _check(lambda a: torch.linalg.pinv(a, hermitian=True), a)
    low = _random((*shape[:-1], 2), 7)
    singular = low @ low.mT  # rank 2
    _check(lambda a: torch.linalg.pinv(a, hermitian=True), singular)
    exact = {"rtol": 0, "atol": 0}
    _check(lambda a: torch.linalg.matrix_rank(a, hermitian=True), singular, tol=exact)


@pytest.mark.parametrize("n", [64, neuronsim.linalg.MAX_SIZE])
def test_jacobi_sweeps_converge_up_to_the_size_cap(n):
    """The decompositions are torch code: run eagerly in fp32 at the largest sizes (compiling
    128x128 takes minutes), their results are within 2e-6 of the norm of the fp64 reference
    (of the same fp32 matrix; LAPACK's fp32 error is 2e-7 to 1e-6 there), for random, graded
    (5 decades) and clustered spectra: the sweep count suffices."""
    from neuronsim.linalg_jacobi import linalg_eigh, singular_values

    q = torch.linalg.qr(_random((n, n), 9).double()).Q
    spectra = {
        "graded": torch.logspace(0, -5, n, dtype=torch.float64) * (-1) ** torch.arange(n),
        "clustered": 1 + 1e-4 * (torch.arange(n) % 2),
    }
    symmetric = [_symmetric((n, n), 8).double()]
    symmetric += [(q * spectrum) @ q.mT for spectrum in spectra.values()]
    for a in symmetric:
        reference = torch.linalg.eigvalsh(a.float().double())
        jacobi = linalg_eigh(a.float(), "L", False)[0].double()
        assert (jacobi - reference).abs().max() <= 2e-6 * reference.abs().max()
    other = torch.linalg.qr(_random((n, n), 11).double()).Q
    general = [_random((n, n), 10).double(), (q * spectra["graded"].abs()) @ other.mT]
    for a in general:
        reference = torch.linalg.svdvals(a.float().double())
        jacobi = singular_values(a.float()).double()
        assert (jacobi - reference).abs().max() <= 2e-6 * reference.max()


def test_vectors_are_unsupported_with_the_reason():
    a = _symmetric((4, 4))
    for fn, message in [
        (torch.linalg.eigh, "neuronsim.linalg_eigh_vectors.default (eigenvectors: the neuron "
         "backend computes eigenvalues (Jacobi), but not LAPACK's signs of the vectors"),
        (torch.linalg.svd, "neuronsim.linalg_svd_vectors.default (singular vectors: the neuron "
         "backend computes singular values (Jacobi), but not LAPACK's signs of the vectors"),
    ]:  # fmt: skip
        with pytest.raises(neuronsim.NeuronCompileError) as error:
            _compiled(fn, a)
        assert message in str(error.value)
    # the vectors run on the CPU with fallback="cpu"; the values stay on the device
    got = _compiled(torch.linalg.eigh, a, fallback="cpu")
    expected = torch.linalg.eigh(a)
    torch.testing.assert_close(got.eigenvalues, expected.eigenvalues, **FP32)
    torch.testing.assert_close(got.eigenvectors, expected.eigenvectors, **FP32)


def test_empty_matrices_match_eager():
    for shape in [(0, 0), (3, 0), (2, 0, 4)]:
        a = torch.empty(shape)
        for full in (True, False):
            _check(lambda a: torch.linalg.svd(a, full_matrices=full), a)
        _check(torch.linalg.svdvals, a)
        _check(torch.linalg.pinv, a)
    _check(torch.linalg.eigh, torch.empty(2, 0, 0))


def test_matrices_above_the_cap_are_unsupported_with_the_size_named():
    n = neuronsim.linalg.MAX_SIZE + 1
    message = (
        f"aten._linalg_svd.default ({n}x{n} matrices: the neuron backend unrolls linear "
        f"algebra up to {n - 1}x{n - 1}) at test_linalg_jacobi.py"
    )
    with pytest.raises(neuronsim.NeuronCompileError) as error:
        _compiled(lambda a: torch.linalg.svdvals(a), _random((n, n)))
    assert message in str(error.value)
