"""The host's check of a tool's arguments against its method's inputSchema before the worker is
called, as FengYu's host does (spec: host.md#arguments-and-the-handshake): a model's
malformed arguments get a failure naming the spot, and the worker only ever sees input its
schema admits. A FileRef stands wherever the schema expects a string, since the host turns it
into a path string before the call."""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from plugin_spec.filerefs import resolve_refs
from plugin_spec.json_types import JsonMapping, ReadOnlyJson
from plugin_spec.schema_refs import DOCUMENT_ONLY, ExternalRef, external_refs
from plugin_spec.schema_subset import to_json_schema

RULE_CHARS = 200  # of a rule's expected value shown in a failure
SUBSET_REQUIREMENT = "FY-MAN-011"  # the manifest subset, which has no $ref


class InputContract:
    """One method's inputSchema, compiled once, judging the arguments of each call."""

    def __init__(self, method: str, input_schema: JsonMapping) -> None:
        self.method = method
        self._schema = input_schema
        self._validator: Draft202012Validator | None = None

    def problem(self, arguments: ReadOnlyJson) -> str | None:
        """What is wrong with arguments, with its JSON pointer; None when they are valid. A
        schema that cannot be evaluated (a plugin installed without the kit's checks: a
        $ref to a file or URL, a type that does not exist) refuses every call, saying so;
        refs resolve inside the schema only, so no file or URL it names is ever opened."""
        as_sent = resolve_refs(arguments, lambda ref: str(ref["id"]))
        try:
            if self._validator is None:
                self._validator = self._compiled()
            error = best_match(self._validator.iter_errors(as_sent))
        except RefOutsideSchema as exc:
            return f"the inputSchema of {self.method} cannot be evaluated: {exc}"
        except Exception as exc:  # whatever the schema holds, the model gets a failure
            return f"the inputSchema of {self.method} cannot be evaluated: {type(exc).__name__}"
        if error is None:
            return None
        where = "".join(f"/{part}" for part in error.absolute_path) or "/"
        return (
            f"the arguments do not match the inputSchema of {self.method} at {where}: "
            f"{_rule(error)}"
        )

    def _compiled(self) -> Draft202012Validator:
        schema = to_json_schema(dict(self._schema))
        if external := external_refs(schema):
            raise RefOutsideSchema(external[0])
        return Draft202012Validator(schema, registry=DOCUMENT_ONLY)


class RefOutsideSchema(Exception):
    """The schema names a file or URL with a ref: refused before any validator reads it."""

    def __init__(self, ref: ExternalRef) -> None:
        super().__init__(f"{ref.describe()} ({SUBSET_REQUIREMENT})")


# Messages that name properties (from the schema, or keys of the arguments), never a value.
NAMING_VALIDATORS = frozenset({"required", "additionalProperties", "dependentRequired"})


def _rule(error: ValidationError) -> str:
    """What the arguments break, without quoting the value found: it may be a secret
    (x-fengyu-sensitive), and the failure goes to the model, the stream and the store."""
    if error.validator in NAMING_VALIDATORS:
        return error.message
    expected = json.dumps(error.validator_value, ensure_ascii=False, default=str)
    if len(expected) > RULE_CHARS:
        expected = f"{expected[:RULE_CHARS]}..."
    return f"the value breaks {error.validator} {expected}"
