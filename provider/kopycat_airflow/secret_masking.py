"""Secrets of connector configs registered with Airflow's secrets masker before the UI shows them.

After rendering a task's template fields, Airflow's task runner sends them to the API server for the
UI's "Rendered Template" view through the secrets masker's ``redact``, which hides the values of the
keys *it* thinks are sensitive (``password``, ``secret``...) and every value registered with
``mask_secret``. A connector config names its secrets the Kafka way (``sasl.jaas.config``,
``ssl.keystore.password``, ``producer.override.sasl.jaas.config``), so the operators call
:func:`mask_config_secrets` on their rendered fields: each value of a key Kopycat's REST API hides
(:func:`kopycat.rest.masking.is_secret_name`) is registered, with the secret options of a JAAS line
(``password``, ``clientSecret``), and every ``${airflow:<conn_id>:<field>}`` /
``${airflow:variable:<name>}`` placeholder is resolved once, which registers what it resolves to
(:class:`~kopycat_airflow.config_provider.AirflowConfigProvider`), so the secret is masked wherever
else it shows up (a value a DAG author templated in with ``{{ conn.<id>.password }}``).

The operators mix in :class:`MasksConfigSecrets`, which does it in ``render_template``: the one method
Airflow calls for each template field of a plain operator and of a mapped one's unmapped task alike.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from airflow.sdk.log import mask_secret

if TYPE_CHECKING:
    import jinja2
    from airflow.sdk import Context

from kopycat.api.errors import ConfigError
from kopycat.jaas import parse_jaas_config
from kopycat.rest.masking import is_secret_name
from kopycat.runtime.config_transformer import ConfigTransformer, has_variables
from kopycat_airflow.config_provider import AirflowConfigProvider

__all__ = ["AIRFLOW_PROVIDER", "MasksConfigSecrets", "mask_config_secrets"]

log = logging.getLogger(__name__)

AIRFLOW_PROVIDER: Final = "airflow"
"""The provider name whose placeholders are resolved (and so masked) at render time."""


def _items(value: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """``(key, text)`` of every string in ``value``, nested mappings and lists included (a plan's task
    config holds the connector config under ``config``)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _items(item, str(key))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _items(item, prefix)
    elif isinstance(value, str):
        yield prefix, value


def _jaas_secrets(key: str, text: str) -> list[str]:
    """The secret options of a JAAS line (``password``, ``clientSecret``); none if it does not parse."""
    if not key.lower().endswith("sasl.jaas.config") or has_variables(text):
        return []
    try:
        entry = parse_jaas_config(text, key)
    except ConfigError:
        return []
    return [value for option, value in entry.options.items() if is_secret_name(option)]


def mask_config_secrets(*fields: Any) -> None:
    """Register the secrets in ``fields`` (rendered template fields) with Airflow's secrets masker.

    Never fails the task: a placeholder that cannot be resolved here (a missing connection) is left to
    ``execute``, which fails with the error naming it.
    """
    placeholders: dict[str, str] = {}
    for key, text in (pair for field in fields for pair in _items(field)):
        if has_variables(text):
            if f"${{{AIRFLOW_PROVIDER}:" in text:
                placeholders[f"{len(placeholders)}"] = text
            continue
        if is_secret_name(key):
            mask_secret(text)
        for secret in _jaas_secrets(key, text):
            mask_secret(secret)
    if not placeholders:
        return
    try:  # the provider registers every value it resolves
        ConfigTransformer({AIRFLOW_PROVIDER: AirflowConfigProvider()}).transform(placeholders)
    except ConfigError as exc:
        log.warning("Could not resolve an ${%s:...} placeholder to mask it before rendering: %s", AIRFLOW_PROVIDER,
                    exc)


class MasksConfigSecrets:
    """Mixin (before ``BaseOperator``) for operators whose template fields hold connector configs: each
    rendered mapping or list is passed to :func:`mask_config_secrets` before Airflow redacts and stores it."""

    def render_template(self, content: Any, context: Context, jinja_env: jinja2.Environment | None = None,
                        seen_oids: set[int] | None = None) -> Any:
        """Airflow's ``Templater.render_template``, then the secrets of a rendered mapping or list masked."""
        rendered = super().render_template(content, context, jinja_env, seen_oids)  # type: ignore[misc]
        if isinstance(rendered, Mapping | list | tuple):
            mask_config_secrets(rendered)
        return rendered
