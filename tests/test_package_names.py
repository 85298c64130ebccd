"""Our top-level import names are ours alone: no installed distribution ships a module of the same name.

`kernels` was one until transformers 5.25 made Hugging Face's `kernels` package a hard dependency:
from the repository root our folder shadowed it and `import transformers` failed inside its
hub-kernels integration (hence `compute_kernels`). This test names the next such collision.
"""

import importlib.metadata

from tests.test_layering import OURS


def test_no_installed_distribution_ships_one_of_our_top_level_names():
    owners = importlib.metadata.packages_distributions()
    clashes = {name: sorted(set(owners[name]) - {"agent-gateway", "agent_gateway"}) for name in OURS if name in owners}
    assert not {name: dists for name, dists in clashes.items() if dists}


def test_transformers_hub_kernels_integration_imports():
    import transformers.integrations.hub_kernels  # noqa: F401  (failed while our folder was `kernels`)
