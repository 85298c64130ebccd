"""Build hook for the C extensions of grammar/: grammar.masks._walk (the token-trie walk behind
grammar masks), grammar.automaton._dfa (DFA row construction), sharing grammar/include/, and
grammar.automaton._nfa (the NFA builder's node walk), and grammar._ir (the grammar form's node measures).

Metadata lives in pyproject.toml; `pip install -e .` compiles the extensions in place. They are
optional: without a C compiler the install still succeeds and grammar/ uses their Python
reference modules (grammar/masks/walk_ref.py, grammar/automaton/dfa_ref.py), NfaBuilder's own walk and
grammar/ir.py's copy_size_py.
"""

from setuptools import Extension, setup

HEADERS = ["grammar/include/grammar_core.h", "grammar/include/sort.h", "grammar/include/vec.h"]
setup(ext_modules=[
    Extension("grammar.masks._walk", ["grammar/masks/_walk.c"], depends=HEADERS, include_dirs=["grammar/include"],
              extra_compile_args=["-O3"], optional=True),
    Extension("grammar.automaton._dfa", ["grammar/automaton/_dfa.c"], depends=HEADERS, include_dirs=["grammar/include"],
              extra_compile_args=["-O3"], optional=True),
    Extension("grammar.automaton._nfa", ["grammar/automaton/_nfa.c"], depends=["grammar/include/ir_nodes.h"],
              include_dirs=["grammar/include"], extra_compile_args=["-O3"], optional=True),
    Extension("grammar._ir", ["grammar/_ir.c"], depends=["grammar/include/ir_nodes.h"], include_dirs=["grammar/include"],
              extra_compile_args=["-O3"], optional=True),
])
