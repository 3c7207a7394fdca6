"""Finding and calling a user's transfer hook (``--remote-transfer-cmd module.func``).

The hook is called as DeepLIIF calls it, ``hook(source_path)``; a hook that takes
a second positional argument also gets the path relative to the checkpoints dir
(``<name>/pickle/<file>``) so storage keys can keep the layout. Its signature is
checked when it is resolved, so a hook that can not take a path fails before
training, not on every file after it. A hook function may carry a ``preflight``
attribute: a zero-argument callable run once at start-up that raises when the
destination is unusable (wrong bucket, bad credentials).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

Hook = Callable[..., object]
_SPEC_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")


class TransferSpecError(ValueError):
    """A ``--remote-transfer-cmd`` that can not be used; the message says why."""


def resolve_hook(spec: str) -> Hook:
    """Import ``module.func`` (any dotted depth) with the working directory importable."""
    hook = resolve_callable(spec, "--remote-transfer-cmd", "mysave.save_to_s3")
    check_signature(hook, spec)
    return hook


def resolve_callable(spec: str, option: str, example: str) -> Callable[..., object]:
    """The callable a dotted path names (a plugin given as ``option module.func``).

    The working directory is made importable first. Raises TransferSpecError,
    naming ``option``, the path and what is wrong, when it can not be had.
    """
    if not _SPEC_RE.match(spec or ""):
        raise TransferSpecError(f"{option} {spec!r} is not a dotted path like {example!r}")
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:
        # Users keep mysave.py beside the command they run, as with DeepLIIF.
        sys.path.insert(0, cwd)
    parts = spec.split(".")
    module, error = None, None
    for cut in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:cut])
        try:
            module = importlib.import_module(name)
            break
        except ModuleNotFoundError as err:
            # Only "this prefix does not exist" means try a shorter one; a module
            # that exists but fails on its own imports is the user's real error.
            if err.name is None or not name.startswith(err.name):
                raise TransferSpecError(
                    f"{option} {spec!r}: importing {name!r} failed: {err}"
                ) from err
            error = err
        except Exception as err:
            raise TransferSpecError(
                f"{option} {spec!r}: importing {name!r} raised {type(err).__name__}: {err}"
            ) from err
    if module is None:
        raise TransferSpecError(
            f"{option} {spec!r}: no module {parts[0]!r} found in {cwd} or on "
            f"sys.path ({error}); put {parts[0]}.py in the working directory or install it"
        )
    target: object = module
    for attr in parts[cut:]:
        if not hasattr(target, attr):
            raise TransferSpecError(
                f"{option} {spec!r}: {getattr(target, '__name__', target)!r} "
                f"(from {getattr(module, '__file__', module.__name__)}) has no attribute {attr!r}"
            )
        target = getattr(target, attr)
    if not callable(target):
        raise TransferSpecError(f"{option} {spec!r}: {attr!r} is not callable")
    return target


def check_signature(hook: Hook, spec: str) -> None:
    """Raise TransferSpecError unless ``hook(path)`` or ``hook(path, relative_path)`` binds."""
    try:
        signature = inspect.signature(hook)
    except (TypeError, ValueError):  # a builtin without a signature: its first call will tell
        return
    for args in (("source_path",), ("source_path", "relative_path")):
        try:
            signature.bind(*args)
            return
        except TypeError:
            continue
    name = spec.rsplit(".", 1)[-1]
    raise TransferSpecError(
        f"--remote-transfer-cmd {spec}: {spec}{signature} {_signature_problem(signature)}, "
        f"but it is called with each file's path: define it as def {name}(source_path) "
        "(or (source_path, relative_path) to get the path relative to the checkpoints dir too)"
    )


def _signature_problem(signature: inspect.Signature) -> str:
    """What keeps ``signature`` from taking one or two positional arguments, in words."""
    params = list(signature.parameters.values())
    keyword_only = [p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if keyword_only:
        return f"requires keyword-only argument(s) {', '.join(keyword_only)}"
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional and not any(p.kind is p.VAR_POSITIONAL for p in params):
        return "takes no positional argument"
    required = [p.name for p in positional if p.default is p.empty]
    return f"requires {len(required)} positional arguments ({', '.join(required)})"


def run_preflight(hook: Hook, spec: str = "") -> None:
    """Run the hook's ``preflight`` check, if it has one, as one clear error."""
    check = getattr(hook, "preflight", None)
    if check is None:
        return
    try:
        check()
    except Exception as err:
        raise TransferSpecError(f"transfer check failed for {spec or hook!r}: {err}") from err


def hook_caller(hook: Hook) -> Callable[[str, str], object]:
    """``call(source_path, relative_path)`` for ``hook``, deciding once whether it takes two."""
    try:
        inspect.signature(hook).bind("source", "relative")
        return hook
    except (TypeError, ValueError):
        return lambda source_path, relative_path: hook(source_path)


class TransferHookError(RuntimeError):
    """A hook failed in its worker process; the message is the hook's own error."""


class HookProcess:
    """One ``transfer_plugins.worker`` subprocess running the hook named by a spec.

    A big file always goes to the same process (by hash of its path), so a
    plugin's in-process record of what it already sent stays right.
    """

    def __init__(self, spec: str, idle: bool) -> None:
        self.spec, self.idle = spec, idle
        self.lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None

    def call(self, source_path: str, relative_path: str) -> None:
        """Run the hook on one file in the worker; raises when it failed."""
        with self.lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                proc = self._proc = self._start()
            requests, replies = proc.stdin, proc.stdout
            assert requests is not None and replies is not None  # both opened as pipes
            try:
                requests.write(json.dumps([source_path, relative_path]) + "\n")
                requests.flush()
                line = replies.readline()
            except (BrokenPipeError, ValueError):
                line = ""
            if not line:
                code = proc.poll()
                self._proc = None
                raise TransferHookError(f"the transfer worker for {self.spec} exited (code {code})")
            reply = json.loads(line)
            if not reply.get("ok"):
                raise TransferHookError(reply.get("error", "failed"))

    def stop(self, timeout: float = 2.0) -> None:
        """End the worker: it exits when its input closes; killed if it does not."""
        proc = self._proc
        if proc is None:
            return
        assert proc.stdin is not None  # opened as a pipe
        try:
            proc.stdin.close()
            proc.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()

    def _start(self) -> subprocess.Popen[str]:
        """Start the worker process (it imports the hook while we go on)."""
        env = dict(os.environ)
        # The user's hook module must import there as it does here (cwd, script dir).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        return subprocess.Popen(
            [sys.executable, "-m", "transfer_plugins.worker", self.spec] + ["--idle"] * self.idle,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
