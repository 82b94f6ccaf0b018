"""PyTorch's function spellings of Tensor methods: ``torch.relu_(x)`` is ``x.relu_()``, ``torch.detach(x)``
is ``x.detach()``. Each forwards to the method, so the method (and its autograd) is the one implementation.

>>> import workbench as wb
>>> x = wb.tensor([-1.0, 4.0])
>>> wb.relu_(x) is x
True
>>> x
tensor([0., 4.])
"""

_NAMES = ("abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ as_strided_ asin_ asinh_ "
          "atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ detach detach_ exp2_ exp_ "
          "expm1_ fill_ fix_ floor_ frac_ gcd_ is_inference lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ "
          "reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_").split()


def _form(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(*args, **kwargs)``, PyTorch's function form of the Tensor method."
    return fn


globals().update({_n: _form(_n) for _n in _NAMES})
__all__ = list(_NAMES)
