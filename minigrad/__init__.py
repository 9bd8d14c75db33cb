"""minigrad: a small tensor autograd engine on numpy and numba, written to be read.

    import minigrad as mg
    x = mg.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    loss = x.softmax(axis=-1)[0, 0].log()
    loss.backward()
    print(x.grad)
"""
from . import kernels
from ._allocator import keep_freed_memory
from .autograd import Context, Function, grad
from .compile import compile  # noqa: A004  (minigrad.compile, as torch.compile)
from .creation import (  # noqa: F401  (the legacy constructors: FloatTensor, LongTensor, ...)
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    arange,
    as_tensor,
    cat,
    cdist,
    dropout,
    einsum,
    embedding,
    empty,
    empty_like,
    equal,
    eye,
    finfo,
    from_numpy,
    full,
    full_like,
    hstack,
    iinfo,
    is_tensor,
    linspace,
    logspace,
    matmul,
    meshgrid,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randint_like,
    randn,
    randn_like,
    repeat_interleave,
    stack,
    tensor,
    vstack,
    where,
    zeros,
    zeros_like,
)
from .devices import device, get_default_device, set_default_device
from .explain import explain_backward
from .grad_mode import (
    AnomalyError,
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, GradcheckReport, GradcheckWarning, gradcheck
from .kernels import get_backend, get_num_threads, set_backend, set_num_threads, use_backend
from .opcheck import find_bad_backward
from .random import Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .tensor import Size, Tensor, _write_out, get_default_dtype, set_default_dtype, set_printoptions

float32, float64, int64, bool_ = "float32", "float64", "int64", "bool"
float16, int32, int16, int8, uint8 = "float16", "int32", "int16", "int8", "uint8"
uint16, uint32, uint64, complex64, complex128 = "uint16", "uint32", "uint64", "complex64", "complex128"


def _method(name):
    def function(*args, input=None, out=None, **kwargs):
        x, args = (input, args) if input is not None else (args[0], args[1:])  # (PyTorch's input= keyword)
        result = getattr(as_tensor(x), name)(*args, **kwargs)
        return result if out is None else _write_out(name, out, result)  # (PyTorch's out=)

    function.__name__ = name
    function.__doc__ = f"`minigrad.{name}(x, ...)` is `x.{name}(...)`; see `Tensor.{name}`."
    return function


# every Tensor method that computes is also a function: minigrad.exp(x) == x.exp()
for _name in (
    "exp log sqrt abs sin cos tanh sigmoid relu gelu clip clamp maximum minimum sum mean var max min argmax "
    "argmin softmax log_softmax reshape flatten transpose permute unsqueeze squeeze expand broadcast_to "
    "split chunk masked_fill tril triu "
    "logsumexp std prod cumsum topk gather scatter_add flip repeat silu leaky_relu softplus elu erf sign floor "
    "round isnan isfinite log2 rsqrt add sub mul div pow neg floor_divide remainder numel clone"
).split():
    globals()[_name] = _method(_name)
del _name

# PyTorch's statistics, tests, sampling and dtype names (`torch.var_mean`, `torch.all(x)`, `torch.int32`, ...)
from .creation import multinomial, randint, randperm, std_mean, var_mean  # noqa: E402

for _name in "all any isclose allclose histc histogram log10 log1p expm1 sort argsort".split():
    globals()[_name] = _method(_name)
del _name

# the course API's functions that are methods too (`torch.mm(a, b)` is `a.mm(b)`, ...)
for _name in (
    "gt lt ge le eq ne t index_select amax amin norm ceil square reciprocal mm bmm mv outer dot unflatten narrow "
    "roll diag nonzero count_nonzero isinf nan_to_num median quantile unique bincount diagonal trace movedim "
    "moveaxis scatter index_add index_fill lerp addcmul addcdiv kthvalue swapaxes swapdims tile masked_select "
    "logical_not logical_and logical_or logical_xor is_floating_point is_complex unbind true_divide divide "
    "tan sinh cosh asin acos atan atan2 asinh acosh atanh arcsin arccos arctan arctan2 arcsinh arccosh arctanh "
    "trunc fix frac fmod erfinv sinc xlogy copysign heaviside clamp_min clamp_max nansum nanmean cumprod "
    "logcumsumexp cummax cummin aminmax diff bernoulli multiply subtract"
).split():
    globals()[_name] = _method(_name)
del _name

from . import accelerator, backends, cuda, linalg, nn, optim, testing  # noqa: E402
from . import distributions  # noqa: E402  (minigrad.distributions, as torch.distributions; after nn)
from . import datasets, utils  # noqa: E402  (minigrad.utils.data, as torch.utils.data)
from .nn import summary  # noqa: E402
from .ops import AxisError  # noqa: E402  (numpy's, imported where each numpy version has it)
from .serialization import CheckpointError, load, save  # noqa: E402
from .safetensors_io import load_safetensors, save_safetensors  # noqa: E402

from .nn.functional import cosine_similarity, pairwise_distance  # noqa: E402  (torch.cosine_similarity, ...)

keep_freed_memory()

__version__ = "0.1.0"

# PyTorch's dtype names. They shadow the builtins float and bool in this module only (so they come
# last), and `from minigrad import *` leaves them out.
float, double, long, bool = float32, float64, int64, bool_  # noqa: A001
__all__ = [name for name in dir() if not name.startswith("_") and name not in ("float", "bool")]
half, int, short, cfloat, cdouble = float16, int32, int16, complex64, complex128  # noqa: A001
__all__ = [name for name in __all__ if name not in ("int", "all", "any", "compile")]  # (builtins, as float and bool)
