"""Alerts sent: what an alert is and how it is delivered, for the viewer and a run's writer.

* :mod:`~snapshot_store.alerting.alert`: :class:`Alert`, one event of one run;
* :mod:`~snapshot_store.alerting.webhook`: one webhook try, its body and its deadline;
* :mod:`~snapshot_store.alerting.delivery`: destinations (webhooks, plugins), each with
  its threads, retries and deadline, off the caller's thread;
* :mod:`~snapshot_store.alerting.on_writer`: the rules judged on a run's writer thread,
  each alert delivered recorded in the run's status so a viewer does not send it again.

The rules themselves are :mod:`snapshot_store.alert_rules` (pure: no IO).
"""
