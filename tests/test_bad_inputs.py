"""The catalogue of bad inputs in tests/bad_inputs/: each file's first line states what must happen.

``; expect: CLASS LOCATION MESSAGE-FRAGMENT`` (``#`` in YAML files). LOCATION is
``LINE[:COLUMN]`` in the case file itself, ``FILE[:LINE[:COLUMN]]`` for another
file (relative to the case), or ``-`` when it is not checked. Every case must:
raise that KsbindError subclass with that location and message, chain no
internal exception, write or change nothing, and make the CLI exit 2 with one
line on stderr. ``.ks`` cases are fed through a config that binds every function.
"""
from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

import ksbind
from ksbind import errors
from ksbind.cli import main
from ksbind.codegen.output import plan_files

CASES_DIR = Path(__file__).parent / "bad_inputs"
#: Message fragments of cases about a module's 'output:', which ``-o DIR`` overrides.
OUTPUT_PROBLEMS = ("output folder is a file", "give each module its own 'output'")
CASES = sorted(p.name for p in CASES_DIR.iterdir() if p.suffix in (".ks", ".yaml"))


@dataclass(frozen=True)
class Expect:
    error: type[errors.KsbindError]
    file: str | None
    line: int | None
    column: int | None
    fragment: str


def expectation(case: str) -> Expect:
    first = (CASES_DIR / case).read_bytes().split(b"\n", 1)[0].decode("ascii")
    marker, _, rest = first.partition("expect: ")
    assert marker.strip() in (";", "#"), f"{case}: first line must be an expect: comment"
    cls_name, where, fragment = rest.split(" ", 2)
    error = getattr(errors, cls_name)
    assert issubclass(error, errors.KsbindError)
    if where == "-":
        return Expect(error, None, None, None, fragment)
    parts = where.split(":")
    file = case if parts[0].isdigit() else parts.pop(0)
    nums = [int(p) for p in parts] + [None, None]
    return Expect(error, file, nums[0], nums[1], fragment)


def snapshot(root: Path) -> dict[str, tuple[bytes, int] | None]:
    """Every file (content, mtime) and directory under root."""
    out: dict[str, tuple[bytes, int] | None] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_dir():
            out[rel] = None
        elif p.is_file():
            out[rel] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the catalogue's data, as the working directory (locations come out relative)."""
    shutil.copytree(CASES_DIR / "data", tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def config_for(case: str, work: Path) -> str:
    shutil.copy(CASES_DIR / case, work / case)
    if case.endswith(".ks"):
        (work / "run.yaml").write_text(f"name: m\nks: {case}\n")
        return "run.yaml"
    return case


def check_error(e: errors.KsbindError, expect: Expect, work: Path) -> None:
    assert type(e) is expect.error, f"{type(e).__name__}: {e}"
    assert expect.fragment in e.message, str(e)
    # No internal exception rides along in a traceback.
    assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__), repr(e.__context__)
    if expect.file is None:
        return
    assert e.location is not None, str(e)
    assert (work / e.location.file).resolve() == (work / expect.file).resolve(), str(e)
    assert (e.location.line, e.location.column) == (expect.line, expect.column), str(e)
    assert "\n" not in str(e)


@pytest.mark.parametrize("case", CASES)
def test_bad_input(case: str, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect = expectation(case)
    config = config_for(case, workdir)
    before = snapshot(workdir)
    with pytest.raises(errors.KsbindError) as info:
        ksbind.generate(config)
    check_error(info.value, expect, workdir)
    assert snapshot(workdir) == before, "an input error wrote or changed files"

    commands = [["generate", config], ["check", config]]
    if expect.fragment not in OUTPUT_PROBLEMS:  # -o replaces the very 'output' these cases get wrong
        commands.append(["generate", config, "-o", "out"])
    for command in commands:
        assert main(command) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.endswith("\n") and err.count("\n") == 1, err
        assert err == f"ksbind: error: {info.value}\n"
        assert snapshot(workdir) == before

    if case.endswith(".ks") and not issubclass(expect.error, errors.BindingError):
        with pytest.raises(expect.error):
            ksbind.read_ks(case)
        assert main(["decls", case]) == 2 and capsys.readouterr().err.count("\n") == 1


def test_catalogue_size() -> None:
    assert len(CASES) >= 37


# ------------------------------------------------- cases that cannot live in git

def test_fifo_is_refused_not_waited_on(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo("pipe.ks")
    Path("c.yaml").write_text("name: m\nks: pipe.ks\n")
    with pytest.raises(errors.ConfigError, match="not a regular file") as info:
        ksbind.generate("c.yaml")
    assert info.value.location == errors.Location("c.yaml", 2, 5)
    with pytest.raises(errors.InputFileError, match="not a regular file"):
        ksbind.read_ks("pipe.ks")
    assert main(["decls", "pipe.ks"]) == 2
    os.mkfifo("pipe.yaml")
    assert main(["generate", "pipe.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "pipe.yaml: config file is not a regular file" in err


def test_directory_given_as_config(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "data"]) == 2
    assert capsys.readouterr().err == "ksbind: error: data: config file is a directory, expected a file\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions; "
                    "the FIFO and directory cases above cover unreadable inputs")
def test_unreadable_file(workdir: Path) -> None:
    p = Path("secret.ks")
    p.write_text("(edef f Float Float)\n")
    p.chmod(0)
    try:
        with pytest.raises(errors.InputFileError, match="cannot read declaration file: Permission denied"):
            ksbind.read_ks(p)
    finally:
        p.chmod(stat.S_IRUSR | stat.S_IWUSR)


@pytest.mark.parametrize("name", ["../escape.cpp", "/etc/passwd", "a/../../b.cpp", "a\\..\\b.cpp", ""])
def test_generated_file_names_cannot_leave_the_output_folder(tmp_path: Path, name: str) -> None:
    with pytest.raises(errors.OutputError, match="would leave the output folder"):
        plan_files(tmp_path / "out", {name: "text"})
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ injection

HOSTILE_KS = """
; Names ksc accepts whose raw spelling is not C++: only their encoded symbol may reach code.
(def [f*<x>:y,@z Float] Float ((class : Float)) 0.0)
(gdef sufrev [f*<x>:y,@z Float])
(def g Float ((a*b : Float) (c : Integer)) 0.0)
"""
HOSTILE = ("f*<x>:y,@z", "a*b", "class", "int injected")


def cpp_code(text: str) -> str:
    """C++ text with string/char literals emptied and comments removed."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
        elif text[i] in "\"'":
            quote, i = text[i], i + 1
            while text[i] != quote:
                assert text[i] != "\n", "string literal runs past the end of its line"
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append(quote * 2)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def python_code(text: str, name: str) -> str:
    """Python text's tokens other than strings and comments (and it must compile)."""
    import io
    import tokenize
    compile(text, name, "exec")
    skip = {tokenize.STRING, tokenize.COMMENT} | ({tokenize.FSTRING_START} if hasattr(tokenize, "FSTRING_START") else set())
    return " ".join(t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in skip)


@pytest.mark.parametrize("target", ["ks", "python", "torch"])
@pytest.mark.parametrize("layout", ["split", "single"])
def test_hostile_names_reach_code_only_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               target: str, layout: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hostile.ks").write_text(HOSTILE_KS)
    # A config whose own file name carries a newline and C++ (it is named in every file's stamp).
    config = tmp_path / "c\nint injected = 1;\n.yaml"
    config.write_text(f"name: m\ntarget: {target}\nlayout: {layout}\nks: hostile.ks\nbindings:\n"
                      "  - {name: f, function: '[f*<x>:y,@z Float]', vjp: f_vjp}\n"
                      "  - {name: g, function: g}\n")
    from ksbind.pipeline import prepare
    [module] = prepare(config.name)
    files = module.rendered.files
    assert files
    for name, text in files.items():
        if name.endswith((".py", ".pyi")):
            code = python_code(text, name)
        else:
            code = cpp_code(text)
        for bad in HOSTILE:
            assert bad not in code, f"{bad!r} reaches the code of {name}"
    everything = "".join(files.values())
    assert "f*<x>:y,@z" in everything  # ...while the ks name still shows, escaped, in docstrings
    assert "f$x$dx$b$8y$_$az$af" in everything  # and the encoded symbol is what C++ calls


@pytest.mark.parametrize("text", [
    "name: !!python/object/apply:os.system ['touch pwned']\nks: a.ks\n",
    "!!python/object/new:os.system [touch pwned]: 1\n",
    "name: m\nks: a.ks\nbindings: !!python/object/apply:subprocess.call [[touch, pwned]]\n",
])
def test_yaml_object_tags_are_never_constructed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a.ks").write_text("(edef f Float Float)\n")
    Path("c.yaml").write_text(text)
    with pytest.raises(errors.ConfigError, match="YAML tag .* is not allowed"):
        ksbind.load_config("c.yaml")
    assert not Path("pwned").exists()
