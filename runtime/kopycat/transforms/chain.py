"""Transformation chains built from connector properties, exactly as Kafka Connect reads them.

::

    transforms=route,dropTombstones
    transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
    transforms.route.regex=(.*)
    transforms.route.replacement=mirror.$1
    transforms.dropTombstones.type=org.apache.kafka.connect.transforms.Filter
    transforms.dropTombstones.predicate=isTombstone
    predicates=isTombstone
    predicates.isTombstone.type=org.apache.kafka.connect.transforms.predicates.RecordIsTombstone

Follows Kafka's ``ConnectorConfig`` (``transformationStages``, ``enrich``), ``TransformationStage``
and ``TransformationChain``. :func:`enrich` adds every alias's keys, prefixed, to a ConfigDef,
so the REST validate endpoint lists and checks them and errors name ``transforms.<alias>.<key>``;
:meth:`TransformationChain.from_props` validates with it, then instantiates and configures.
Class names: see :mod:`kopycat.transforms.registry`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Generic, TypeVar

from kopycat.api.config import (
    NO_DEFAULT,
    CompositeValidator,
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    NonNullValidator,
    Validator,
    Width,
    parse_type,
)
from kopycat.api.errors import ConfigError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Predicate, Transformation
from kopycat.transforms.registry import PREDICATES, TRANSFORMATIONS, PluginKind, class_name

__all__ = [
    "NEGATE_CONFIG", "PREDICATES_CONFIG", "PREDICATE_CONFIG", "TRANSFORMS_CONFIG",
    "TRANSFORMS_CONFIG_DEF", "TransformationChain", "TransformationStage", "enrich",
    "transforms_config_def",
]

logger = logging.getLogger(__name__)
R = TypeVar("R", bound=ConnectRecord)

TRANSFORMS_CONFIG: Final = "transforms"
PREDICATES_CONFIG: Final = "predicates"
PREDICATE_CONFIG: Final = "predicate"
NEGATE_CONFIG: Final = "negate"
TRANSFORMS_GROUP: Final = "Transforms"
PREDICATES_GROUP: Final = "Predicates"


def _unique_aliases(kind: str) -> Validator:
    def check(name: str, value: Any) -> None:
        duplicates = sorted({alias for alias in value if value.count(alias) > 1})
        if duplicates:
            raise ConfigError.for_key(name, value, f"Duplicate alias provided: {', '.join(duplicates)}")
    return CompositeValidator.of(NonNullValidator(), LambdaValidator(check, f"unique {kind} aliases"))


TRANSFORMS_CONFIG_DEF: Final = (
    ConfigDef()
    .define(TRANSFORMS_CONFIG, ConfigType.LIST, [], _unique_aliases("transformation"), Importance.LOW,
            "Aliases for the transformations to be applied to records.", group=TRANSFORMS_GROUP,
            order_in_group=12, width=Width.LONG, display_name="Transforms")
    .define(PREDICATES_CONFIG, ConfigType.LIST, [], _unique_aliases("predicate"), Importance.LOW,
            "Aliases for the predicates used by transformations.", group=PREDICATES_GROUP,
            order_in_group=13, width=Width.LONG, display_name="Predicates"))
"""The two connector keys that list aliases (as in Kafka's ``ConnectorConfig.configDef()``, whose orders
continue the Common group's count: 12 and 13)."""

_STAGE_KEYS: Final = (
    ConfigDef()
    .define(PREDICATE_CONFIG, ConfigType.STRING, None, None, Importance.MEDIUM,
            "The alias of a predicate used to determine whether to apply this transformation.")
    .define(NEGATE_CONFIG, ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
            "Whether the configured predicate should be negated."))


def _aliases(props: Mapping[str, Any], key: str) -> list[str]:
    """The aliases listed under ``key``, first occurrence kept."""
    listed = parse_type(key, props.get(key), ConfigType.LIST) or []
    return list(dict.fromkeys(str(alias) for alias in listed))


def _referenced_predicates(props: Mapping[str, Any]) -> list[str]:
    """Predicate aliases in ``transforms.<alias>.predicate`` (Kafka uses them even if unlisted)."""
    out = []
    for alias in _aliases(props, TRANSFORMS_CONFIG):
        value = props.get(f"{TRANSFORMS_CONFIG}.{alias}.{PREDICATE_CONFIG}")
        if isinstance(value, str) and value.strip():
            out.append(value.strip())
    return out


def _check_predicate_references(props: Mapping[str, Any]) -> None:
    """A transform's ``predicate`` must name a predicate whose ``type`` is set."""
    for alias in _aliases(props, TRANSFORMS_CONFIG):
        key = f"{TRANSFORMS_CONFIG}.{alias}.{PREDICATE_CONFIG}"
        value = props.get(key)
        if not isinstance(value, str) or not value.strip():
            continue
        if props.get(f"{PREDICATES_CONFIG}.{value.strip()}.type") is None:
            listed = [p for p in _aliases(props, PREDICATES_CONFIG)
                      if props.get(f"{PREDICATES_CONFIG}.{p}.type") is not None]
            raise ConfigError.for_key(key, value, f"no predicate '{value.strip()}' is configured "
                                      f"({PREDICATES_CONFIG}.{value.strip()}.type is not set); "
                                      f"configured predicates: {', '.join(listed) or 'none'}")


def _instantiate(kind: PluginKind, key: str, value: Any) -> Any:
    cls = kind.resolve(key, value)
    try:
        return cls()
    except Exception as exc:
        raise ConfigError.for_key(key, class_name(cls), f"{kind.name} could not be created: {exc}") from exc


class _ClassRecommender:
    """Recommends the built-ins under Kafka's names (Kafka's ``EnrichablePlugin.ClassRecommender``)."""

    def __init__(self, kind: PluginKind) -> None:
        self.kind = kind

    def valid_values(self, name: str, parsed: Mapping[str, Any]) -> list[Any]:
        return list(self.kind.kafka_names())

    def visible(self, name: str, parsed: Mapping[str, Any]) -> bool:
        return True


class _TypeValidator(Validator):
    """Checks an alias's ``type``: it names a usable class; ``negate`` only with ``predicate``."""

    def __init__(self, kind: PluginKind, alias: str, prefix: str, props: Mapping[str, Any]) -> None:
        self.kind, self.alias, self.prefix, self.props = kind, alias, prefix, props

    def ensure_valid(self, name: str, value: Any) -> None:
        if self.kind is TRANSFORMATIONS:
            negate, predicate = self.prefix + NEGATE_CONFIG, self.prefix + PREDICATE_CONFIG
            if negate in self.props and predicate not in self.props:
                raise ConfigError(f"Config '{negate}' was provided but there is no config '{predicate}' "
                                  "defining a predicate to be negated.", key=negate)
        if value is not None:
            _plugin_config(self.kind, name, value)

    def __str__(self) -> str:
        return f"valid configs for {self.alias} {self.kind.name.lower()}"


def _plugin_config(kind: PluginKind, key: str, value: Any) -> ConfigDef:
    """The ConfigDef of the class ``value`` names (Kafka's ``getConfigDefFromConfigProvidingClass``)."""
    config_def = _instantiate(kind, key, value).config()
    if not isinstance(config_def, ConfigDef):
        raise ConfigError.for_key(key, value, f"{kind.name}.config() must return a ConfigDef, "
                                  f"got {type(config_def).__name__}")
    return config_def


def _enrich_kind(definition: ConfigDef, kind: PluginKind, list_key: str, group_name: str,
                 aliases: Iterable[str], props: Mapping[str, Any], require_full_config: bool) -> None:
    for alias in aliases:
        prefix, group = f"{list_key}.{alias}.", f"{group_name}: {alias}"
        type_key = prefix + "type"
        definition.define(
            type_key, ConfigType.CLASS, NO_DEFAULT, _TypeValidator(kind, alias, prefix, props),
            Importance.HIGH, f"Class for the '{alias}' {kind.name.lower()}.", group=group,
            order_in_group=0, width=Width.LONG, display_name=f"{kind.name} type for {alias}",
            recommender=_ClassRecommender(kind))
        child = ConfigDef(_STAGE_KEYS) if kind is TRANSFORMATIONS else ConfigDef()
        try:
            value = props.get(type_key)
            if value is None:
                raise ConfigError.for_key(type_key, None, f"Not a {kind.name}: {type_key} is not set "
                                          f"for {kind.name.lower()} alias '{alias}'; {kind.known()}")
            plugin_def = _plugin_config(kind, type_key, parse_type(type_key, value, ConfigType.CLASS))
            for key in plugin_def.keys.values():
                if key.name in child:
                    logger.warning("%s config %s is masked by the implicit config of that name",
                                   kind.name, prefix + key.name)
                    continue
                child.define_key(key)
        except ConfigError:
            if require_full_config:
                raise
            continue
        definition.embed(prefix, group, 1, child)


def enrich(base: ConfigDef, props: Mapping[str, Any], require_full_config: bool = True) -> ConfigDef:
    """``base`` plus the keys of every transformation and predicate ``props`` configures.

    Kafka's ``ConnectorConfig.enrich``: per alias a required CLASS key ``<list>.<alias>.type``
    and the class's own keys under ``<list>.<alias>.``; transforms also get ``predicate`` and
    ``negate``. ``base`` gets ``transforms``/``predicates`` if it lacks them. With
    ``require_full_config`` (building a chain) a missing or unusable class raises; without it
    (REST validation) the alias's keys are left out and validation reports the type key.
    Predicates referenced by a transform (and typed) are enriched even if ``predicates`` omits
    them, since Kafka uses them; a reference to an untyped predicate is an error on the
    transform's ``predicate`` key.
    """
    definition = ConfigDef(base)
    for key in TRANSFORMS_CONFIG_DEF.keys.values():
        if key.name not in definition:
            definition.define_key(key)
    _enrich_kind(definition, TRANSFORMATIONS, TRANSFORMS_CONFIG, TRANSFORMS_GROUP,
                 _aliases(props, TRANSFORMS_CONFIG), props, require_full_config)
    referenced = [p for p in _referenced_predicates(props) if f"{PREDICATES_CONFIG}.{p}.type" in props]
    predicates = dict.fromkeys(_aliases(props, PREDICATES_CONFIG) + referenced)
    _enrich_kind(definition, PREDICATES, PREDICATES_CONFIG, PREDICATES_GROUP, predicates, props,
                 require_full_config)
    if require_full_config:
        _check_predicate_references(props)
    return definition


def transforms_config_def(props: Mapping[str, Any], require_full_config: bool = False) -> ConfigDef:
    """The transform and predicate keys for ``props``: for the REST validate endpoint and docs."""
    return enrich(ConfigDef(), props, require_full_config)


class TransformationStage(Generic[R]):
    """One transformation, applied when its predicate (negated or not) holds.

    Kafka's ``TransformationStage``: with no predicate it always applies.
    """

    def __init__(self, transformation: Transformation[R], predicate: Predicate[R] | None = None,
                 negate: bool = False, alias: str | None = None) -> None:
        self.transformation = transformation
        self.predicate = predicate
        self.negate = negate
        self.alias = alias

    @property
    def transform_class(self) -> type:
        return type(self.transformation)

    def apply(self, record: R) -> R | None:
        if self.predicate is None or bool(self.predicate.test(record)) is not self.negate:
            return self.transformation.apply(record)
        return record

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        """The batch through this stage; the transformation's own batch path when unguarded."""
        if self.predicate is None:
            return self.transformation.apply_batch(records)
        test, apply, negate = self.predicate.test, self.transformation.apply, self.negate
        out = []
        for record in records:
            if bool(test(record)) is not negate:
                result = apply(record)
                if result is None:
                    continue
                record = result
            out.append(record)
        return out

    def close(self) -> None:
        for name, plugin in (("transformation", self.transformation), ("predicate", self.predicate)):
            if plugin is None:
                continue
            try:
                plugin.close()
            except Exception:
                logger.exception("Failed to close %s %s", name, plugin)

    def describe(self) -> str:
        """``'alias' (class)``, for messages."""
        return f"'{self.alias}' ({class_name(self.transform_class)})"

    def __repr__(self) -> str:
        return (f"TransformationStage{{alias={self.alias}, predicate={self.predicate!r}, "
                f"transformation={class_name(self.transform_class)}, negate={self.negate}}}")


def _configure(plugin: Any, configs: dict[str, Any], kind: PluginKind, alias: str, prefix: str,
               type_value: Any) -> None:
    """Configure a plugin; errors name the prefixed key (``transforms.<alias>.<key>``)."""
    try:
        plugin.configure(configs)
    except ConfigError as exc:
        text = str(exc)
        if exc.key:
            prefixed = prefix + exc.key
            shown = text.replace(f"configuration {exc.key}", f"configuration {prefixed}", 1)
            if shown == text:
                shown = f"Invalid configuration {prefixed}: {text}"
            raise ConfigError(shown, key=prefixed) from exc
        raise ConfigError(f"Invalid configuration for {kind.name.lower()} '{alias}' "
                          f"({prefix}type={type_value}): {text}", key=prefix + "type") from exc
    except Exception as exc:
        raise ConfigError(f"{kind.name} '{alias}' ({prefix}type={type_value}) failed to configure: "
                          f"{type(exc).__name__}: {exc}", key=prefix + "type") from exc


class TransformationChain(Generic[R]):
    """The ordered transformations of a connector (Kafka's ``TransformationChain``).

    Records go through every stage in order; a stage that returns None drops the record and
    the rest of the chain skips it. :meth:`apply_batch` runs the batch stage by stage so each
    transformation may use its batch path; the output equals applying :meth:`apply` to every
    record. Exceptions propagate (the runtime applies ``errors.tolerance``) with a note naming
    the stage. Not thread-safe: one chain per task.
    """

    def __init__(self, stages: Sequence[TransformationStage[R]] = ()) -> None:
        self.stages: tuple[TransformationStage[R], ...] = tuple(stages)

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> TransformationChain[Any]:
        """Validate, instantiate and configure the chain ``props`` describe.

        Raises ConfigError naming the key (``transforms.<alias>.<key>``), its value and, for an
        unknown class, the known ones. Unrelated connector keys are ignored.
        """
        parsed = enrich(ConfigDef(), props, require_full_config=True).parse(props)
        stages: list[TransformationStage[Any]] = []
        try:
            for alias in dict.fromkeys(parsed[TRANSFORMS_CONFIG]):
                stages.append(_stage(alias, props, parsed))
        except BaseException:
            for stage in stages:
                stage.close()
            raise
        return TransformationChain(stages)

    def apply(self, record: R) -> R | None:
        """``record`` through every stage; None if a stage dropped it."""
        for stage in self.stages:
            try:
                result = stage.apply(record)
            except Exception as exc:
                exc.add_note(f"in transformation {stage.describe()}")
                raise
            if result is None:
                return None
            record = result
        return record

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        """Every record through every stage, dropped ones left out, order kept."""
        out = list(records)
        for stage in self.stages:
            if not out:
                break
            try:
                out = stage.apply_batch(out)
            except Exception as exc:
                exc.add_note(f"in transformation {stage.describe()}")
                raise
        return out

    def close(self) -> None:
        for stage in self.stages:
            stage.close()

    def __enter__(self) -> TransformationChain[R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self.stages)

    def __repr__(self) -> str:
        return "TransformationChain{" + ", ".join(class_name(s.transform_class) for s in self.stages) + "}"


def _stage(alias: str, props: Mapping[str, Any], parsed: Mapping[str, Any]) -> TransformationStage[Any]:
    prefix = f"{TRANSFORMS_CONFIG}.{alias}."
    type_value = parsed[prefix + "type"]
    transformation = _instantiate(TRANSFORMATIONS, prefix + "type", type_value)
    configs = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
    configs.pop(PREDICATE_CONFIG, None)
    configs.pop(NEGATE_CONFIG, None)
    _configure(transformation, configs, TRANSFORMATIONS, alias, prefix, type_value)
    predicate_alias = parsed[prefix + PREDICATE_CONFIG]
    if predicate_alias is None:
        return TransformationStage(transformation, alias=alias)
    predicate_prefix = f"{PREDICATES_CONFIG}.{predicate_alias}."
    predicate_type = parsed[predicate_prefix + "type"]
    predicate = _instantiate(PREDICATES, predicate_prefix + "type", predicate_type)
    predicate_configs = {k[len(predicate_prefix):]: v for k, v in props.items()
                         if k.startswith(predicate_prefix)}
    _configure(predicate, predicate_configs, PREDICATES, predicate_alias, predicate_prefix, predicate_type)
    return TransformationStage(transformation, predicate, bool(parsed[prefix + NEGATE_CONFIG]), alias)
