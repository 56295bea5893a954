"""Strict checks for every name that ends up in generated C++ or Python.

Nothing from a config or ks file reaches generated code unless it passed one
of these checks or is escaped as a string literal (cpp_string below; templates: its filter).
"""
from __future__ import annotations

import keyword
import re

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
char16_t char32_t class compl concept const consteval constexpr constinit const_cast
continue co_await co_return co_yield decltype default delete do double dynamic_cast
else enum explicit export extern false float for friend goto if inline int long
mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected
public register reinterpret_cast requires return short signed sizeof static
static_assert static_cast struct switch template this thread_local throw true try
typedef typeid typename union unsigned using virtual void volatile wchar_t while xor
xor_eq final override import module
""".split())

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# ksc symbols also use '$' (a GCC/Clang extension in identifiers).
_KS_SYMBOL = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


_PLAIN = re.compile(r'[ !#-\[\]-~]*')  # printable ASCII except " and \\


def cpp_string(value: object) -> str:
    """A C++ string literal for any text: quotes, backslashes, control and non-ASCII escaped."""
    text = str(value)
    if _PLAIN.fullmatch(text):  # the common case, without the per-character loop
        return f'"{text}"'
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            # Octal escapes of the UTF-8 bytes: unambiguous whatever follows.
            out.extend(f"\\{b:03o}" for b in ch.encode("utf-8"))
    out.append('"')
    return "".join(out)


def identifier_problem(name: str) -> str | None:
    """Why name cannot be a binding (a C++ and Python identifier), or None."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        return f"{name!r} is not an identifier (letters, digits and '_', not starting with a digit)"
    if name in CPP_KEYWORDS:
        return f"{name!r} is a C++ keyword"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return f"{name!r} is a Python keyword"
    if name.startswith("__") or "__" in name:
        return f"{name!r} contains '__', which C++ reserves for the implementation"
    return None


def is_ks_symbol(symbol: str) -> bool:
    """Whether a ksc C++ symbol can be spelled as a C++ identifier."""
    return bool(_KS_SYMBOL.match(symbol))


def sanitize(text: str) -> str:
    """A best-effort identifier from arbitrary text (used for derived default names)."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", text)
    out = re.sub(r"_+", "_", out).strip("_") or "f"
    return out if not out[0].isdigit() else "_" + out
