"""The rules both sides share: what a plugin declares and how it is read
(spec: fengyu-manifest.md, fengyu-worker.md, erp.md).

The conformance kit checks these rules and the reference host applies them, so they live
here, below both, with nothing but the standard library (schema_refs aside, which leaves
resolving refs to `referencing`): neither side can drift from the other, and neither imports
the other to learn a rule.

PYTEST_DONT_REWRITE: the rules report through return values, not assert statements.
"""
