"""``python -m trainer``: see :mod:`trainer.cli`."""

from .cli import main

raise SystemExit(main())
