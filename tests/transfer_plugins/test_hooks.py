"""A hook's signature is checked when it is resolved: one that can not take a path fails at start."""

from __future__ import annotations

import sys
import textwrap

import pytest

from transfer_plugins.hooks import TransferSpecError, check_signature, resolve_hook

ACCEPTED = """
    def one(source_path): pass
    def two(source_path, relative_path): pass
    def optional_second(source_path, relative_path=None): pass
    def star(*paths): pass
    def extra_keywords(source_path, *, retries=3, **options): pass
    class Sender:
        def __call__(self, source_path): pass
    instance = Sender()
"""

REFUSED = """
    def noarg(): pass
    def three(source_path, relative_path, bucket): pass
    def keyword_only(source_path, *, bucket): pass
    def keywords(**options): pass
"""


@pytest.fixture
def hooks_module(tmp_path, monkeypatch):
    """``goodhooks`` and ``badhooks`` modules in the working directory."""
    (tmp_path / "goodhooks.py").write_text(textwrap.dedent(ACCEPTED))
    (tmp_path / "badhooks.py").write_text(textwrap.dedent(REFUSED))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    yield
    for name in ("goodhooks", "badhooks"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    "name", ["one", "two", "optional_second", "star", "extra_keywords", "instance"]
)
def test_hooks_callable_with_a_path_are_accepted(hooks_module, name):
    assert callable(resolve_hook(f"goodhooks.{name}"))


@pytest.mark.parametrize(
    "name, problem",
    [
        ("noarg", "badhooks.noarg() takes no positional argument"),
        ("three", "requires 3 positional arguments (source_path, relative_path, bucket)"),
        ("keyword_only", "requires keyword-only argument(s) bucket"),
        ("keywords", "takes no positional argument"),
    ],
)
def test_a_hook_that_can_not_take_a_path_is_refused_with_what_to_write(hooks_module, name, problem):
    with pytest.raises(TransferSpecError) as caught:
        resolve_hook(f"badhooks.{name}")
    message = str(caught.value)
    assert message.startswith(f"--remote-transfer-cmd badhooks.{name}: ")
    assert problem in message
    assert f"def {name}(source_path)" in message


def test_a_builtin_without_a_signature_is_not_refused():
    # vars has no inspectable signature: its first call will say what is wrong, if anything.
    check_signature(vars, "builtins.vars")
