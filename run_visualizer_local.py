"""Follow snapshot stores into visdom: ``python run_visualizer_local.py --pickle-dir DIR``.

Same as the ``run-visualizer`` console script; ``--help`` lists the options.
"""

import sys

from visualizer.cli import main

if __name__ == "__main__":
    sys.exit(main())
