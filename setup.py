"""Build hook for the one C extension (grammar._walk: the token-trie walk behind grammar masks).

Metadata lives in pyproject.toml; `pip install -e .` compiles the extension in place. It is
optional: without a C compiler the install still succeeds and grammar/ uses its numpy walk.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("grammar._walk", ["grammar/_walk.c"], extra_compile_args=["-O3"], optional=True)])
