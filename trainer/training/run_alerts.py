"""The alerts a training run sends itself, from its writer thread, where no viewer runs.

``--alert-rule`` (``alert_rules=`` in Python) names the rules, in the viewer's language;
the alerts go to ``--alert-cmd`` (a plugin, resolved as ``--remote-transfer-cmd`` is)
and/or a webhook: ``alert_webhook=`` in Python, else ``$ALERT_WEBHOOK_URL`` (a webhook
URL is a secret: kept out of ``ps`` and out of the run's stored options). The variable
alone turns nothing on: a viewer's users set it too.
"""

from __future__ import annotations

from collections.abc import Sequence

from snapshot_store.alerting.delivery import check_plugin
from snapshot_store.alerting.on_writer import AlertCommand, AlertSettings, alert_settings
from snapshot_store.alerting.webhook import webhook_from_environment
from transfer_plugins.hooks import resolve_callable


def run_alerts(
    rules: Sequence[str], alert_cmd: str | None = None, webhook: str | None = None
) -> AlertSettings | None:
    """The writer's alert settings, None when no rule and no ``alert_cmd`` is given; a
    ValueError in one line naming the option when they can not work (checked before training)."""
    if not rules and alert_cmd is None and webhook is None:
        return None
    url = webhook or webhook_from_environment()
    command: AlertCommand | None = None
    if alert_cmd is not None:
        command = resolve_callable(alert_cmd, "--alert-cmd", "myalerts.notify")
        check_plugin(command, alert_cmd)
    return alert_settings(rules, url, command, alert_cmd or "alert_cmd")
