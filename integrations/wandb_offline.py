"""The calls a W&B script makes before it logs, as W&B's offline mode answers them.

``require``, ``setup``, ``login``, ``ensure_configured`` and W&B's terminal helpers
(``termlog``, ``termwarn``, ``termerror``, ``termsetup``): measured with W&B 0.31
under ``WANDB_MODE=offline``, each does nothing or prints a note, and so do these.
Which of W&B's names this module has, and what stands for each, is the table in
docs/tensorboard-and-wandb.md (W&B's names); a name it lacks raises
:class:`NotOffline`, naming it.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable
from typing import Any

from .wandb_config import Error, Settings

log = logging.getLogger(__name__)

NAMES_TABLE = "docs/tensorboard-and-wandb.md (W&B's names)"
# W&B's features that wandb.require() takes, each a no-op now (W&B 0.31 warns for the last two).
_REQUIREMENTS = {"require": "", "service": "", "core": ""}


class WandbUsageError(Error):
    """W&B's ``UsageError`` (``wandb.UsageError`` here too), for a call used wrongly; the
    trainer's :class:`~trainer.training.config.UsageError` is another concept."""


class CommError(Error):
    """W&B's error for a failed exchange with its server; offline, an artifact version not
    found (``use_artifact``, ``Api().artifact``), as W&B's server answers."""


class NotOffline(AttributeError):
    """A name of W&B's module this one has no offline counterpart for."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"wandb.{name} is not available offline in remote_train_monitor.wandb; "
            f"{NAMES_TABLE} lists what each of W&B's names is here",
            name=name,
        )


def _term(prefix: str, string: str, newline: bool) -> None:
    """Print one of W&B's ``wandb: ...`` lines on stderr, unless ``WANDB_SILENT`` is set."""
    if os.environ.get("WANDB_SILENT", "").lower() not in ("1", "true"):
        print(f"wandb: {prefix}{string}", end="\n" if newline else "", file=sys.stderr)


def termlog(
    string: str = "", newline: bool = True, repeat: bool = True, prefix: bool = True
) -> None:
    """W&B's ``termlog``: ``wandb: <string>`` on stderr."""
    _term("", string, newline)


def termwarn(string: str, newline: bool = True, repeat: bool = True, prefix: bool = True) -> None:
    """W&B's ``termwarn``: ``wandb: WARNING <string>`` on stderr."""
    _term("WARNING ", string, newline)


def termerror(string: str, newline: bool = True, repeat: bool = True, prefix: bool = True) -> None:
    """W&B's ``termerror``: ``wandb: ERROR <string>`` on stderr."""
    _term("ERROR ", string, newline)


def termsetup(settings: Any = None, logger: Any = None) -> None:
    """W&B's ``termsetup``: nothing to set up here."""


def require(
    requirement: str | Iterable[str] | None = None, experiment: str | Iterable[str] | None = None
) -> None:
    """W&B's ``require``: ``"core"`` and ``"service"`` are W&B's defaults now, so a no-op
    (W&B's note said); an unknown feature raises W&B's error, naming it."""
    features = requirement or experiment
    if not features:
        return
    unknown = ""
    for item in [features] if isinstance(features, str) else list(features):
        feature = item.split("@", 2)[0].split(":", 2)[0]
        if feature.replace("-", "_") not in _REQUIREMENTS:
            unknown = f"require() unsupported requirement: {feature}"
            termwarn(unknown)
        elif feature != "require":
            termwarn(f"`wandb.require('{feature}')` is a no-op as it is now the default behavior.")
    if unknown:
        raise WandbUsageError(unknown)


class Setup:
    """What ``wandb.setup()`` returns: the settings given (W&B's ``_WandbSetup``)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()

    def teardown(self) -> None:
        """Nothing to tear down: no service process runs."""


def setup(settings: Settings | None = None) -> Setup:
    """W&B's ``setup``: no service process to start; returns the settings' holder."""
    return Setup(settings)


def login(*args: Any, **kwargs: Any) -> bool:
    """False, as W&B's offline mode answers (no login is verified): no account is used,
    runs are stored locally. W&B's arguments (``key``, ``relogin``, ``host``...) are taken."""
    log.info("wandb.login: no account is used here; runs are stored locally")
    return False


def ensure_configured() -> None:
    """W&B's deprecated ``ensure_configured``: nothing to configure."""
