"""Loss modules: each holds its options and calls the nn.functional loss of the same name."""
import math
import warnings

from .. import functional as F
from ..module import Module
from .linear import Linear


def _legacy_reduction(size_average, reduce):
    # PyTorch's deprecated size_average/reduce pair, mapped onto reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    r = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='{}' instead.".format(r),
                  UserWarning, stacklevel=3)
    return r


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.weight = weight


class L1Loss(_Loss):
    """Mean absolute error.  >>> wb.nn.L1Loss()(wb.zeros(2), wb.ones(2))  ->  tensor(1.)"""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error.  >>> wb.nn.MSELoss()(wb.zeros(2), wb.full((2,), 2.0))  ->  tensor(4.)"""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities.  >>> wb.nn.NLLLoss()(wb.zeros(2, 3), wb.tensor([0, 2]))  ->  tensor(0.)"""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax + NLL, with class weights, ignore_index and label smoothing.

    >>> import workbench as wb
    >>> wb.nn.CrossEntropyLoss()(wb.zeros(2, 4), wb.tensor([1, 3]))
    tensor(1.3863)
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood.  >>> wb.nn.PoissonNLLLoss()(wb.zeros(2), wb.ones(2))  ->  tensor(1.)"""

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood with a predicted variance.  >>> wb.nn.GaussianNLLLoss()(wb.zeros(2), wb.ones(2), wb.ones(2))  ->  tensor(0.5000)"""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities from a target.  >>> wb.nn.KLDivLoss(reduction="batchmean")  ->  KLDivLoss()"""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities.  >>> wb.nn.BCELoss()(wb.full((2,), 0.5), wb.ones(2))  ->  tensor(0.6931)"""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross-entropy, numerically stable; ``pos_weight`` weighs positives.

    >>> import workbench as wb
    >>> wb.nn.BCEWithLogitsLoss()(wb.zeros(2), wb.ones(2))
    tensor(0.6931)
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)
        self.weight = weight
        self.pos_weight = pos_weight

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x for y = 1, max(0, margin - x) for y = -1.  >>> wb.nn.HingeEmbeddingLoss()(wb.tensor([0.3, 0.2]), wb.tensor([1., -1.]))  ->  tensor(0.5500)"""

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss.  >>> wb.nn.MultiLabelMarginLoss()(wb.tensor([[0.1, 0.2, 0.4, 0.8]]), wb.tensor([[3, 0, -1, 1]]))  ->  tensor(0.8500)"""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below ``beta``, absolute error above.  >>> wb.nn.SmoothL1Loss()(wb.zeros(1), wb.ones(1))  ->  tensor(0.5000)"""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below ``delta``, delta-scaled absolute error above.  >>> wb.nn.HuberLoss()(wb.tensor([0., 0.]), wb.tensor([0.5, 2.]))  ->  tensor(0.8125)"""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(None, None, reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-y x)).  >>> wb.nn.SoftMarginLoss()(wb.zeros(1), wb.ones(1))  ->  tensor(0.6931)"""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class binary cross-entropy on logits, averaged over classes.  >>> wb.nn.MultiLabelSoftMarginLoss()(wb.zeros(1, 2), wb.tensor([[1., 0.]]))  ->  tensor(0.6931)"""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) for y = 1, max(0, cos - margin) for y = -1.  >>> wb.nn.CosineEmbeddingLoss()(wb.tensor([[1., 0.]]), wb.tensor([[0., 1.]]), wb.tensor([1]))  ->  tensor(1.)"""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """max(0, -y (x1 - x2) + margin).  >>> wb.nn.MarginRankingLoss()(wb.tensor([1., 2.]), wb.tensor([2., 1.]), wb.tensor([1., 1.]))  ->  tensor(0.5000)"""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss.  >>> wb.nn.MultiMarginLoss()(wb.zeros(2, 3), wb.tensor([0, 1]))  ->  tensor(0.6667)"""

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance.  >>> wb.nn.TripletMarginLoss()(wb.zeros(1, 2), wb.ones(1, 2), wb.zeros(1, 2))  ->  tensor(2.4142)"""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with a custom distance function.  >>> wb.nn.TripletMarginWithDistanceLoss()(wb.zeros(1, 2), wb.ones(1, 2), wb.zeros(1, 2))  ->  tensor(2.4142)"""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss.  >>> wb.nn.CTCLoss()(wb.zeros(3, 1, 3).log_softmax(2), wb.tensor([[1, 2]]), [3], [2])  ->  tensor(0.8432)"""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(None, None, reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class NLLLoss2d(NLLLoss):
    """Deprecated alias of NLLLoss for (N, C, H, W) input.  >>> wb.nn.NLLLoss2d()(wb.zeros(1, 3, 2, 2), wb.zeros(1, 2, 2).long())  ->  tensor(0.)"""


class LinearCrossEntropyLoss(_WeightedLoss):
    """A classifier head and its cross-entropy in one: cross_entropy(linear(input), target).

    >>> import workbench as wb
    >>> head = wb.nn.LinearCrossEntropyLoss(8, 5)
    >>> head(wb.randn(4, 8), wb.tensor([0, 1, 4, 2])).shape
    workbench.Size([])
    """

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes), bias=bias, device=device,
                             dtype=dtype)
        self.options = options

    def forward(self, input, target):
        w = self.linear.weight.reshape((self.num_classes, *self.out_features, self.linear.in_features))
        b = self.linear.bias
        b = b.reshape((self.num_classes, *self.out_features)) if b is not None else None
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
