"""argparse types of the follow command's options: each turns bad text into one clear message."""

from __future__ import annotations

import argparse
import math

from visualizer.model.decimate import MIN_POINTS
from visualizer.model.smoothing import DEFAULT_SMOOTHING, check_smoothing
from visualizer.panes.compare import compile_runs, parse_sort_by
from visualizer.panes.view import X_AXES


def pid(text: str) -> int:
    """argparse type of ``--parent-pid``: a positive process id."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a process id")
    return number


def seconds(text: str) -> float:
    """argparse type of ``--poll-interval``: a finite number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0 (e.g. 0.5)")
    return value


def max_points(text: str) -> int:
    """argparse type of ``--max-points``: a whole number of at least MIN_POINTS."""
    try:
        points = int(text)
    except ValueError:
        points = 0
    if points < MIN_POINTS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number of points, at least {MIN_POINTS}"
        )
    return points


def smoothing(text: str) -> float:
    """argparse type of ``--smoothing``: a weight in [0, 1)."""
    try:
        return check_smoothing(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a smoothing weight: at least 0 and below 1 (0 turns it off; "
            f"TensorBoard's default is {DEFAULT_SMOOTHING})"
        ) from None


def x_axis(text: str) -> str:
    """argparse type of ``--x-axis``: step, relative or wall."""
    if text not in X_AXES:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(X_AXES)}")
    return text


def runs(text: str) -> str:
    """argparse type of ``--runs``: a regular expression that compiles."""
    try:
        compile_runs(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{err} (e.g. 'lr-0\\.01' or '^sweep3-')") from None
    return text


def sort_by(text: str) -> tuple[str, str]:
    """argparse type of ``--sort-by``: a series' name as logged."""
    try:
        return parse_sort_by(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
