"""Shows a docstring that is not valid reStructuredText as written instead of failing the build.

Docstrings here are written for ``help()`` and the editor first: plain text with doctest examples. Most
parse as reStructuredText. Two habits of plain text do not: PyTorch's in-place names (``add_``, read as a
reference to a target ``add``) and ``|x|`` (read as a substitution); those are escaped outside the
examples. A docstring that would still make docutils complain is kept verbatim, as a literal block, so
the ``-W`` build passes and the page shows what ``help()`` shows.
"""
import io
import re

from docutils.core import publish_doctree

_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[\s,.;:)\]]|$)")
_PIPE = re.compile(r"(?<!\\)\|")


def problems(text, env):
    """docutils' warnings and errors for ``text`` ('' when it parses cleanly)."""
    stream = io.StringIO()
    try:
        publish_doctree(text, settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": stream,
                                                  "env": env, "file_insertion_enabled": False})
    except Exception as e:  # a directive that needs a real Sphinx document, say
        return repr(e)
    return stream.getvalue()


def _escape(line):
    if line.lstrip().startswith((">>>", "...")) or "``" in line:
        return line
    return _PIPE.sub(r"\\|", _TRAILING_UNDERSCORE.sub(r"\\_", line))


def guard(app, what, name, obj, options, lines):
    text = "\n".join(lines)
    if not text.strip() or not problems(text, app.env):
        return
    escaped = [_escape(line) for line in lines]
    if not problems("\n".join(escaped), app.env):
        lines[:] = escaped
    else:
        lines[:] = ["::", ""] + [("   " + line) if line.strip() else "" for line in lines] + [""]


def setup(app):
    app.connect("autodoc-process-docstring", guard)
    return {"parallel_read_safe": True}
