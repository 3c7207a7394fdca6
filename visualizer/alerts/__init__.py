"""Alerts: rules over the runs' series, and where they are sent.

* :mod:`~visualizer.alerts.rules`: ``--alert`` rules, their checks and memory;
* :mod:`~visualizer.alerts.curves`: the curve rules fed each watched run's new points;
* :mod:`~visualizer.alerts.options`: the command-line options and their wiring.

Delivery (webhooks, plugins) is :mod:`snapshot_store.alerting`'s, shared with a run's
writer thread, which judges the same rules where no viewer runs.
"""
