"""Alerts: rules over the runs' series, and where they are sent.

* :mod:`~visualizer.alerts.rules`: ``--alert`` rules, their checks and memory;
* :mod:`~visualizer.alerts.notify`: webhooks and plugins that carry an alert;
* :mod:`~visualizer.alerts.options`: the command-line options and their wiring.
"""
