"""Losses as modules, with PyTorch's names and `reduction` ('mean', 'sum' or 'none'): each calls
its functional twin in functional.py."""
from . import functional as F
from .module import Module


class _Loss(Module):
    _reductions = ("mean", "sum", "none")

    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in self._reductions:
            allowed = ", ".join(repr(r) for r in self._reductions[:-1]) + f" or {self._reductions[-1]!r}"
            raise ValueError(f"{type(self).__name__}: reduction must be {allowed}, got {reduction!r}")
        self.reduction = reduction

    def _register_weight(self, name, weight):
        """A weight given to the loss is a buffer, as in PyTorch: in the state_dict, and converted by .to()."""
        self.register_buffer(name, None if weight is None else F.as_tensor(weight))

    def extra_repr(self):
        return f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    """(input - target)^2, averaged ('mean'), summed ('sum') or per element ('none')."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """F.cross_entropy as a module: logits (..., C) with the class axis last (for (N, C) logits,
    PyTorch's layout too; PyTorch's (N, C, d) too, see F.cross_entropy), targets as class ids (...)
    or probabilities (rows, C); `weight` (C,): a weight per class."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(reduction)
        if size_average is not None or reduce is not None:
            raise TypeError("CrossEntropyLoss: size_average and reduce are PyTorch's deprecated arguments; use "
                            "reduction=")
        self.weight, self.ignore_index, self.label_smoothing = weight, ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               label_smoothing=self.label_smoothing, reduction=self.reduction)


class L1Loss(_Loss):
    """|input - target|, averaged ('mean'), summed ('sum') or per element ('none')."""

    def __init__(self, *, reduction="mean"):
        super().__init__(reduction)

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (d = input - target)."""

    def __init__(self, *, reduction="mean", beta=1.0):
        super().__init__(reduction)
        if beta < 0:
            raise ValueError(f"SmoothL1Loss: beta must be >= 0, got {beta}")
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)

    def extra_repr(self):
        return f"reduction={self.reduction!r}, beta={self.beta}"


class HuberLoss(_Loss):
    """0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere (d = input - target)."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        if not delta > 0:
            raise ValueError(f"HuberLoss: delta must be > 0, got {delta}")
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, self.reduction, self.delta)

    def extra_repr(self):
        return f"reduction={self.reduction!r}, delta={self.delta}"


class KLDivLoss(_Loss):
    """F.kl_div as a module: input log-probabilities, target probabilities (or log-probabilities with
    log_target=True). reduction='batchmean' gives the KL divergence per sample."""

    _reductions = ("mean", "batchmean", "sum", "none")

    def __init__(self, *, reduction="mean", log_target=False):
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class NLLLoss(_Loss):
    """F.nll_loss as a module: log-probabilities (..., C) (from LogSoftmax; class axis last, as
    CrossEntropyLoss here) and integer targets (...). LogSoftmax then NLLLoss is CrossEntropyLoss.
    weight (C,): a weight per class (a buffer)."""

    def __init__(self, weight=None, *, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.ignore_index = ignore_index
        self._register_weight("weight", weight)

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (after a sigmoid) against targets in [0, 1], the same
    shape. weight: multiplies each element's loss (a buffer)."""

    def __init__(self, weight=None, *, reduction="mean"):
        super().__init__(reduction)
        self._register_weight("weight", weight)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.reduction, weight=self.weight)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits (no sigmoid before it: this is stabler), against targets in
    [0, 1] of the same shape. weight: multiplies each element's loss; pos_weight (e.g. (C,)): the
    weight of the positive term of each class. Both are buffers."""

    def __init__(self, weight=None, *, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self._register_weight("weight", weight)
        self._register_weight("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.reduction, weight=self.weight,
                                                  pos_weight=self.pos_weight)


def _no_legacy(loss, size_average, reduce):
    if size_average is not None or reduce is not None:
        raise TypeError(f"{type(loss).__name__}: size_average and reduce are PyTorch's deprecated arguments; use "
                        "reduction=")


class MarginRankingLoss(_Loss):
    """max(0, -y (x1 - x2) + margin) for x1, x2, y of one shape; see F.margin_ranking_loss."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        _no_legacy(self, size_average, reduce)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x where y = 1, max(0, margin - x) where y = -1; see F.hinge_embedding_loss."""

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        _no_legacy(self, size_average, reduce)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1; see F.cosine_embedding_loss."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        _no_legacy(self, size_average, reduce)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(0, margin + d(a, p) - d(a, n)), d the p-norm distance; see F.triplet_margin_loss."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        _no_legacy(self, size_average, reduce)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps, self.swap,
                                     reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """0.5 (log var + (input - target)^2 / var) (+ 0.5 log(2 pi) if full), var clamped at eps; see
    F.gaussian_nll_loss. Called as loss(input, target, var)."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """e^input - target * input (log_input=True), or input - target * log(input + eps); see F.poisson_nll_loss."""

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(reduction)
        _no_legacy(self, size_average, reduce)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    """The multi-label logistic loss averaged over the C classes; weight (C,) a buffer; see
    F.multilabel_soft_margin_loss."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        _no_legacy(self, size_average, reduce)
        self._register_weight("weight", weight)

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + e^(-y x)) for targets 1 or -1; see F.soft_margin_loss."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        _no_legacy(self, size_average, reduce)

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_Loss):
    """The multi-class hinge loss, sum_{j != y} max(0, margin - x[y] + x[j])^p / C; weight (C,) a buffer;
    see F.multi_margin_loss."""

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        _no_legacy(self, size_average, reduce)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p = 1 and p = 2 are supported, got p={p}")
        self.p, self.margin = p, margin
        self._register_weight("weight", weight)

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, self.p, self.margin, self.weight, reduction=self.reduction)
