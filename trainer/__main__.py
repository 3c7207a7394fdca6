"""``python -m trainer``: see :mod:`trainer.command.cli`."""

from trainer.command.cli import main

raise SystemExit(main())
