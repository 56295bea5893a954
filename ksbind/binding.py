"""The select step: which declared functions become which Python names.

A Binding pairs a Python name with a primal FunctionDecl and, optionally, its
vjp (the ``[sufrev ...]`` decl) under a second name. Every name is checked
here, so renderers can trust them.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ksbind.errors import BindingError, KsbindError, Location, closest, warn
from ksbind.lang.identifiers import (
    CPP_KEYWORDS,
    identifier_problem,
    is_ks_symbol,
    sanitize,
)
from ksbind.lang.model import FunctionDecl, NotAStructuredNameError, StructuredName
from ksbind.spec import GIL_POLICIES, MODES, RESERVED_NAMES, VJP_KINDS, Binding, BindingSpec, VjpFrom


def select_bindings(decls: Sequence[FunctionDecl], specs: Sequence[BindingSpec] | None = None,
                    where: Location | None = None,
                    own: Callable[[FunctionDecl], bool] | None = None,
                    crossing_problem: Callable[[FunctionDecl], str | None] | None = None) -> list[Binding]:
    """Resolve binding specs against decls; None binds every base function that ``own``
    accepts (all of them when ``own`` is None): the user's, not a prelude's, and skips
    with a warning each one whose values cannot cross (``crossing_problem``: the target's)."""
    by_name = {d.name: d for d in decls}
    if specs is None:
        bindings = _default_bindings([d for d in decls if own is None or own(d)], by_name, where,
                                     crossing_problem)
    else:
        plain = plain_name_index(decls)  # built once: resolving N specs stays O(N)
        bindings = [_resolve(spec, decls, by_name, plain) for spec in specs]
    check_bindings(bindings)
    return bindings


def _symbol_clash(d: FunctionDecl, other: FunctionDecl) -> str | None:
    # ksc gives [f (Tuple T)] and [f T] one symbol; two C++ signatures for it cannot link.
    if other.name != d.name and (other.cpp_return_type, other.cpp_param_types) != (
            d.cpp_return_type, d.cpp_param_types):
        return (f"{d.name} and {other.name} share the C++ symbol {d.cpp_symbol!r} (ksc drops the "
                "brackets of a one-element tuple) but have different C++ signatures; bind only one")
    return None


def check_bindings(bindings: Iterable[Binding]) -> None:
    """Names valid and unique; functions callable from Python."""
    seen: dict[str, Location | None] = {}
    symbols: dict[str, FunctionDecl] = {}
    for b in bindings:
        names = [b.name] + [n for n in (b.vjp_name, b.jvp_name) if n is not None]
        for name in names:
            problem = identifier_problem(name)
            if problem:
                raise BindingError(f"binding name {problem}", b.location)
            if name in RESERVED_NAMES or name.startswith("Tensor_"):
                raise BindingError(f"binding name {name!r} is reserved by the generated module", b.location)
            if name in seen:
                raise BindingError(
                    f"duplicate binding name {name!r} (first bound at {seen[name] or 'an earlier binding'})",
                    b.location,
                )
            seen[name] = b.location
        if b.release_gil not in GIL_POLICIES:
            raise BindingError(f"unknown release_gil {b.release_gil!r}{closest(b.release_gil, GIL_POLICIES)}; "
                               f"expected one of {', '.join(GIL_POLICIES)}", b.location)
        if b.mode not in MODES:
            raise BindingError(f"unknown mode {b.mode!r}{closest(b.mode, MODES)}; expected one of "
                               f"{', '.join(MODES)}", b.location)
        for d in b.decls:
            _check_callable(d, b.location)
            clash = _symbol_clash(d, symbols.setdefault(d.cpp_symbol, d))
            if clash:
                raise BindingError(clash, b.location)


def _check_callable(d: FunctionDecl, where: Location | None) -> None:
    for t in list(d.params) + [d.return_type]:
        reason = t.unbindable_reason
        if reason:
            raise BindingError(f"{d.name} cannot be bound: {reason}", where or d.location)
    if not is_ks_symbol(d.cpp_symbol) or d.cpp_symbol in CPP_KEYWORDS:
        raise BindingError(
            f"{d.name} has the C++ symbol {d.cpp_symbol!r}, which is not a C++ identifier", where or d.location
        )


def _default_bindings(decls: Sequence[FunctionDecl], by_name: dict[StructuredName, FunctionDecl],
                      where: Location | None,
                      crossing_problem: Callable[[FunctionDecl], str | None] | None = None) -> list[Binding]:
    """Every base function, under its own name where it can be one.

    Defaults never sink a module: a name that cannot be a binding (a keyword such
    as ksc's prelude's ``not``) gets a cleaned one, and a function that cannot be
    bound at all is skipped, each with a one-line warning. Explicit bindings stay strict.
    """
    bases = []
    symbols: dict[str, FunctionDecl] = {}
    for d in decls:
        if d.name.is_derived:
            continue
        reason = (_uncallable_reason(d) or (crossing_problem(d) if crossing_problem else None)
                  or _symbol_clash(d, symbols.setdefault(d.cpp_symbol, d)))
        if reason:
            warn(f"{d.location or where}: not binding {d.name} by default: {reason}")
            continue
        bases.append(d)
    counts: dict[str, int] = {}
    for d in bases:
        counts[d.name.name] = counts.get(d.name.name, 0) + 1
    # Functions keep their own name when it is unique and valid; the names ksbind makes up
    # (cleaned, overloads, vjps) are then made distinct from every other, so defaults never clash.
    taken = {d.name.name for d in bases if counts[d.name.name] == 1 and _default_name_problem(d.name.name) is None}
    out = []
    for d in bases:
        own = d.name.name
        if counts[own] == 1 and own in taken:
            name = own
        elif counts[own] == 1:
            name = _unused(_clean(own), taken)
            warn(f"{d.location or where}: binding {d.name} as {name!r}: {_default_name_problem(own)}")
        else:  # overloads of one ks name get the symbol as a distinguishing suffix
            name = _unused(_clean(d.cpp_symbol.replace("$", "_")), taken)
        vjp = declared_vjp(d.name, by_name)
        vjp_name = _unused(_clean(f"{name}_vjp"), taken) if vjp else None
        # Located at the declaration: that is what a user fixes when a default binding is bad.
        out.append(Binding(name, d, vjp_name, vjp, "plain", d.location or where))
    return out


def declared_vjp(primal: StructuredName, by_name: dict[StructuredName, FunctionDecl],
                 vjp_from: VjpFrom = "auto") -> FunctionDecl | None:
    """The declared vjp of a function: [sufrev F], else [rev F] (auto), or the one asked for."""
    kinds = VJP_KINDS if vjp_from == "auto" else (vjp_from,)
    for kind in kinds:
        found = by_name.get(StructuredName.derived(kind, primal))
        if found is not None:
            return found
    return None


def _default_name_problem(name: str) -> str | None:
    problem = identifier_problem(name)
    if problem is None and (name in RESERVED_NAMES or name.startswith("Tensor_")):
        problem = f"{name!r} is reserved by the generated module"
    return problem


def _clean(name: str) -> str:
    """A valid binding name from any text: sanitized, then suffixed or prefixed until it is one."""
    out = sanitize(name)
    for candidate in (out, out + "_", "ks_" + out):
        if _default_name_problem(candidate) is None:
            return candidate
    return "ks_f"


def _uncallable_reason(d: FunctionDecl) -> str | None:
    try:
        _check_callable(d, d.location)
    except BindingError as e:
        return e.message
    return None


def _unused(name: str, taken: set[str]) -> str:
    """name, or name_2, name_3... whichever is not taken yet; marks it taken."""
    candidate, k = name, 2
    while candidate in taken or candidate in RESERVED_NAMES:
        candidate, k = f"{name.rstrip('_') or name}_{k}", k + 1
    taken.add(candidate)
    return candidate


def _resolve(spec: BindingSpec, decls: Sequence[FunctionDecl],
             by_name: dict[StructuredName, FunctionDecl],
             plain: dict[str, list[FunctionDecl]] | None = None) -> Binding:
    decl = find_function(spec.function or spec.name, decls, by_name, spec.location, plain)
    vjp_decl = None
    if spec.vjp is not None:
        vjp_decl = declared_vjp(decl.name, by_name, spec.vjp_from)
        if vjp_decl is None:
            # Not declared (no .kso yet): its signature follows from the primal's.
            try:
                vjp_decl = decl.derive("sufrev" if spec.vjp_from == "auto" else spec.vjp_from)
            except KsbindError as e:
                raise BindingError(f"cannot bind a vjp for {decl.name}: {e.message}", spec.location) from None
    jvp_decl = None
    if spec.jvp is not None:
        jvp_decl = by_name.get(StructuredName.derived("fwd", decl.name))
        if jvp_decl is None:
            try:
                jvp_decl = decl.derive("fwd")
            except KsbindError as e:
                raise BindingError(f"cannot bind a jvp for {decl.name}: {e.message}", spec.location) from None
    return Binding(spec.name, decl, spec.vjp, vjp_decl, spec.mode, spec.location, spec.release_gil, spec.long_call,
                   spec.result_shape, spec.mutates, spec.jvp, jvp_decl)


def plain_name_index(decls: Sequence[FunctionDecl]) -> dict[str, list[FunctionDecl]]:
    """Base functions by plain name, in declaration order."""
    index: dict[str, list[FunctionDecl]] = {}
    for d in decls:
        if not d.name.is_derived:
            index.setdefault(d.name.name, []).append(d)
    return index


def find_function(ref: str, decls: Sequence[FunctionDecl], by_name: dict[StructuredName, FunctionDecl],
                  where: Location | None, plain: dict[str, list[FunctionDecl]] | None = None) -> FunctionDecl:
    """A decl by structured name text (``[f Float]``) or unique plain name."""
    ref = ref.strip()
    if ref.startswith("["):
        name = parse_structured_name(ref, where)
        if name in by_name:
            return by_name[name]
        raise BindingError(f"no function {name} is declared{_suggest_types(name, decls) or _suggest(str(name), decls)}",
                           where)
    matches = (plain if plain is not None else plain_name_index(decls)).get(ref, [])
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise BindingError(f"no function named {ref!r} is declared{_suggest(ref, decls)}", where)
    options = ", ".join(str(d.name) for d in matches)
    raise BindingError(f"{ref!r} is ambiguous: it names {options}; write the structured name", where)


def parse_structured_name(text: str, where: Location | None) -> StructuredName:
    """A binding's ``[f T]`` reference; any problem is a BindingError at the binding."""
    try:
        return StructuredName.parse(text, where.file if where else "<binding>")
    except NotAStructuredNameError:
        raise BindingError(f"expected one structured name such as [f (Vec Float)], found {text!r}", where) from None
    except KsbindError as e:
        raise BindingError(f"bad function reference {text!r}: {e.message}", where) from None


def _suggest_types(name: StructuredName, decls: Sequence[FunctionDecl]) -> str:
    """The same function at the types it is declared at (the user's own first, as declared), when it is."""
    same = [d for d in decls if d.name.is_derived == name.is_derived and d.name.name == name.name
            and d.name != name and (not name.is_derived or d.name.base_name.name == name.base_name.name)]
    if not same:
        return ""
    same.sort(key=lambda d: d.origin != "def")  # a def (the user's) before a prelude's edefs
    if len(same) == 1:
        return f" (did you mean {str(same[0].name)!r}? {name.name} is declared at that type only)"
    types = ", ".join(repr(str(d.name)) for d in same[:4]) + (", ..." if len(same) > 4 else "")
    return f" (did you mean one of {types}? the types {name.name} is declared at)"


def _suggest(ref: str, decls: Sequence[FunctionDecl]) -> str:
    names = {d.name.name for d in decls if not d.name.is_derived} | {str(d.name) for d in decls}
    return closest(ref, names)

