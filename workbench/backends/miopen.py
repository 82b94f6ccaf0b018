"""``workbench.backends.miopen``: AMD's MIOpen switches; workbench does not run on ROCm.

>>> import workbench as wb
>>> wb.backends.miopen.immediate
False
"""
from ._flags import boolean, install

install(__name__, {"immediate": boolean(False, "set_immediate_miopen")})
