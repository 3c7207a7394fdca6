"""Alert rules: one language and one evaluator, pure (no IO, no display), run by the viewer
and by a run's writer thread alike.

* :mod:`~snapshot_store.alert_rules.language`: ``--alert-rule`` text and the rule objects;
* :mod:`~snapshot_store.alert_rules.curves`: the judges of a curve (diverging, plateau,
  spike, slower and worse than a baseline), fed points as they arrive;
* :mod:`~snapshot_store.alert_rules.judge`: one run's judges, fed its points and status,
  giving findings (an event's name, its words and its once-per-run key).
"""
