"""Alerts: rules over the runs' series, and where they are sent.

* :mod:`~visualizer.alerts.rules`: ``--alert`` rules, their checks and memory;
* :mod:`~visualizer.alerts.notify`: the destinations (webhooks, plugins) that carry an alert;
* :mod:`~visualizer.alerts.webhook`: one webhook try, its body and its deadline;
* :mod:`~visualizer.alerts.options`: the command-line options and their wiring.
"""
