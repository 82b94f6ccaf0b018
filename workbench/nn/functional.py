"""workbench.nn.functional: PyTorch's torch.nn.functional, gathered from the op families.

Each function lives with its primitives in ``workbench/ops`` (conv, activation, normalization, loss,
attention, shape); this module is the namespace users import as ``F``.

>>> import workbench as wb
>>> import workbench.nn.functional as F
>>> F.relu(wb.tensor([-1.0, 2.0]))
tensor([0., 2.])
"""
from ..ops.activation import (alpha_dropout, celu, celu_, dropout, dropout1d, dropout2d, dropout3d, elu, elu_,
                              feature_alpha_dropout, gelu, glu, gumbel_softmax, hardshrink, hardsigmoid, hardswish,
                              hardtanh, hardtanh_, leaky_relu, leaky_relu_, log_softmax, logsigmoid, mish, normalize,
                              prelu, relu, relu6, relu_, rrelu, rrelu_, selu, selu_, sigmoid, silu, softmax, softmin,
                              softplus, softshrink, softsign, tanh, tanhshrink, threshold, threshold_)
from ..ops.attention import multi_head_attention_forward, scaled_dot_product_attention
from ..ops.conv import (conv1d, conv2d, conv3d, conv_tbc, conv_transpose1d, conv_transpose2d, conv_transpose3d, fold,
                        unfold)
from ..ops.linear import bilinear, linear
from ..ops.pool import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d,
                        adaptive_max_pool1d_with_indices, adaptive_max_pool2d, adaptive_max_pool2d_with_indices,
                        adaptive_max_pool3d, adaptive_max_pool3d_with_indices, avg_pool1d, avg_pool2d, avg_pool3d,
                        fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
                        fractional_max_pool3d_with_indices, lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d,
                        max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices, max_pool3d,
                        max_pool3d_with_indices, max_unpool1d, max_unpool2d, max_unpool3d)
from ..ops.resample import (affine_grid, channel_shuffle, grid_sample, interpolate, native_channel_shuffle,
                            pixel_shuffle, pixel_unshuffle, upsample, upsample_bilinear, upsample_nearest)
from ..ops.loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss,
                        cosine_similarity, cross_entropy, ctc_loss, embedding, embedding_bag, gaussian_nll_loss,
                        hinge_embedding_loss, huber_loss, kl_div, l1_loss, linear_cross_entropy, margin_ranking_loss,
                        mse_loss, multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss, nll_loss,
                        one_hot, pairwise_distance, pdist, poisson_nll_loss, smooth_l1_loss, soft_margin_loss,
                        triplet_margin_loss, triplet_margin_with_distance_loss)
from ..ops.normalization import batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, rms_norm
from ..ops.pad import pad

from ..ops._numpy_names import numpy_names as _numpy_names

# PyTorch binds these two in C++, so its argument parser takes NumPy's axis=/keepdims= for them too
cosine_similarity, pairwise_distance = _numpy_names(cosine_similarity), _numpy_names(pairwise_distance)

__all__ = [n for n in dir() if not n.startswith("_")]
