"""Weight averaging: AveragedModel (SWA or EMA copies of a model), update_bn, and the SWALR schedule."""
import itertools
import math
import warnings
from copy import deepcopy

from .. import _backend, creation
from .._backend import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..nn.module import Module
from ..nn.modules.normalization import _BatchNorm
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _copy_into(dst, src):
    dst._data[...] = _backend.to_device(src._data, dst.device).astype(dst._data.dtype, copy=False)
    dst._vbox[0] += 1


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place exponential moving average over lists of tensors: ema = lerp(ema, current, 1 - decay).

    >>> import workbench as wb
    >>> ema = wb.optim.swa_utils.AveragedModel(wb.nn.Linear(2, 2), multi_avg_fn=get_ema_multi_avg_fn(0.9))
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    def ema_update(ema_param_list, current_param_list, _):
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            a, b = p_ema._data, _backend.to_device(p_model._data, p_ema.device)
            if a.dtype.kind in "fc":
                tmp = b - a  # lerp with weight 1 - decay, as torch._foreach_lerp_
                w = 1 - decay
                if w < 0.5:
                    tmp *= w
                    a += tmp
                else:
                    tmp *= 1 - w
                    a[...] = b - tmp
            else:
                a[...] = a * decay + b * (1 - decay)
            p_ema._vbox[0] += 1

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running mean over lists of tensors: avg += (current - avg) / (n + 1).

    >>> import workbench as wb
    >>> swa = wb.optim.swa_utils.AveragedModel(wb.nn.Linear(2, 2), multi_avg_fn=get_swa_multi_avg_fn())
    """

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = float(num_averaged)
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            a = p_avg._data
            tmp = _backend.to_device(p_model._data, p_avg.device) - a
            if tmp.dtype.kind in "fc":
                tmp *= 1.0 / (n + 1)
            else:  # integer buffers (num_batches_tracked): CuPy's 0-d results refuse an in-place float multiply
                tmp = tmp * (1.0 / (n + 1))
            a += tmp.astype(a.dtype, copy=False)
            p_avg._vbox[0] += 1

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An exponential moving average of one tensor: decay * ema + (1 - decay) * current.

    >>> import workbench as wb
    >>> get_ema_avg_fn(0.5)(wb.zeros(1), wb.ones(1), 1)
    tensor([0.5000])
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """A running mean of one tensor: avg + (current - avg) / (n + 1).

    >>> import workbench as wb
    >>> get_swa_avg_fn()(wb.zeros(1), wb.ones(1), 1)
    tensor([0.5000])
    """

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are the running average (SWA) or EMA of ``model``'s.

    >>> import workbench as wb
    >>> net = wb.nn.Linear(2, 1)
    >>> swa = wb.optim.swa_utils.AveragedModel(net)
    >>> swa.update_parameters(net); int(swa.n_averaged)
    1
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", creation.tensor(0, dtype=_dt.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold ``model``'s current parameters (and buffers with use_buffers) into the average."""
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.parameters()), list(model.parameters())
        n = int(self.n_averaged)
        with no_grad():
            if n == 0:
                for a, b in zip(mine, theirs):
                    _copy_into(a, b)
            elif self.avg_fn is None:
                (self.multi_avg_fn or get_swa_multi_avg_fn())(mine, theirs, self.n_averaged)
            else:
                for a, b in zip(mine, theirs):
                    _copy_into(a, self.avg_fn(a.detach(), b.detach().to(a.device), self.n_averaged))
            if not self.use_buffers:
                for a, b in zip(self.module.buffers(), model.buffers()):
                    _copy_into(a, b)
        self.n_averaged._data += 1
        self.n_averaged._vbox[0] += 1


def update_bn(loader, model, device=None):
    """Recompute every BatchNorm's running statistics with one pass over ``loader`` (after averaging).

    >>> import workbench as wb
    >>> net = wb.nn.Sequential(wb.nn.Linear(2, 2), wb.nn.BatchNorm1d(2))
    >>> update_bn([wb.randn(4, 2) for _ in range(3)], net); int(net[1].num_batches_tracked)
    3
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # a cumulative average over the pass
    with no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for module, m in momenta.items():
        module.momentum = m
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to ``swa_lr`` over ``anneal_epochs`` (cosine or linear), then hold it.

    >>> import workbench as wb
    >>> opt = wb.optim.SGD([wb.nn.Parameter(wb.ones(1))], lr=1.0)
    >>> s = SWALR(opt, swa_lr=0.1, anneal_epochs=2, anneal_strategy="linear")
    >>> opt.step(); s.step(); [round(x, 4) for x in s.get_last_lr()]
    [0.55]
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        """Every attribute except the optimizer and the annealing function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Restore what ``state_dict`` returned."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
