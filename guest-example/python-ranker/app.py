"""Entry module for componentize-py: the `ranker` world of mcpw:plugin@0.1.0.

The interface `ranking` has no free functions, only the resource `index`, which
componentize-py takes from the module `ranking` (see ranking.py).
"""

from wit_world import exports

import ranking  # noqa: F401  (the exported resource `index` lives there)


class Ranking(exports.Ranking):
    pass
