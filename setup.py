"""Build hook for the C extensions of grammar/: grammar._walk (the token-trie walk behind grammar
masks) and grammar._dfa (DFA row construction).

Metadata lives in pyproject.toml; `pip install -e .` compiles the extensions in place. They are
optional: without a C compiler the install still succeeds and grammar/ uses its numpy walk and
its Python row builder.
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("grammar._walk", ["grammar/_walk.c"], depends=["grammar/_vec.h"], extra_compile_args=["-O3"], optional=True),
    Extension("grammar._dfa", ["grammar/_dfa.c"], depends=["grammar/_vec.h"], extra_compile_args=["-O3"], optional=True),
])
