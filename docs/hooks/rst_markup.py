"""The docstrings' reStructuredText in the API reference's Markdown: a griffe extension.

The numpydoc docstrings are written for Sphinx; mkdocstrings reads them as Markdown, where
double backquotes are code as they are in Sphinx, but two pieces of markup would show as
text:

- roles, which name other objects (``:func:`compile```, ``:class:`~cep_core.query.Session```,
  ``:meth:`flush```): each becomes the code of its name linked to the object's entry when
  the site shows it (an optional cross-reference of mkdocs-autorefs: an object the
  reference does not show, a private helper, stays plain code and is no broken link).
  ``~`` shows the last part of the name, as in Sphinx; a name without a dot is looked up
  from the docstring's object outwards (a method's class, then its module);
- a paragraph's closing ``::`` before an indented literal block (``In a notebook::``),
  which Sphinx shows as ``:``.
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|meth|class|mod|data|attr|exc|obj|const):`(~?)([\w.]+)(\(\))?`")
LITERAL = re.compile(r"(?<=\S)::(?=\n[ \t]*\n)")  # "text::" then a blank line


def identifier(name: str, obj: griffe.Object) -> str:
    """The full path of ``name`` as the docstring of ``obj`` writes it: a dotted name as it
    is, a bare one the member of the nearest of ``obj`` and its parents that has it.

    >>> module = griffe.Module("m")
    >>> module.set_member("f", griffe.Function("f"))
    >>> module.set_member("C", griffe.Class("C"))
    >>> module["C"].set_member("g", griffe.Function("g"))
    >>> identifier("f", module["C"]["g"]), identifier("g", module["C"]["g"])
    ('m.f', 'm.C.g')
    >>> identifier("os.path", module), identifier("nowhere", module)
    ('os.path', 'nowhere')
    """
    if "." in name:
        return name
    scope: griffe.Object | None = obj
    while scope is not None:
        if name in scope.members:
            return f"{scope.path}.{name}"
        scope = scope.parent
    return name


def markdown(text: str, obj: griffe.Object) -> str:
    """A docstring's text (of ``obj``) with each role an optional cross-reference to its
    object and each literal block's ``::`` a colon.

    >>> markdown("In a notebook::\\n\\n    run()\\n", griffe.Module("m"))
    'In a notebook:\\n\\n    run()\\n'

    >>> markdown("See :func:`~a.b.run` and :meth:`x.y()`.", griffe.Module("m"))
    'See <autoref identifier="a.b.run" optional><code>run</code></autoref> and \
<autoref identifier="x.y" optional><code>x.y()</code></autoref>.'
    """

    def link(match: re.Match) -> str:
        tilde, name, call = match[1], match[2], match[3] or ""
        shown = (name.rsplit(".", 1)[-1] if tilde else name) + call
        return (f'<autoref identifier="{identifier(name, obj)}" optional>'
                f"<code>{shown}</code></autoref>")

    return LITERAL.sub(":", ROLE.sub(link, text))


class RstMarkup(griffe.Extension):
    """Rewrites every docstring (:func:`markdown`) once griffe has built the object tree."""

    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None and not obj.is_alias:
            obj.docstring.value = markdown(obj.docstring.value, obj)
