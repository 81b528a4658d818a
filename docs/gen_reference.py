"""The reference pages of the docs site, generated from the code at every build: never edited by hand.

An MkDocs hook (``hooks:`` in mkdocs.yml): ``on_files`` adds the pages below to the site, so what a
page says is what the installed code defines. Like Kafka's ``ConfigDef.toHtml`` run by its docs
build, every key's type, default, valid values, importance and doc come from the ConfigDef the
code validates with, and plugins are found the way the REST API finds them (``kopycat.plugins``).

    reference/connectors.md   every connector's keys, and the keys every connector takes
    reference/converters.md   every converter's keys
    reference/transforms.md   every transformation's and predicate's keys
    reference/worker.md       worker.properties keys (Kafka's WorkerConfig / StandaloneConfig)
    reference/cli.md          ``kopycat <subcommand> --help`` of every subcommand
    reference/rest.md         the REST API from the app's OpenAPI document (and openapi.json beside it)
    reference/provider.md     the Airflow provider's hooks, operators, sensors, triggers, from docstrings
    reference/spi.md          the connector SPI, ``kopycat.api``, from its docstrings

``python docs/gen_reference.py DIR`` writes the same pages into DIR, to read them without a build.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kopycat.api.config import ConfigDef
from kopycat.api.config_types import default_for_docs
from kopycat.cli import build_parser
from kopycat.plugins import PluginDesc, list_plugins, plugin_class, plugin_config_def
from kopycat.rest.app import create_app
from kopycat.runtime.connector_config import SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG
from kopycat.runtime.worker_config import WORKER_CONFIG
from kopycat.storage.worker_storage_config import (
    FILE_OFFSET_STORE_CONFIG,
    KAFKA_CONFIG_STORE_CONFIG,
    KAFKA_OFFSET_STORE_CONFIG,
    KAFKA_STATUS_STORE_CONFIG,
)

ROOT = Path(__file__).resolve().parent.parent
PROVIDER_MODULES = ("hooks/kopycat.py", "operators/plan.py", "operators/copy.py", "operators/spark_export.py",
                    "sensors/connector.py", "triggers/connector.py", "task_group.py", "config_provider.py")
GENERATED = "This page is generated from the code at every docs build (`docs/gen_reference.py`): do not edit it."


def keys_table(definition: ConfigDef) -> str:
    """The keys in Kafka's docs order, each as its doc with type, default, valid values and
    importance beneath (Kafka's ``ConfigDef.toHtml`` layout): a six-column table is too wide for
    the page once docs run to a few sentences."""
    keys = [key for key in definition.sorted_keys() if not key.internal]
    if not keys:
        return "No keys of its own.\n"
    out = []
    for key in keys:
        facts = [f"Type: {key.type.name.lower()}",
                 f"Default: `{default_for_docs(key.name, key.default, key.type)}`" if key.has_default
                 else "Required"]
        if key.validator is not None:
            facts.append(f"Valid values: {escape_markdown(str(key.validator))}")
        facts.append(f"Importance: {key.importance.name.lower()}")
        doc = escape_markdown(key.documentation.strip()).replace("\n", "\n    ")
        out.append(f"`{key.name}`\n:   {doc}\n\n    <small>{' · '.join(facts)}</small>\n")
    return "\n".join(out)


def escape_markdown(text: str) -> str:
    """Plain text as Markdown shows it: ``connect-<name>`` is no HTML tag, ``producer.*`` no
    emphasis. Code spans and indented code blocks are left as they are."""
    text = re.sub(r"<code>(.*?)</code>", r"`\1`", text)  # Kafka's validator texts carry HTML code tags
    lines = []
    for line in text.split("\n"):
        if not line.startswith("    "):
            parts = re.split(r"(`+[^`]*`+)", line)
            line = "".join(part if i % 2 else part.replace("&", "&amp;").replace("<", "&lt;").replace(
                ">", "&gt;").replace("*", "\\*") for i, part in enumerate(parts))
        lines.append(line)
    return "\n".join(lines)


def rst_to_markdown(text: str) -> str:
    """Docstrings are written for Sphinx: turn its roles, literals and fields into Markdown."""
    text = escape_markdown(text)
    text = re.sub(r":(?:class|func|meth|mod|attr|data|exc|obj):`~?([^`]+)`",
                  lambda m: f"`{m.group(1).rsplit('.', 1)[-1] if '~' in m.group(0) else m.group(1)}`", text)
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    text = re.sub(r"^:param (\w+):", r"- **`\1`**:", text, flags=re.MULTILINE)
    text = re.sub(r"^:(returns?|raises \w+):", lambda m: f"- *{m.group(1)}*:", text, flags=re.MULTILINE)
    return re.sub(r"^::$|::$", ":", text, flags=re.MULTILINE)


def plugin_summary(plugin: PluginDesc) -> str:
    """The first paragraph of the plugin class's docstring."""
    cls = plugin_class(plugin)
    doc = (cls.__doc__ or "").strip()
    first = doc.split("\n\n", 1)[0]
    return rst_to_markdown(" ".join(line.strip() for line in first.splitlines()))


def plugin_sections(kinds: tuple[str, ...], skip: frozenset[str] = frozenset()) -> Iterator[str]:
    for plugin in list_plugins():
        if plugin.type not in kinds or plugin.class_name in skip:
            continue
        yield (f"## {plugin.class_name.rsplit('.', 1)[-1]}\n\n`{plugin.class_name}`, *{plugin.type}*. "
               f"{plugin_summary(plugin)}\n\n")
        yield keys_table(plugin_config_def(plugin)) + "\n"


def connectors_page() -> str:
    return "".join([
        "# Connector keys\n\n", GENERATED, "\n\n",
        "Each connector takes the keys every connector takes (below, Kafka's `ConnectorConfig`), then its own. "
        "`kopycat validate` and `PUT /connector-plugins/{plugin}/config/validate` check them all.\n\n",
        "## Every source connector\n\n", keys_table(SOURCE_CONNECTOR_CONFIG), "\n",
        "## Every sink connector\n\n", keys_table(SINK_CONNECTOR_CONFIG), "\n",
        *plugin_sections(("source", "sink")),
    ])


def converters_page() -> str:
    converters = frozenset(p.class_name for p in list_plugins() if p.type == "converter")
    return "".join([
        "# Converter keys\n\n", GENERATED, "\n\n",
        "Given with the converter's prefix: `value.converter.schemas.enable=false` in a worker or connector "
        "config configures the value converter.\n\n",
        *plugin_sections(("converter",)),
        *plugin_sections(("header_converter",), skip=converters),  # header-only: SimpleHeaderConverter
    ])


def transforms_page() -> str:
    return "".join([
        "# Transformation and predicate keys\n\n", GENERATED, "\n\n",
        "Given as `transforms.<alias>.<key>` and `predicates.<alias>.<key>` in a connector config, as in "
        "Kafka Connect.\n\n",
        *plugin_sections(("transformation", "predicate")),
    ])


def worker_page() -> str:
    return "".join([
        "# Worker keys\n\n", GENERATED, "\n\n",
        "The keys of `worker.properties` (Kafka's `WorkerConfig`). Client settings pass through with their "
        "prefixes (`producer.*`, `consumer.*`, `admin.*`), converter settings with theirs.\n\n",
        "## Every worker\n\n", keys_table(WORKER_CONFIG), "\n",
        "## Offsets in a file (`kopycat standalone`)\n\n", keys_table(FILE_OFFSET_STORE_CONFIG), "\n",
        "## Offsets on a topic\n\n", keys_table(KAFKA_OFFSET_STORE_CONFIG), "\n",
        "## Connector configs on a topic (`kopycat rest`, `kopycat worker`)\n\n",
        keys_table(KAFKA_CONFIG_STORE_CONFIG), "\n",
        "## Statuses on a topic\n\n", keys_table(KAFKA_STATUS_STORE_CONFIG),
    ])


def command_help(path: list[str]) -> str:
    """What ``kopycat <path> --help`` prints (argparse's public way to render a subcommand)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser().parse_args([*path, "--help"])
    return out.getvalue()


def subcommands(help_text: str) -> list[str]:
    """The subcommand names of a usage line: ``kopycat [-h] {standalone,run,...} ...``."""
    usage = help_text.split("\n\n", 1)[0]
    found = re.search(r"\{([\w,-]+)\} \.\.\.", usage)
    return found.group(1).split(",") if found else []


def cli_page() -> str:
    os.environ["COLUMNS"] = "90"  # argparse wraps to the terminal: the same width on every build
    parts = ["# Command line\n\n", GENERATED, "\n\n"]

    def walk(path: list[str]) -> None:
        text = command_help(path)
        parts.append(f"## `kopycat{''.join(' ' + p for p in path)}`\n\n```text\n{text.rstrip()}\n```\n\n")
        for name in subcommands(text):
            walk([*path, name])

    walk([])
    return "".join(parts)


def openapi_document() -> dict[str, Any]:
    """The REST app's OpenAPI document. Routes are declared without calling the herder, so none is given."""
    return create_app(None).openapi()  # type: ignore[arg-type]


def rest_page(spec: dict[str, Any]) -> str:
    parts = ["# REST API\n\n", GENERATED, "\n\n", escape_markdown(spec["info"].get("description", "")), "\n\n",
             "The machine-readable document: [openapi.json](openapi.json) (served by the API at "
             "`/openapi.json`).\n\n"]
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            parts.append(f"## `{method.upper()} {path}`\n\n{escape_markdown(operation.get('summary', ''))}\n\n")
            if operation.get("description"):
                parts.append(rst_to_markdown(operation["description"]) + "\n\n")
            params = operation.get("parameters", [])
            if params:
                parts.append("| Parameter | In | Required | Type |\n|---|---|---|---|\n")
                parts.extend(f"| `{p['name']}` | {p['in']} | {'yes' if p.get('required') else 'no'} | "
                             f"{p.get('schema', {}).get('type', '')} |\n" for p in params)
                parts.append("\n")
            codes = ", ".join(f"`{code}` {r.get('description', '')}" for code, r in operation["responses"].items())
            parts.append(f"Responses: {codes}.\n\n")
    return "".join(parts)


def docstring_sections(module: Path) -> Iterator[str]:
    """The classes and functions a provider module exports (``__all__``), read with ``ast``: the page
    builds without importing Airflow."""
    tree = ast.parse(module.read_text())
    exported = next((ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)), None)
    for node in tree.body:
        if not isinstance(node, ast.ClassDef | ast.FunctionDef) or node.name.startswith("_"):
            continue
        if exported is not None and node.name not in exported:
            continue
        doc = ast.get_docstring(node) or ""
        if isinstance(node, ast.ClassDef):
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            if init is not None and ast.get_docstring(init):
                doc += "\n\n" + (ast.get_docstring(init) or "")
        kind = "class" if isinstance(node, ast.ClassDef) else "function"
        yield f"### `{node.name}`\n\n*{kind}*\n\n{rst_to_markdown(doc)}\n\n"


def provider_page() -> str:
    base = ROOT / "provider" / "kopycat_airflow"
    parts = ["# Airflow provider\n\n", GENERATED, "\n\n"]
    for name in PROVIDER_MODULES:
        dotted = "kopycat_airflow." + name.removesuffix(".py").replace("/", ".")
        parts.append(f"## `{dotted}`\n\n")
        module_doc = ast.get_docstring(ast.parse((base / name).read_text())) or ""
        parts.append(rst_to_markdown(module_doc) + "\n\n")
        parts.extend(docstring_sections(base / name))
    return "".join(parts)


def api_member(name: str, obj: Any) -> str:
    """One name of ``kopycat.api``: its signature and docstring, with a class's own public methods."""
    doc = rst_to_markdown(inspect.getdoc(obj) or "")
    if not inspect.isclass(obj):
        return f"### {name}\n\n```python\n{name}{signature(obj)}\n```\n\n{doc}\n\n"
    parts = [f"### {name}\n\n```python\nclass {name}({', '.join(b.__name__ for b in obj.__bases__)})\n```\n\n"
             f"{doc}\n\n"]
    for attr, member in vars(obj).items():
        function = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        if attr.startswith("_") or not inspect.isfunction(function) or not function.__doc__:
            continue
        method_doc = rst_to_markdown(inspect.getdoc(function) or "").replace("\n", "\n    ")
        parts.append(f"- `{attr}{signature(function)}`\n\n    {method_doc}\n\n")
    return "".join(parts)


def signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def spi_page() -> str:
    """``kopycat.api``, what a connector imports, grouped by the module that defines each name."""
    import kopycat.api as api

    by_module: dict[str, list[str]] = {}
    for name in api.__all__:
        obj = getattr(api, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            by_module.setdefault(obj.__module__, []).append(name)
    parts = ["# Connector SPI (`kopycat.api`)\n\n", GENERATED, "\n\n",
             "Everything a connector, converter or transformation imports, from `kopycat.api` (Kafka's "
             "connect/api). See [Connector authors](../connector-authors.md) for how the pieces fit.\n\n"]
    first = [f"kopycat.api.{name}" for name in ("connector", "task", "records", "record_batch", "bounded", "errors")]
    for module in sorted(by_module, key=lambda m: (first.index(m) if m in first else len(first), m)):
        parts.append(f"## `{module}`\n\n{rst_to_markdown(inspect.getdoc(sys.modules[module]) or '')}\n\n")
        parts.extend(api_member(name, getattr(api, name)) for name in by_module[module])
    return "".join(parts)


def pages() -> dict[str, str]:
    """Every generated file of the site: path under docs/ -> content."""
    spec = openapi_document()
    return {
        "reference/connectors.md": connectors_page(),
        "reference/converters.md": converters_page(),
        "reference/transforms.md": transforms_page(),
        "reference/worker.md": worker_page(),
        "reference/cli.md": cli_page(),
        "reference/rest.md": rest_page(spec),
        "reference/openapi.json": json.dumps(spec, indent=2) + "\n",
        "reference/provider.md": provider_page(),
        "reference/spi.md": spi_page(),
    }


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated pages to the site being built."""
    from mkdocs.structure.files import File

    for path, content in pages().items():
        files.append(File.generated(config, path, content=content))
    return files


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "generated-docs")
    for path, content in pages().items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_text(content)
        print(target / path)
