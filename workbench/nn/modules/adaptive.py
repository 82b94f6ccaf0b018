"""AdaptiveLogSoftmaxWithLoss: the efficient softmax for large vocabularies (Grave et al., 2016)."""
from collections import namedtuple

from ... import creation, ops
from .. import functional as F
from ..module import Module
from .container import ModuleList, Sequential
from .linear import Linear

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _ops():
    return ops


class AdaptiveLogSoftmaxWithLoss(Module):
    """Frequent classes in a head softmax, rarer ones in smaller clusters reached through it.

    Returns ``(output, loss)``: each target's log-probability and their negated mean.

    >>> import workbench as wb
    >>> asm = wb.nn.AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[10, 50])
    >>> out = asm(wb.randn(4, 16), wb.tensor([1, 20, 70, 99]))
    >>> out.output.shape, out.loss.shape
    (workbench.Size([4]), workbench.Size([]))
    """

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        fk = {"device": device, "dtype": dtype}
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **fk)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **fk), Linear(hsz, osz, bias=False, **fk)))

    def reset_parameters(self):
        """Re-initialise the head and every cluster's projections."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        tdim = target_.dim()
        if tdim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif tdim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = tdim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        B = target.size(0)
        tgt = target.detach().cpu().numpy()
        gather_inds = tgt.copy()
        output = creation.zeros(B, dtype=input.dtype, device=input.device)
        used = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            lo, hi = bounds[i], bounds[i + 1]
            rows = ((tgt >= lo) & (tgt < hi)).nonzero()[0]
            if rows.size == 0:
                continue
            used += rows.size
            if i == 0:
                continue
            gather_inds[rows] = self.shortlist_size + i - 1
            idx = creation.tensor(rows, device=input.device)
            rel = creation.tensor(tgt[rows] - lo, device=input.device)
            cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, idx)), dim=1)
            output = output.index_add(0, idx, cluster_logprob.gather(1, rel.unsqueeze(1)).squeeze(1))
        if used != B:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{int(tgt.min())}, {int(tgt.max())}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        gi = creation.tensor(gather_inds, device=input.device)
        output = output + head_logprob.gather(1, gi.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return _ops().cat(parts, 1)

    def log_prob(self, input):
        """Log-probabilities of every class.  >>> wb.nn.AdaptiveLogSoftmaxWithLoss(16, 100, [10, 50]).log_prob(wb.randn(4, 16)).shape  ->  workbench.Size([4, 100])"""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row (full distributions only where needed).  >>> wb.nn.AdaptiveLogSoftmaxWithLoss(16, 100, [10, 50]).predict(wb.randn(4, 16)).shape  ->  workbench.Size([4])"""
        head_output = self.head(input)
        output = head_output.argmax(1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        if bool(outside.all()):
            return self._get_full_log_prob(input, head_output).argmax(1)
        sub = self._get_full_log_prob(input[outside], head_output[outside]).argmax(1)
        return output.index_put((outside,), sub)
