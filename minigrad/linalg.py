"""minigrad.linalg, as torch.linalg: norms, the inverse and the determinant of (batches of) square
matrices, each differentiable.

    A⁻¹:    forward np.linalg.inv;   d(A⁻¹) = −A⁻¹ dA A⁻¹,   so   dA = −A⁻ᵀ g A⁻ᵀ
    det A:  forward np.linalg.det;   d(det A) = tr(adj(A) dA), so dA = g · adj(A)ᵀ

adj(A) = det(A) A⁻¹ where A is invertible; `Det` computes it from the SVD instead, so a singular
matrix (det 0) still gets its gradient, which is defined there (for a 2x2 [[a, b], [c, d]] it is
[[d, −c], [−b, a]]).
"""
import numbers

import numpy as np

from .autograd import Function
from .creation import as_tensor

__all__ = ["norm", "vector_norm", "matrix_norm", "inv", "det"]


def _square(op, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{op}: expected square matrices (..., n, n), got shape {a.shape}")
    if a.dtype.kind != "f":
        raise TypeError(f"{op}: expected float matrices, got {a.dtype}")


class Inv(Function):
    """A⁻¹ of each square matrix A (..., n, n)."""

    @staticmethod
    def forward(ctx, a):
        _square("inv", a)
        try:
            out = np.linalg.inv(a)
        except np.linalg.LinAlgError:
            raise np.linalg.LinAlgError(f"inv: a matrix of shape {a.shape} is singular (its determinant is 0), so "
                                        "it has no inverse") from None
        ctx.save_for_backward(out)
        return out

    rule = "B = A⁻¹: dB = −B dA B, so dA = −Bᵀ g Bᵀ"

    @staticmethod
    def backward(ctx, g):
        (b,) = ctx.saved_tensors
        bt = np.swapaxes(b, -1, -2)
        return -(bt @ g @ bt)


def _adjugate(a):
    """adj(A) (..., n, n), with adj(A) A = det(A) I, from the SVD A = U S Vᵀ: adj(A) = det(U) det(V)
    V diag(∏_{j≠i} s_j) Uᵀ, which needs no division, so it is right for singular A too."""
    u, s, vt = np.linalg.svd(a)
    n = s.shape[-1]
    others = np.stack([np.prod(np.delete(s, i, axis=-1), axis=-1) for i in range(n)], axis=-1)  # ∏_{j≠i} s_j
    sign = np.linalg.det(u) * np.linalg.det(vt)
    return sign[..., None, None] * (np.swapaxes(vt, -1, -2) * others[..., None, :]) @ np.swapaxes(u, -1, -2)


class Det(Function):
    """det A of each square matrix A (..., n, n) -> (...)."""

    @staticmethod
    def forward(ctx, a):
        _square("det", a)
        ctx.save_for_backward(a)
        return np.asarray(np.linalg.det(a))

    rule = "d(det A) = tr(adj(A) dA): dA = g · adj(A)ᵀ (adj from the SVD: right at singular A too)"

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (np.asarray(g)[..., None, None] * np.swapaxes(_adjugate(a), -1, -2)).astype(a.dtype)


def inv(A):
    """The inverse of each square matrix (..., n, n)."""
    return Inv.apply(as_tensor(A))


def det(A):
    """The determinant of each square matrix (..., n, n) -> (...)."""
    return Det.apply(as_tensor(A))


def vector_norm(x, ord=2, dim=None, keepdim=False):
    """The p-norm of x's elements (all of them, or along `dim`): `Tensor.norm`."""
    return as_tensor(x).norm(ord, dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False):
    """The Frobenius norm of each matrix (the square root of its squares' sum); other orders (the
    nuclear and spectral norms) are not supported."""
    if ord != "fro":
        raise NotImplementedError(f"matrix_norm: ord={ord!r} is not supported, only 'fro'")
    return as_tensor(A).norm("fro", tuple(dim), keepdim)


def norm(x, ord=None, dim=None, keepdim=False):
    """torch.linalg.norm: with ord None, the 2-norm of the vector (of every element, flattened,
    without a dim), which for a matrix is its Frobenius norm; 'fro' too; a number: a vector norm
    along `dim` (one dim, or the flattened tensor)."""
    x = as_tensor(x)
    if ord is None or ord == "fro":
        return x.norm(2 if ord is None else "fro", dim, keepdim)
    if isinstance(ord, numbers.Real) and (dim is None or isinstance(dim, numbers.Integral) or len(dim) == 1):
        return x.norm(ord, dim, keepdim)
    raise NotImplementedError(f"linalg.norm: ord={ord!r} over the dims {dim} (a matrix norm) is not supported; "
                              "use ord=None or 'fro'")
