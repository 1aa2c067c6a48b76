"""A plugin schema's `$ref`s resolve inside that schema only (spec:
fengyu-manifest.md#references-stay-inside-the-schema).

A schema is the plugin's data. jsonschema, left to itself, retrieves any URI a `$ref` names
(a `file:` URL is read, an `http:` one fetched), so checking a plugin's arguments or
generating its inputs would read the checker's files or call its network for the plugin.
The kit and the host resolve refs through DOCUMENT_ONLY, whose retrieval refuses every URI:
`#/...` pointers, anchors and subschemas the document names with `$id` resolve, nothing
else. external_refs finds the refs that would need a retrieval, so that they are refused
with their place before any library (hypothesis-jsonschema has a resolver of its own) sees
the schema.

The one module of plugin_spec on a library besides the standard one: resolving refs is
`referencing`'s job, which the kit and the host both install with jsonschema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from referencing import Registry
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012, Schema, SchemaRegistry, SchemaResource

from plugin_spec.json_types import ReadOnlyJson

if TYPE_CHECKING:
    from referencing._core import Resolver  # referencing exports the class from _core only

# The keywords of 2020-12 (and 2019-09's $recursiveRef) that a validator resolves.
REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
SHOWN_CHARS = 120  # of a ref quoted in a message


def refuse_retrieval(uri: str) -> SchemaResource:
    """The registry's retrieval: a URI the document does not hold is never opened."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # (attrs fields, unseen by mypy)


# What every validator of a plugin schema resolves refs with (jsonschema adds the root).
DOCUMENT_ONLY: SchemaRegistry = Registry(retrieve=refuse_retrieval)  # type: ignore[call-arg]  # (attrs fields)


@dataclass(frozen=True)
class ExternalRef:
    """One ref naming something outside its schema: where it is and what it names."""

    pointer: str  # of the ref keyword, from the schema's root
    keyword: str
    ref: str

    def describe(self, at: str = "") -> str:
        """The ref and its place (at prefixes the pointer: where the schema sits in its file)."""
        shown = self.ref if len(self.ref) <= SHOWN_CHARS else f"{self.ref[:SHOWN_CHARS]}..."
        return (
            f"{at}{self.pointer}: {self.keyword} {shown!r} names something outside the schema; "
            "refs are resolved inside the schema only, and no file or URL a schema names is "
            "opened"
        )


def external_refs(schema: ReadOnlyJson) -> list[ExternalRef]:
    """Every ref in schema (read as JSON Schema 2020-12) that no part of it resolves.

    Only schema positions are searched, as a validator reads them: a `$ref` key inside an
    enum value or a default is data. A ref that resolves into the document but finds nothing
    there (a pointer to a missing key) is not external: no retrieval is asked for. schema
    must be a valid JSON Schema (check_schema); `referencing` cannot walk every malformed one
    and raises what it raises.
    """
    if not isinstance(schema, dict):
        return []
    root = DRAFT202012.create_resource(schema)
    places = _pointers(schema)
    found: list[ExternalRef] = []

    def visit(resource: SchemaResource, resolver: Resolver[Schema]) -> None:
        contents = resource.contents
        if isinstance(contents, dict):
            for keyword in REF_KEYWORDS:
                ref = contents.get(keyword)
                if isinstance(ref, str) and _needs_retrieval(resolver, ref):
                    at = places.get(id(contents), "")
                    found.append(ExternalRef(f"{at}/{keyword}", keyword, ref))
        for sub in resource.subresources():
            visit(sub, resolver.in_subresource(sub))

    visit(root, DOCUMENT_ONLY.resolver_with_root(root))
    return found


def _needs_retrieval(resolver: Resolver[Schema], ref: str) -> bool:
    """Whether resolving ref asked DOCUMENT_ONLY to retrieve a URI (refused, so Unresolvable
    itself; its subclasses say the URI is in the document but the fragment is not)."""
    try:
        resolver.lookup(ref)
    except Unresolvable as exc:
        return type(exc) is Unresolvable
    except Exception:  # e.g. a pointer into an array by name: inside, and only malformed
        return False
    return False


def _pointers(document: ReadOnlyJson) -> dict[int, str]:
    """The JSON pointer of every object in document, by identity: referencing hands out the
    document's own objects as subresources but not where they sit."""
    places: dict[int, str] = {}
    pending: list[tuple[ReadOnlyJson, str]] = [(document, "")]
    while pending:
        node, at = pending.pop()
        if isinstance(node, dict):
            places.setdefault(id(node), at)
            pending.extend((value, f"{at}/{_token(str(key))}") for key, value in node.items())
        elif isinstance(node, list):
            pending.extend((value, f"{at}/{index}") for index, value in enumerate(node))
    return places


def _token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
