"""Linear algebra through its unrolled decompositions (python/neuronsim/linalg.py,
linalg_qr.py, linalg_exp.py, distances.py), compared with eager on well-conditioned random
matrices of a few sizes and batch shapes (fp32: rtol 1e-4, atol 1e-4 on results of magnitude
about 1; pivots and info outputs exactly), singular and non-positive-definite inputs (eager's
info outputs, its exceptions and messages), and the size cap's error message."""

import pytest
import torch

import neuronsim
import neuronsim.linalg

TOL = {"rtol": 1e-4, "atol": 1e-4}
SHAPES = [(1,), (3,), (2, 5), (2, 3, 8), (17,)]  # batch dims + n (the last)


def _compiled(fn, *args):
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(fn, backend="neuron", dynamic=False)(*args)
    assert neuronsim.get_fallback_ops() == {}
    return out


def _check(fn, *args, tol=TOL):
    actual = _compiled(fn, *args)
    expected = fn(*args)
    torch.testing.assert_close(actual, expected, equal_nan=True, **tol)
    return actual


def _general(shape, seed=0):
    """A well-conditioned general matrix: the identity times 3 plus a random one."""
    g = torch.Generator().manual_seed(seed)
    n = shape[-1]
    return torch.randn(*shape[:-1], n, n, generator=g) / n**0.5 + torch.eye(n) * 1.5


def _spd(shape, seed=0):
    a = _general(shape, seed)
    return a @ a.mT / shape[-1] + torch.eye(shape[-1])


def _rhs(shape, k=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape[:-1], shape[-1], k, generator=g)


def _id(shape):
    return "x".join(map(str, shape))


@pytest.mark.parametrize("shape", SHAPES, ids=_id)
def test_lu_family(shape):
    a, b = _general(shape), _rhs(shape)
    # the pivots are exact (integers); so are the info outputs
    _check(torch.linalg.lu_factor_ex, a)
    _check(torch.linalg.lu, a)
    _check(lambda x: torch.lu_unpack(*torch.linalg.lu_factor(x)), a)
    lu, pivots = torch.linalg.lu_factor(a)
    for left in (True, False):
        for adjoint in (True, False):
            rhs = b if left else b.mT
            _check(
                lambda f, p, r, left=left, adjoint=adjoint: torch.linalg.lu_solve(
                    f, p, r, left=left, adjoint=adjoint
                ),
                lu, pivots, rhs,
            )  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=_id)
def test_determinants_inverse_solve(shape):
    a, b = _general(shape), _rhs(shape)
    _check(torch.linalg.det, a)
    _check(torch.linalg.slogdet, a)
    _check(torch.logdet, _spd(shape))
    # eager's LU outputs of det/slogdet: of A^T for a contiguous A, of A for a transposed view
    for op in (torch.ops.aten._linalg_det.default, torch.ops.aten._linalg_slogdet.default):
        _check(op, a)
        _check(lambda x, op=op: op(x.mT), a)
    _check(torch.linalg.inv, a)
    _check(torch.linalg.inv_ex, a)
    _check(torch.linalg.solve, a, b)
    _check(torch.linalg.solve_ex, a, b)
    _check(lambda x, y: torch.linalg.solve(x, y, left=False), a, b.mT)
    _check(torch.linalg.solve, a, b[..., 0])  # a (batch of) vector(s)


def test_solve_broadcasts_batch_dims():
    a = _general((3, 4))
    _check(torch.linalg.solve, a, _rhs((2, 3, 4), k=2))
    _check(torch.linalg.solve, _general((2, 1, 4)), _rhs((3, 4), k=2))


@pytest.mark.parametrize("shape", SHAPES, ids=_id)
def test_cholesky_family(shape):
    a, b = _spd(shape), _rhs(shape)
    for upper in (False, True):
        _check(lambda x, upper=upper: torch.linalg.cholesky(x, upper=upper), a)
        _check(lambda x, upper=upper: torch.linalg.cholesky_ex(x, upper=upper), a)
        factor = torch.linalg.cholesky(a, upper=upper)
        _check(lambda y, f, upper=upper: torch.cholesky_solve(y, f, upper=upper), b, factor)
        _check(lambda f, upper=upper: torch.cholesky_inverse(f, upper=upper), factor)


@pytest.mark.parametrize("shape", SHAPES, ids=_id)
def test_triangular_solves(shape):
    a, b = _general(shape), _rhs(shape)
    for upper in (False, True):
        for unit in (False, True):
            tri = a.triu() if upper else a.tril()
            _check(
                lambda x, y, upper=upper, unit=unit: torch.linalg.solve_triangular(
                    x, y, upper=upper, unitriangular=unit
                ),
                tri, b,
            )  # fmt: skip
            _check(
                lambda x, y, upper=upper: torch.linalg.solve_triangular(
                    x, y, upper=upper, left=False
                ),
                tri, b.mT,
            )  # fmt: skip
            for transpose in (False, True):
                _check(
                    lambda y, x, upper=upper, t=transpose, unit=unit: torch.triangular_solve(
                        y, x, upper=upper, transpose=t, unitriangular=unit
                    ),
                    b, tri,
                )  # fmt: skip


@pytest.mark.parametrize("rows,cols", [(5, 5), (7, 4), (4, 7), (1, 3)])
def test_qr_family(rows, cols):
    g = torch.Generator().manual_seed(rows * 10 + cols)
    a = torch.randn(2, rows, cols, generator=g)
    for mode in ("reduced", "complete", "r"):
        _check(lambda x, mode=mode: torch.linalg.qr(x, mode=mode), a)
    _check(torch.geqrf, a)
    compact, tau = torch.geqrf(a)
    _check(torch.linalg.householder_product, compact[..., :, : min(rows, cols)], tau)
    c = torch.randn(2, rows, 3, generator=g)
    for transpose in (False, True):
        _check(lambda x, t, y, tr=transpose: torch.ormqr(x, t, y, transpose=tr), compact, tau, c)
        _check(
            lambda x, t, y, tr=transpose: torch.ormqr(x, t, y, left=False, transpose=tr),
            compact, tau, c.mT,
        )  # fmt: skip


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_ldl_factor_and_solve(n):
    g = torch.Generator().manual_seed(n)
    a = torch.randn(4, n, n, generator=g)
    a = a + a.mT
    a[1].diagonal().zero_()  # zero diagonals: 2x2 pivots
    a[2, 0, 0] = 0.0
    ld, pivots, info = _check(torch.linalg.ldl_factor_ex, a)  # the same 1x1/2x2 pivots
    assert (pivots < 0).any() or n < 3
    b = torch.randn(4, n, 2, generator=g)
    _check(torch.linalg.ldl_solve, ld, pivots, b)
    _check(lambda x, y: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(x), y), a[3:], b[3:])


def test_qr_of_a_matrix_with_a_zero_column_below_the_diagonal():
    a = torch.tensor([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [0.0, 0.0, 4.0]])
    _check(torch.geqrf, a)  # tau = 0 for each column: H = I, as LAPACK's dlarfg
    _check(torch.linalg.qr, a)


def test_matrix_exp_scales_each_matrix_of_a_batch_as_it_needs():
    g = torch.Generator().manual_seed(0)
    # 1-norms from about 0.01 to about 20: no squaring up to five
    scales = torch.tensor([0.01, 0.3, 1.0, 3.0, 6.0]).reshape(5, 1, 1)
    a = torch.randn(5, 6, 6, generator=g) / 6 * scales
    _check(torch.linalg.matrix_exp, a, tol={"rtol": 1e-4, "atol": 1e-5})
    _check(torch.linalg.matrix_exp, torch.zeros(3, 3))
    _check(torch.linalg.matrix_exp, torch.diag(torch.tensor([-2.0, 0.5, 3.0])))


def test_matrix_exp_of_a_too_large_norm_raises_after_the_run():
    a = torch.eye(3) * 2.0**21
    with pytest.raises(RuntimeError, match="1-norm of at most 2\\^20"):
        _compiled(torch.linalg.matrix_exp, a)


def test_addbmm_cdist_pdist():
    g = torch.Generator().manual_seed(0)
    x, b1, b2 = torch.randn(4, 5, generator=g), torch.randn(3, 4, 6, generator=g), \
        torch.randn(3, 6, 5, generator=g)  # fmt: skip
    _check(torch.addbmm, x, b1, b2)
    _check(lambda s, p, q: torch.addbmm(s, p, q, beta=0.5, alpha=2.0), x, b1, b2)
    bf16 = [t.to(torch.bfloat16) for t in (x, b1, b2)]  # eager's order: rounded per batch
    _check(torch.addbmm, *bf16, tol={"rtol": 2e-2, "atol": 2e-2})
    nan = torch.full((4, 5), float("nan"))
    _check(lambda s, p, q: torch.addbmm(s, p, q, beta=0), nan, b1, b2)  # beta=0 ignores self
    u, v = torch.randn(2, 6, 3, generator=g), torch.randn(2, 4, 3, generator=g)
    for p in (0.0, 1.0, 1.5, 2.0, float("inf")):
        _check(lambda s, t, p=p: torch.cdist(s, t, p=p), u, v)
        _check(lambda s, p=p: torch.pdist(s, p=p), u[0])
    many = torch.randn(30, 3, generator=g)  # more than 25 rows: eager's matmul form
    _check(torch.cdist, many, v[0], tol={"rtol": 1e-4, "atol": 1e-4})
    _check(lambda s, t: torch.cdist(s, t, compute_mode="use_mm_for_euclid_dist"), u, v)


def test_empty_matrices_and_empty_contractions():
    _check(torch.linalg.det, torch.zeros(2, 0, 0))
    _check(torch.linalg.inv, torch.zeros(0, 0))
    _check(torch.linalg.vecdot, torch.zeros(0), torch.zeros(0))
    _check(lambda x, y: torch.linalg.vecdot(x, y, dim=0), torch.zeros(0, 0), torch.zeros(0, 0))
    _check(torch.linalg.ldl_solve, torch.zeros(0, 0), torch.zeros(0, dtype=torch.int32),
           torch.zeros(0, 5))  # fmt: skip
    _check(torch.linalg.multi_dot, [torch.zeros(2, 0), torch.zeros(0, 2)])


# ---------------------------------------------------------------------------------------------
# Singular and non-positive-definite inputs


def _singular():
    """Batch element 1 is exactly singular (its second row twice its first)."""
    a = _general((2, 3))
    a[1, 1] = 2 * a[1, 0]
    return a


def test_singular_matrices_give_eagers_info_and_values():
    a = _singular()
    _check(torch.linalg.lu_factor_ex, a)  # info 0 and 2 (1-based zero pivot)
    info = _compiled(torch.linalg.lu_factor_ex, a)[2]
    assert info.tolist() == [0, 3] or info.tolist() == torch.linalg.lu_factor_ex(a)[2].tolist()
    _check(torch.linalg.det, a)
    sign, logabs = _compiled(torch.linalg.slogdet, torch.tensor([[1.0, 2.0], [2.0, 4.0]]))
    assert sign.item() == 0 and logabs.item() == float("-inf")
    assert _compiled(torch.linalg.inv_ex, a)[1].tolist() == torch.linalg.inv_ex(a)[1].tolist()


@pytest.mark.parametrize(
    "fn",
    [torch.linalg.inv, lambda x: torch.linalg.solve(x, x[..., :1]),
     lambda x: torch.linalg.tensorinv(x[1], ind=1)],  # fmt: skip
    ids=["inv", "solve", "tensorinv"],
)
def test_singular_matrix_raises_eagers_error(fn):
    a = _singular()
    with pytest.raises(RuntimeError) as expected:
        fn(a)
    with pytest.raises(RuntimeError) as actual:
        _compiled(fn, a)
    assert str(actual.value) == str(expected.value)


def test_not_positive_definite():
    a = _spd((2, 4))
    a[1, 2, 2] = -5.0  # the leading minor of order 3 of batch element 1
    info = _check(torch.linalg.cholesky_ex, a)[1]  # L too: LAPACK's partial factor
    assert info.tolist() == [0, 3]
    _check(lambda x: torch.linalg.cholesky_ex(x, upper=True), a)
    # linalg.cholesky's check is in the graph; the deprecated torch.cholesky and
    # cholesky_inverse check inside eager's kernels, and their decompositions add the check
    singular_factor = torch.linalg.cholesky(_spd((2, 3)))
    singular_factor[1, 1, 1] = 0.0
    for fn, x in [(torch.linalg.cholesky, a), (lambda x: torch.cholesky(x), a),
                  (lambda x: torch.cholesky_inverse(x), singular_factor)]:  # fmt: skip
        with pytest.raises(RuntimeError) as expected:
            fn(x)
        with pytest.raises(RuntimeError) as actual:
            _compiled(fn, x)
        assert type(actual.value) is type(expected.value)
        assert str(actual.value) == str(expected.value)


# ---------------------------------------------------------------------------------------------
# The size cap


def test_matrices_above_the_cap_are_unsupported_with_the_size_named():
    n = neuronsim.linalg.MAX_SIZE + 1
    a = _general((n,))
    message = (
        f"aten.linalg_inv_ex.default ({n}x{n} matrices: the neuron backend unrolls linear "
        f"algebra up to {n - 1}x{n - 1}) at test_linalg.py"
    )
    with pytest.raises(neuronsim.NeuronCompileError) as error:
        _compiled(lambda x: torch.linalg.inv(x), a)
    assert message in str(error.value)


def test_matrices_above_the_cap_run_on_the_cpu_with_fallback():
    a = _general((neuronsim.linalg.MAX_SIZE + 1,))
    torch._dynamo.reset()
    fn = torch.compile(torch.linalg.det, backend="neuron", dynamic=False,
                       options={"fallback": "cpu"})  # fmt: skip
    torch.testing.assert_close(fn(a), torch.linalg.det(a), rtol=1e-4, atol=0)
    assert "aten._linalg_det.default" in neuronsim.get_fallback_ops()
    # inv's error check (with_effects) is hoisted as well when inv_ex runs on the CPU
    torch._dynamo.reset()
    inv = torch.compile(lambda x: torch.linalg.inv(x), backend="neuron", dynamic=False,
                        options={"fallback": "cpu"})  # fmt: skip
    torch.testing.assert_close(inv(a), torch.linalg.inv(a), **TOL)
    with pytest.raises(RuntimeError, match="linalg.inv: The diagonal element 1 is zero"):
        inv(torch.zeros_like(a))


# ---------------------------------------------------------------------------------------------
# Gradients: AOTAutograd's backward graphs use the same decompositions (and cdist's/pdist's
# backward kernels theirs)


@pytest.mark.parametrize(
    "fn",
    [torch.linalg.det, torch.linalg.inv, lambda a: torch.linalg.solve(a, a[..., :2] * 2.0),
     lambda a: torch.linalg.cholesky(a @ a.mT + torch.eye(a.shape[-1])),
     lambda a: torch.linalg.qr(a)[0], lambda a: torch.linalg.slogdet(a)[1],
     torch.linalg.matrix_exp,
     lambda a: torch.cdist(a, a[..., :3, :] + 0.5, p=1.5),
     lambda a: torch.cdist(a, a[..., :3, :] + 0.5, p=float("inf")),
     lambda a: torch.pdist(a[0], p=2.0) * 1.0, lambda a: torch.pdist(a[1], p=3.0) * 1.0],
    ids=["det", "inv", "solve", "cholesky", "qr", "slogdet", "matrix_exp", "cdist1.5",
         "cdistinf", "pdist2", "pdist3"],
)  # fmt: skip
def test_gradients_match_eager(fn):
    a = _general((2, 4)) * 0.5
    probe = None

    def grad(f):
        nonlocal probe
        x = a.clone().requires_grad_()
        out = f(x)
        if probe is None:
            probe = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
        return torch.autograd.grad((out * probe).sum(), x)[0]

    expected = grad(fn)
    torch._dynamo.reset()
    actual = grad(torch.compile(fn, backend="neuron", dynamic=False))
    assert neuronsim.get_fallback_ops() == {}
    torch.testing.assert_close(actual, expected, **TOL)


@pytest.mark.parametrize(
    "fn",
    [lambda x: torch.linalg.cholesky_ex(x, check_errors=True),
     lambda x: torch.linalg.inv_ex(x, check_errors=True),
     lambda x: torch.linalg.lu_factor_ex(x, check_errors=True),
     lambda x: torch.linalg.solve_ex(x, x, check_errors=True),
     lambda x: torch.linalg.ldl_factor_ex(x, check_errors=True)],
    ids=["cholesky_ex", "inv_ex", "lu_factor_ex", "solve_ex", "ldl_factor_ex"],
)  # fmt: skip
def test_ex_ops_with_check_errors_raise_as_eager(fn):
    singular = torch.zeros(2, 3, 3)
    with pytest.raises(RuntimeError) as expected:
        fn(singular)
    with pytest.raises(RuntimeError) as actual:
        _compiled(fn, singular)
    assert type(actual.value) is type(expected.value)
    assert str(actual.value) == str(expected.value)
    _check(fn, _spd((2, 3)))  # and no error where eager raises none
