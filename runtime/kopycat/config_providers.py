"""The built-in config providers: ``${file:..}``, ``${env:..}``, ``${directory:..}`` (KIP-297).

Follow Kafka's ``FileConfigProvider``, ``EnvVarConfigProvider`` and ``DirectoryConfigProvider``
(org.apache.kafka.common.config.provider), with their parameters ``allowed.paths`` (Kafka's
``AllowedPaths``) and ``allowlist.pattern``, and answer to Kafka's class names
(:func:`kopycat.plugins.config_provider_class`), so a worker.properties written for Kafka Connect
resolves the same placeholders here:

    ${file:/etc/kopycat/db.properties:password}    a key of a Java .properties file
    ${env:PG_PASSWORD}                              an environment variable (no path)
    ${directory:/run/secrets:pg_password}           the content of a file in a directory

One deliberate difference: where Kafka logs a warning and keeps the placeholder for a path
outside ``allowed.paths`` or a variable outside ``allowlist.pattern``, these raise ConfigError
naming the parameter to change. A kept placeholder would otherwise reach the database or broker
as a literal password, failing far from its cause.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Set
from pathlib import Path
from typing import ClassVar

from kopycat.api.config_provider import ConfigData, ConfigProvider
from kopycat.api.errors import ConfigError
from kopycat.properties import parse_properties

__all__ = [
    "ALLOWED_PATHS_CONFIG", "ALLOWLIST_PATTERN_CONFIG", "AllowedPaths", "DirectoryConfigProvider",
    "EnvVarConfigProvider", "FileConfigProvider", "PathConfigProvider",
]

log = logging.getLogger(__name__)

ALLOWED_PATHS_CONFIG = "allowed.paths"
"""Kafka's ``AllowedPaths.ALLOWED_PATHS_CONFIG``: comma-separated absolute paths a provider may read."""
ALLOWLIST_PATTERN_CONFIG = "allowlist.pattern"
"""Kafka's ``EnvVarConfigProviderConfig``: a regex the environment variable's name must match."""


class AllowedPaths:
    """The directories a file or directory provider may read (Kafka's ``AllowedPaths``).

    ``allowed.paths`` unset: every path is allowed. Set: each entry must be an existing absolute
    path, and a path is allowed when, normalised, it lies under one of them.
    """

    def __init__(self, provider: str, value: str | None) -> None:
        self.provider = provider
        self.roots: list[Path] | None = None
        if not value:
            return
        self.roots = []
        for entry in (part.strip() for part in value.split(",")):
            root = Path(os.path.normpath(entry))
            if not (root.is_absolute() and root.exists()):
                raise ConfigError(f"Path {entry} in config.providers.{provider}.param.{ALLOWED_PATHS_CONFIG} "
                                  f"is not valid: each path must be absolute and exist",
                                  key=f"config.providers.{provider}.param.{ALLOWED_PATHS_CONFIG}")
            self.roots.append(root)

    def check(self, path: str) -> Path:
        """``path`` normalised, or ConfigError naming the parameter that would allow it."""
        normalised = Path(os.path.normpath(path))
        if self.roots is None or any(normalised.is_relative_to(root) for root in self.roots):
            return normalised
        key = f"config.providers.{self.provider}.param.{ALLOWED_PATHS_CONFIG}"
        raise ConfigError(f"The path {path} is not allowed to be read by config provider '{self.provider}': "
                          f"it is outside {key}={','.join(map(str, self.roots))}; add its directory to {key} "
                          f"or move the secret under an allowed path", key=key)


class PathConfigProvider(ConfigProvider):
    """A provider that reads the file system, confined to its ``allowed.paths`` parameter.

    Kafka's ``FileConfigProvider`` and ``DirectoryConfigProvider`` configure ``AllowedPaths`` alike;
    a subclass names itself with ``default_name`` (overridden by the ``provider.name`` parameter,
    which error messages use) and implements ``get``.
    """

    default_name: ClassVar[str]

    def __init__(self) -> None:
        self.name = self.default_name
        self.allowed = AllowedPaths(self.name, None)

    def configure(self, params: Mapping[str, str]) -> None:
        self.name = params.get("provider.name", self.name)
        self.allowed = AllowedPaths(self.name, params.get(ALLOWED_PATHS_CONFIG))


class FileConfigProvider(PathConfigProvider):
    """``${file:<path>:<key>}``: a key of a Java ``.properties`` file (Kafka's ``FileConfigProvider``).

    A missing key is left out (the placeholder stays, as in Kafka); a file that cannot be read
    is a ConfigError naming the file.
    """

    default_name = "file"

    def get(self, path: str, keys: Set[str]) -> ConfigData:
        if not path:
            return ConfigData({})
        file = self.allowed.check(path)
        try:
            properties = parse_properties(file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"Could not read properties from file {path} for config provider '{self.name}' "
                              f"({exc.strerror or type(exc).__name__}): check the path in the ${{{self.name}:...}} "
                              f"placeholder and that the worker may read it") from None
        return ConfigData({key: properties[key] for key in keys if key in properties})


class DirectoryConfigProvider(PathConfigProvider):
    """``${directory:<dir>:<file>}``: a file's content, as Kubernetes and Docker mount secrets
    (Kafka's ``DirectoryConfigProvider``). Only regular files directly in ``<dir>`` count; the
    content is taken whole, trailing newline included, as Kafka does."""

    default_name = "directory"

    def get(self, path: str, keys: Set[str]) -> ConfigData:
        if not path:
            return ConfigData({})
        directory = self.allowed.check(path)
        if not directory.is_dir():
            log.warning("Config provider '%s': the path %s is not a directory", self.name, path)
            return ConfigData({})
        data = {}
        for key in keys:
            file = directory / key
            if file.parent != directory or not file.is_file():
                continue
            try:
                data[key] = file.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"Could not read file {file} for property {key} of config provider "
                                  f"'{self.name}' ({exc.strerror or type(exc).__name__})") from None
        return ConfigData(data)


class EnvVarConfigProvider(ConfigProvider):
    """``${env:<VARIABLE>}``: an environment variable (Kafka's ``EnvVarConfigProvider``).

    ``allowlist.pattern`` (a regex found anywhere in the name, as Kafka's ``Pattern.asPredicate``:
    anchor it with ``^...$``; default every variable) limits which variables may be read. A path
    is an error, as in Kafka.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.name = "env"
        self.environ = os.environ if environ is None else environ
        self.pattern: re.Pattern[str] | None = None

    def configure(self, params: Mapping[str, str]) -> None:
        self.name = params.get("provider.name", self.name)
        pattern = params.get(ALLOWLIST_PATTERN_CONFIG)
        if pattern is None:
            return
        try:
            self.pattern = re.compile(pattern)
        except re.error as exc:
            raise ConfigError.for_key(f"config.providers.{self.name}.param.{ALLOWLIST_PATTERN_CONFIG}", pattern,
                                      f"not a regular expression ({exc})") from None

    def get(self, path: str, keys: Set[str]) -> ConfigData:
        if path:
            raise ConfigError(f"Path is not supported for config provider '{self.name}' (environment variables), "
                              f"invalid value '{path}': write ${{{self.name}:VARIABLE}}")
        data = {}
        for key in keys:
            if self.pattern is not None and not self.pattern.search(key):
                param = f"config.providers.{self.name}.param.{ALLOWLIST_PATTERN_CONFIG}"
                raise ConfigError(f"Environment variable {key} may not be read by config provider '{self.name}': "
                                  f"it does not match {param}={self.pattern.pattern}; widen the pattern or "
                                  f"use an allowed variable", key=param)
            if key in self.environ:
                data[key] = self.environ[key]
        return ConfigData(data)
