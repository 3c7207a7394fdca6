"""W&B's ``run.config`` and ``run.summary``: dicts with attribute access, and W&B's errors."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn


class Error(Exception):
    """What W&B raises for a call out of order (``log`` before ``init``)."""


def before_init(what: str) -> NoReturn:
    """Raise W&B's error for ``what`` used before ``init``, in W&B's words."""
    raise Error(f"You must call wandb.init() before {what}")


class PreInitObject:
    """``wandb.config`` and ``wandb.summary`` with no run, as W&B's: importable, listed by
    ``dir`` and ``inspect``; reading or setting an item raises :class:`Error`."""

    def __init__(self, name: str, destination: type) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "__doc__", destination.__doc__)  # for help() and doc tools

    def __getitem__(self, key: Any) -> NoReturn:
        before_init(f"{self._name}[{key!r}]")

    def __setitem__(self, key: Any, value: Any) -> NoReturn:
        before_init(f"{self._name}[{key!r}]")

    def __setattr__(self, key: str, value: Any) -> None:
        if key.startswith("_"):
            object.__setattr__(self, key, value)
        else:
            before_init(f"{self._name}.{key}")

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):  # what copy, pickle and doc tools probe for: plainly absent
            raise AttributeError(key)
        before_init(f"{self._name}.{key}")


class ConfigError(Error, ValueError):
    """A config value changed without ``allow_val_change=True``, as W&B refuses it."""


class _Items:
    """A dict with attribute access, as W&B's config and summary are."""

    def __init__(self) -> None:
        object.__setattr__(self, "_items", {})

    def _set(self, key: str, value: Any, allow_val_change: bool | None = None) -> None:
        self._items[key] = value

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._set(key, value)

    __setattr__ = __setitem__

    def __getattr__(self, key: str) -> Any:
        try:
            return self._items[key]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no item {key!r}") from None

    def __delitem__(self, key: str) -> None:
        del self._items[key]

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"

    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

    def keys(self) -> Any:
        return self._items.keys()

    def items(self) -> Any:
        return self._items.items()

    def values(self) -> Any:
        return self._items.values()

    def as_dict(self) -> dict[str, Any]:
        return dict(self._items)

    def update(self, d: Any = None, allow_val_change: bool | None = None) -> None:
        for key, value in as_dict(d).items():
            self._set(key, value, allow_val_change)


def as_dict(d: Any) -> dict[str, Any]:
    """What W&B takes as a config: a mapping, an argparse Namespace or absl flags."""
    if d is None:
        return {}
    if isinstance(d, argparse.Namespace):
        return vars(d)
    if hasattr(d, "flag_values_dict"):
        return d.flag_values_dict()
    if isinstance(d, Mapping):
        return dict(d)
    raise TypeError(f"config must be a dict or an argparse Namespace, not {type(d).__name__}")


class Config(_Items):
    """``run.config``: set once per key (``allow_val_change=True`` to change one), as W&B's."""

    def __init__(self, on_change: Any = None) -> None:
        super().__init__()
        object.__setattr__(self, "_on_change", on_change)

    def _set(self, key: str, value: Any, allow_val_change: bool | None = None) -> None:
        key = str(key).strip("-")  # W&B's: --lr and lr are one key
        old = self._items.get(key, value)
        if not allow_val_change and key in self._items and old != value:
            raise ConfigError(
                f'Attempted to change value of key "{key}" from {old} to {value}\n'
                "If you really want to do this, pass allow_val_change=True to config.update()"
            )
        self._items[key] = value
        if self._on_change is not None:
            self._on_change()

    def setdefaults(self, d: Any) -> None:
        """Set the keys of ``d`` that are not set yet."""
        self.update({k: v for k, v in as_dict(d).items() if k not in self._items})


class Summary(_Items):
    """``run.summary``: the last logged value of each key unless set (or define_metric says)."""

    def __init__(self) -> None:
        super().__init__()
        object.__setattr__(self, "_explicit", set())  # keys the script set: log leaves them

    def _set(self, key: str, value: Any, allow_val_change: bool | None = None) -> None:
        self._items[key] = value
        self._explicit.add(key)


class Settings:
    """``wandb.Settings(...)``, accepted for ``init(settings=...)``; nothing in it applies."""

    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)
