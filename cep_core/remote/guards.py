"""Postponed remote predicates (dissertation §5.4.2; :mod:`cep_core.remote.engine`,
"Postponing keeps the matches exact"): the :class:`Guard` of a speculative step, the chains
of literals partial matches rest on (:class:`Lit`), and the partial match that rests on
them (:class:`GPM`)."""

from __future__ import annotations

from cep_core.engine.matching import PM
from cep_core.remote.source import Element

__all__ = ["GPM", "Guard", "Lit", "Postpone"]


class Postpone(Exception):
    """A look-up in postponing mode found its element missing."""

    def __init__(self, d: Element):
        self.d = d


class Guard:
    """Postponed predicates of one speculative step (``preds``: their indices in the
    plan): their bindings, the elements they read, the states the PM may reach before it
    must block (``reach``) and, once evaluated, ``value``."""

    __slots__ = ("preds", "bind", "elements", "reach", "value", "lits")

    def __init__(self, preds: list, bind: dict, elements: dict, reach: frozenset):
        self.preds, self.bind, self.elements = preds, bind, elements
        self.reach, self.value = reach, None
        self.lits: list[Lit] = []  # the literals that rest on it, until it is evaluated


class Lit:
    """A literal "``guard`` evaluates to ``holds``" on a chain of literals (``up``): a
    partial match rests on the chain from its newest literal up. Chains are shared by a
    PM's descendants; when a guard contradicts a literal, the literal and every literal
    below it (``down``) die, so a PM is dead exactly when its newest literal is."""

    __slots__ = ("guard", "holds", "up", "down", "dead")

    def __init__(self, guard: Guard, holds: bool, up: Lit | None):
        self.guard, self.holds, self.up = guard, holds, up
        self.down: list[Lit] = []
        self.dead = up is not None and up.dead
        if up is not None:
            up.down.append(self)
        if guard.value is None:
            guard.lits.append(self)
        elif guard.value != holds:
            self.dead = True

    def kill(self) -> None:
        todo = [self]
        while todo:
            lit = todo.pop()
            if not lit.dead:
                lit.dead = True
                todo.extend(lit.down)

    def open_guards(self) -> list[Guard]:
        """The guards on the chain not evaluated yet."""
        out, lit = [], self
        while lit is not None:
            if lit.guard.value is None:
                out.append(lit.guard)
            lit = lit.up
        return out


class GPM(PM):
    """A partial match resting on guards: ``cond``, its newest :class:`Lit` (None: on
    nothing), ``waited``, the ℓ_fetch of its steps so far (Eq. 2.3), and ``payload``,
    the remote elements it has read (kept with ``RemoteConfig.payload``)."""

    __slots__ = ("cond", "waited", "payload")

    def __init__(self, state, bind, first_t, parent=None):
        super().__init__(state, bind, first_t, parent)
        self.cond: Lit | None = None
        self.waited = 0.0
        self.payload: tuple = ()

    def rest_on(self, guard: Guard, holds: bool) -> None:
        self.cond = Lit(guard, holds, self.cond)

    @property
    def dead(self) -> bool:
        return self.cond is not None and self.cond.dead

    def __getstate__(self):
        return (super().__getstate__(), self.cond, self.waited, self.payload)

    def __setstate__(self, s):
        super().__setstate__(s[0])
        self.cond, self.waited, self.payload = s[1], s[2], s[3]
