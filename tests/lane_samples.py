"""Functions that tests/test_lanes.py asks tests/lanes.py's rule about: each compiles
(or runs ksc or mypy) one way, or not at all. Never called: only read."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ksbind
from ksbind.cli import main
from tests.e2e_support import built, run_python

KSC = Path("/opt/knossos/bin/ksc")


def builds_through_the_face() -> None:
    ksbind.build("m.yaml")


def builds_through_a_helper() -> None:
    builds_through_the_face()


def builds_a_session_module() -> None:
    built("examples.yaml", "examples_python")


def builds_in_a_subprocess() -> None:
    run_python("import ksbind; ksbind.build('m.yaml')")


def builds_through_the_cli() -> None:
    main(["build", "m.yaml"])


def runs_the_compiler() -> None:
    subprocess.run(["g++", "-c", "a.cpp"], check=True)


def runs_ksc() -> None:
    subprocess.run([str(KSC), "--help"], check=True)


def runs_mypy() -> None:
    subprocess.run([sys.executable, "-m", "mypy", "a.py"], check=True)


def imports_a_builder_itself() -> None:
    from ksbind.pipeline import build_spec as make

    make(ksbind.load_config("m.yaml")[0])


def renders_only() -> None:
    ksbind.render_module(ksbind.parse_ks("(edef f Float (Float))"), "m", "python")


def runs_the_cli_without_building() -> None:
    main(["schema"])
