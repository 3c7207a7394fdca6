"""Every file README.md and docs/*.md name exists: a path where it says, a bare name somewhere.

A name with a folder (``snapshot_store/write/recorder.py``, ``../README.md``) must
be that file of the repository, from its root or from the page; a bare name
(``recorder.py``) must be a file that git tracks somewhere. So a layout or a
data-path table that names a file moved or gone fails here, naming the page, the
line and the file. Names that are not ours (a user's script, another project's
file, what a run writes) are in :data:`NOT_OURS`, each with its reason.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.fixtures.runs.checkout import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# A file name: word characters, dots, dashes and folders, ending in one of our
# files' suffixes. Not one inside a URL, a longer path or a word ($PWD/x.txt, a.b.py).
FILE_NAME = re.compile(
    r"(?<![\w./:~$@-])((?:\.\./)*[\w-][\w./-]*\.(?:py|md|toml|json|sh|txt|cfg|ini|yaml|yml))(?![\w/-])"
)

# Bare names the pages use that are not files of this repository, and why.
NOT_OURS = {
    "train.py": "a user's own training script (docs/fit.md)",
    "trainer.py": "a user's own module, shadowing our package (docs/integrations.md)",
    "train_text_to_image.py": "diffusers' example script (docs/integrations.md)",
    "MODULE.py": "a placeholder for a user's alert hook module (docs/viewer.md)",
    "myalerts.py": "a user's alert hook, written out in docs/viewer.md",
    "loss_log.txt": "a run's console log, written by trainer/training/console.py",
    "hparams.yaml": "Lightning's file in a run's log_dir, written by MonitorLogger.save()",
}


def _tracked() -> tuple[set[str], set[str]]:
    """The paths git tracks, and their bare file names."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    paths = set(filter(None, listed.split("\0")))
    return paths, {path.rsplit("/", 1)[-1] for path in paths}


def _exists(name: str, page: Path, paths: set[str], bare: set[str]) -> bool:
    if "/" not in name:
        return name in bare or name in NOT_OURS
    return any(
        candidate.is_file() and candidate.resolve().relative_to(ROOT).as_posix() in paths
        for candidate in (ROOT / name, page.parent / name)
        if candidate.resolve().is_relative_to(ROOT)
    )


def missing_files(pages: list[Path]) -> list[str]:
    """``page:line: name`` for every file name on ``pages`` that is not in the repository."""
    paths, bare = _tracked()
    missing = []
    for page in pages:
        for number, line in enumerate(page.read_text().splitlines(), start=1):
            for name in FILE_NAME.findall(line):
                if not _exists(name, page, paths, bare):
                    shown = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
                    missing.append(f"{shown}:{number}: {name}")
    return missing


def test_every_file_the_pages_name_exists():
    missing = missing_files(PAGES)
    assert not missing, "files named in the docs that are not in the repository:\n" + "\n".join(
        missing
    )


def test_a_missing_file_is_reported_with_its_page_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "See `snapshot_store/write/recorder.py` and `recorder.py`.\n"
        "Gone: `snapshot_store/recorder.py`, `visdom_child.py`; a URL https://x.org/a/server.py\n"
    )
    assert missing_files([page]) == [
        f"{page}:2: snapshot_store/recorder.py",
        f"{page}:2: visdom_child.py",
    ]


def test_every_not_ours_name_is_still_used_and_not_a_file_of_ours():
    paths, bare = _tracked()
    text = "\n".join(page.read_text() for page in PAGES)
    for name in NOT_OURS:
        assert name not in bare, f"{name} is a file of ours now: drop it from NOT_OURS"
        assert name in FILE_NAME.findall(text), f"no page names {name} any more: drop it"
