"""Builds ks_softsign's two ksbind modules into its wheel (see README.md)."""
from setuptools import setup

from ksbind.setuptools import BuildExt, KsbindExtension

setup(
    ext_modules=[
        KsbindExtension("ksbind.yaml", module="_softsign", package="ks_softsign"),
        KsbindExtension("ksbind.yaml", module="_softsign_torch", package="ks_softsign"),
    ],
    cmdclass={"build_ext": BuildExt},
)
